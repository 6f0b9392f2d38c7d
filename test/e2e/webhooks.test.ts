/**
 * Job webhooks end to end, under `wrangler dev` with the real Queue: a receiver on 127.0.0.1
 * (ALLOW_PRIVATE_URLS=true lets http reach loopback) answers 500 to the first attempt and 200
 * after; the delivery is retried (WEBHOOK_RETRY_SCHEDULE "1,2" in test/e2e/setup.ts), the
 * receiver verifies the Standard Webhooks signature with the secret GET /api/v1/account/webhook
 * shows, and the delivery log lists both attempts. A job that fails sends job.failed.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type Server } from "node:http";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { eventually } from "../helpers/eventually";
import { FIXTURES, newClient, runTool, upload, type Client } from "./client";

interface Received {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  verified: boolean;
}

let server: Server;
let receiverBase = "";
const received: Received[] = [];
/** Secret per receiving path, set by each test before its job runs. */
const secrets = new Map<string, string>();

/** The receiver's check, written from the Standard Webhooks spec. */
function verify(secret: string, headers: Received["headers"], body: string): boolean {
  const id = String(headers["webhook-id"] ?? "");
  const timestamp = String(headers["webhook-timestamp"] ?? "");
  if (!id || Math.abs(Date.now() / 1000 - Number(timestamp)) > 300) return false;
  const expected = createHmac("sha256", Buffer.from(secret.slice("whsec_".length), "base64"))
    .update(`${id}.${timestamp}.${body}`)
    .digest();
  return String(headers["webhook-signature"] ?? "")
    .split(" ")
    .some((entry) => {
      const given = Buffer.from(entry.replace(/^v1,/, ""), "base64");
      return entry.startsWith("v1,") && given.length === expected.length && timingSafeEqual(given, expected);
    });
}

beforeAll(async () => {
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const pathname = request.url ?? "";
      const verified = verify(secrets.get(pathname) ?? "whsec_", request.headers, body);
      received.push({ path: pathname, headers: request.headers, body, verified });
      // The first attempt to each path fails, the next ones succeed.
      const first = received.filter((r) => r.path === pathname).length === 1;
      response.writeHead(first ? 500 : 200, { "content-type": "text/plain" });
      response.end(first ? "try again" : "ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  receiverBase = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

async function secretOf(client: Client): Promise<string> {
  const response = await fetch(`${client.base}/api/v1/account/webhook`, { headers: client.auth });
  expect(response.status).toBe(200);
  return ((await response.json()) as { secret: string }).secret;
}

interface Log {
  deliveries: {
    id: string;
    event: string;
    status: string;
    attempts: { attempt: number; responseStatus: number | null; error: string | null }[];
  }[];
}

async function logOnceDelivered(client: Client, jobId: string, timeoutMs = 30_000): Promise<Log> {
  return eventually(
    async () =>
      (await (await fetch(`${client.base}/api/v1/jobs/${jobId}/webhooks`, { headers: client.auth })).json()) as Log,
    (log) => log.deliveries[0]?.status === "delivered",
    { timeoutMs, intervalMs: 300, what: `job ${jobId}'s webhook delivered` },
  );
}

async function jobIdOf(client: Client, tool: string, body: unknown): Promise<string> {
  const response = await fetch(`${client.base}/api/v1/${tool}`, {
    method: "POST",
    headers: { ...client.auth, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const envelope = (await response.json()) as { jobId: string };
  expect(response.status, JSON.stringify(envelope)).toBe(200);
  return envelope.jobId;
}

describe("job webhooks", () => {
  it("retries a 500, delivers a verifiable job.completed and logs both attempts", async () => {
    const client = await newClient(inject("e2eMainUrl"));
    secrets.set("/completed", await secretOf(client));
    const clip = await upload(client, path.join(FIXTURES, "clip.mp4"));
    const webhookUrl = `${receiverBase}/completed`;
    const job = await runTool(client, "extract-audio", { uploadId: clip.uploadId, webhookUrl });
    expect(job.status).toBe("completed");

    const attempts = await eventually(
      () => received.filter((r) => r.path === "/completed"),
      (found) => found.length >= 2,
      { timeoutMs: 30_000, intervalMs: 200, what: "two attempts at /completed" },
    );
    expect(attempts).toHaveLength(2);
    expect(attempts.every((a) => a.verified)).toBe(true);
    expect(attempts[0].headers["webhook-id"]).toBe(attempts[1].headers["webhook-id"]);
    expect(attempts[0].body).toBe(attempts[1].body);
    const payload = JSON.parse(attempts[1].body) as {
      type: string;
      timestamp: string;
      data: { jobId: string; status: string; result?: { url: string } };
    };
    expect(payload.type).toBe("job.completed");
    const status = await (
      await fetch(`${client.base}/api/v1/jobs/${payload.data.jobId}`, { headers: client.auth })
    ).json();
    expect(payload.data).toEqual(status);
    expect(payload.data.result?.url).toMatch(/^\/api\/download\//);

    const log = await logOnceDelivered(client, payload.data.jobId);
    expect(log.deliveries).toHaveLength(1);
    expect(log.deliveries[0]).toMatchObject({
      event: "job.completed",
      status: "delivered",
      id: attempts[0].headers["webhook-id"],
    });
    expect(log.deliveries[0].attempts.map((a) => [a.attempt, a.responseStatus])).toEqual([
      [1, 500],
      [2, 200],
    ]);
  });

  it("sends job.failed for a job that fails (backend unreachable), from the account's default URL", async () => {
    const client = await newClient(inject("e2eNoBackendUrl"));
    secrets.set("/failed", await secretOf(client));
    const set = await fetch(`${client.base}/api/v1/account/webhook`, {
      method: "PUT",
      headers: { ...client.auth, "content-type": "application/json" },
      body: JSON.stringify({ url: `${receiverBase}/failed` }),
    });
    expect(set.status, await set.clone().text()).toBe(200);
    const clip = await upload(client, path.join(FIXTURES, "clip.mp4"));
    // A video re-encode goes to the (unreachable) backend: the job fails and is refunded.
    const jobId = await jobIdOf(client, "convert", { uploadId: clip.uploadId, format: "webm" });
    const log = await logOnceDelivered(client, jobId, 60_000);
    expect(log.deliveries).toHaveLength(1);
    expect(log.deliveries[0]).toMatchObject({ event: "job.failed", status: "delivered" });
    const attempts = received.filter((r) => r.path === "/failed");
    expect(attempts.length).toBe(2);
    expect(attempts.every((a) => a.verified)).toBe(true);
    const payload = JSON.parse(attempts[1].body) as {
      type: string;
      data: { jobId: string; status: string; error: string };
    };
    expect(payload).toMatchObject({ type: "job.failed", data: { jobId, status: "failed" } });
    expect(payload.data.error).toMatch(/refunded/);
  });
});
