/**
 * Job webhooks: Standard Webhooks signatures checked by a reference verifier written here from
 * the spec (node:crypto, not the service's code), the account settings (secret derived, never
 * stored; rotation), call-time refusals of webhookUrl (loopback forms only) that charge
 * nothing, the outbox row written once with the terminal state, retries and the delivery log.
 * Addresses used: loopback literals, names the fixture DNS maps to loopback, and `.test` names
 * that do not resolve; nothing reaches a private or public address.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, inject, it, vi } from "vitest";
import type { Env } from "../../src/env";
import { newId } from "../../src/lib/ids";
import { accountWebhookSecret, signWebhook } from "../../src/services/webhooks/signing";
import { attemptDelivery, consumeWebhookBatch } from "../../src/services/webhooks/delivery";
import { type WebhookMessage } from "../../src/services/webhooks/outbox";
import {
  balanceOf,
  call,
  callTool,
  expectError,
  expectLedgerConsistent,
  newAccount,
  uploadFixture,
  waitForJob,
  type TestAccount,
} from "../helpers/api";
import { eventually } from "../helpers/eventually";

/** Standard Webhooks verification, from the spec: v1 = base64(HMAC-SHA256(base64-decoded secret, "id.ts.body")). */
function verifyStandardWebhook(
  secret: string,
  headers: Headers,
  body: string,
  nowSeconds: number,
  toleranceSeconds = 300,
): boolean {
  const id = headers.get("webhook-id");
  const timestamp = headers.get("webhook-timestamp");
  const signatures = headers.get("webhook-signature");
  if (!id || !timestamp || !signatures) return false;
  if (Math.abs(nowSeconds - Number(timestamp)) > toleranceSeconds) return false;
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const expected = createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest();
  return signatures.split(" ").some((entry) => {
    const [version, signature] = entry.split(",");
    const given = Buffer.from(signature ?? "", "base64");
    return version === "v1" && given.length === expected.length && timingSafeEqual(given, expected);
  });
}

const json = (account: TestAccount, method: string, path: string, body?: unknown) =>
  call(path, {
    method,
    headers: { ...account.auth, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

async function settings(account: TestAccount) {
  const response = await json(account, "GET", "/api/v1/account/webhook");
  expect(response.status).toBe(200);
  return (await response.json()) as { url: string | null; secret: string; secretVersion: number };
}

interface Log {
  jobId: string;
  deliveries: {
    id: string;
    event: string;
    url: string;
    status: string;
    nextAttemptAt: string | null;
    attempts: { attempt: number; responseStatus: number | null; error: string | null; durationMs: number }[];
  }[];
}

afterEach(() => vi.restoreAllMocks());

/** A fresh account's completed job with a pending job.completed delivery to `url`, held by `token`. */
async function pendingDelivery(url: string, token: string) {
  const account = await newAccount({ credits: 100 });
  const clip = await uploadFixture(account, "clip.mp4");
  const started = (await (await callTool(account, "extract-audio", { uploadId: clip.uploadId })).json()) as {
    jobId: string;
  };
  expect((await waitForJob(account, started.jobId)).status).toBe("completed");
  const id = newId("msg");
  const now = Date.now();
  await env.DB.prepare(
    `INSERT INTO job_webhooks (id, job_id, account_id, event, url, status, attempts, token, next_attempt_at, created_at)
     VALUES (?, ?, ?, 'job.completed', ?, 'pending', 0, ?, ?, ?)`,
  )
    .bind(id, started.jobId, account.accountId, url, token, now, now)
    .run();
  return { account, started, id };
}
describe("signatures", () => {
  it("signs as Standard Webhooks: the reference verifier accepts it, a changed body or secret does not", async () => {
    const secret = `whsec_${Buffer.from("a test secret of 32 bytes length").toString("base64")}`;
    const body = JSON.stringify({ type: "job.completed", data: { jobId: "job_x" } });
    const now = Math.floor(Date.now() / 1000);
    const headers = new Headers(await signWebhook(secret, "msg_1", now, body));
    expect(headers.get("webhook-signature")).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(verifyStandardWebhook(secret, headers, body, now)).toBe(true);
    expect(verifyStandardWebhook(secret, headers, `${body} `, now)).toBe(false);
    expect(verifyStandardWebhook(`whsec_${Buffer.from("another secret").toString("base64")}`, headers, body, now)).toBe(
      false,
    );
    expect(verifyStandardWebhook(secret, headers, body, now + 3600)).toBe(false);
  });

  it("matches the example of the Standard Webhooks specification", async () => {
    // From github.com/standard-webhooks/standard-webhooks (spec, "Signature scheme").
    const headers = await signWebhook(
      "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
      "msg_p5jXN8AQM9LWM0D4loKWxJek",
      1614265330,
      '{"test": 2432232314}',
    );
    expect(headers["webhook-signature"]).toBe("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
  });
});

describe("account webhook settings", () => {
  it("shows a derived secret (not stored in D1), sets and clears the URL, rotates the secret", async () => {
    const account = await newAccount();
    const first = await settings(account);
    expect(first).toMatchObject({ url: null, secretVersion: 1 });
    expect(first.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect((await settings(account)).secret).toBe(first.secret);
    expect(first.secret).toBe(await accountWebhookSecret(env as Env, account.accountId, 1));
    const row = await env.DB.prepare("SELECT * FROM accounts WHERE id = ?")
      .bind(account.accountId)
      .first<Record<string, unknown>>();
    expect(JSON.stringify(row)).not.toContain(first.secret.slice(6, 20));

    await expectError(
      await json(account, "PUT", "/api/v1/account/webhook", { url: "https://127.0.0.1/hook" }),
      400,
      "invalid_request",
      /^url: /,
    );
    expect((await settings(account)).url).toBeNull();

    const rotated = await json(account, "POST", "/api/v1/account/webhook/rotate-secret");
    expect(rotated.status).toBe(200);
    const after = (await rotated.json()) as { secret: string; secretVersion: number };
    expect(after.secretVersion).toBe(2);
    expect(after.secret).not.toBe(first.secret);
    expect((await settings(account)).secret).toBe(after.secret);

    const cleared = await json(account, "DELETE", "/api/v1/account/webhook");
    expect(cleared.status).toBe(200);
    expect(((await cleared.json()) as { url: unknown }).url).toBeNull();
    await expectError(await call("/api/v1/account/webhook"), 401, "unauthorized");
  });
});

describe("webhookUrl on a tool call", () => {
  const refused = [
    ["http://example.com/hook", /only https/],
    ["https://127.0.0.1/hook", /not public/],
    ["https://[::1]:8443/hook", /not public/],
    ["https://2130706433/hook", /not public/],
    ["https://[::ffff:127.0.0.1]/hook", /not public/],
    ["https://localhost/hook", /not public/],
    ["https://rebind.test/hook", /non-public/],
    ["https://nowhere.test/hook", /does not resolve/],
    ["https://user:pw@127.0.0.1/hook", /credentials/],
    ["ftp://127.0.0.1/hook", /only https/],
    ["not a url", /not a valid URL/],
    [`https://a.test/${"x".repeat(2100)}`, /2048/],
  ] as const;

  it("refuses unsafe URLs with 400 naming webhookUrl, before any debit or job", async () => {
    const account = await newAccount({ credits: 100 });
    const clip = await uploadFixture(account, "clip.mp4");
    for (const [url, message] of refused) {
      const response = await callTool(account, "convert", { uploadId: clip.uploadId, webhookUrl: url });
      const body = (await response.clone().json()) as { error: { message: string } };
      expect(response.status, url).toBe(400);
      expect(body.error.message, url).toMatch(/^webhookUrl: /);
      expect(body.error.message, url).toMatch(message);
    }
    await expectError(
      await callTool(account, "convert", { uploadId: clip.uploadId, webhookUrl: 42 }),
      400,
      "invalid_request",
      /webhookUrl/,
    );
    expect(await balanceOf(account)).toBe(100);
    const jobs = await env.DB.prepare("SELECT COUNT(*) AS n FROM jobs WHERE account_id = ?")
      .bind(account.accountId)
      .first<{ n: number }>();
    expect(jobs!.n).toBe(0);
    await expectLedgerConsistent(account);
  });

  it("is part of the body for Idempotency-Key: same body replays, another webhookUrl is a different body", async () => {
    const account = await newAccount({ credits: 100 });
    const clip = await uploadFixture(account, "clip.mp4");
    const key = { "idempotency-key": `k-${Date.now()}` };
    const first = await callTool(account, "extract-audio", { uploadId: clip.uploadId }, key);
    expect(first.status).toBe(200);
    const again = await callTool(account, "extract-audio", { uploadId: clip.uploadId }, key);
    expect(((await again.json()) as { jobId: string }).jobId).toBe(((await first.json()) as { jobId: string }).jobId);
    await expectError(
      await callTool(account, "extract-audio", { uploadId: clip.uploadId, webhookUrl: "https://127.0.0.1/x" }, key),
      400,
      "invalid_request",
    );
    expect(await balanceOf(account)).toBe(97);
  });

  it("appears in the OpenAPI request body of every tool", async () => {
    type Schema = { $ref?: string; properties?: Record<string, unknown> };
    const document = (await (await call("/api/v1/openapi.json")).json()) as {
      paths: Record<string, { post?: { requestBody: { content: Record<string, { schema: Schema }> } } }>;
      components: { schemas: Record<string, Schema> };
    };
    for (const tool of [
      "subtitles",
      "transcribe",
      "clean-audio",
      "extract-audio",
      "convert",
      "merge",
      "watermark",
      "trim",
      "text-to-speech",
      "voice-change",
    ]) {
      let schema = document.paths[`/api/v1/${tool}`].post!.requestBody.content["application/json"].schema;
      if (schema.$ref) schema = document.components.schemas[schema.$ref.split("/").pop()!];
      expect(Object.keys(schema.properties ?? {}), tool).toContain("webhookUrl");
    }
    expect(document.paths["/api/v1/jobs/{id}/webhooks"]).toBeDefined();
    expect(document.paths["/api/v1/account/webhook"]).toBeDefined();
  });
});

describe("deliveries", () => {
  it("records one job.completed delivery with the job, retries a refused host on the schedule and logs every attempt", async () => {
    const account = await newAccount({ credits: 100 });
    // An account default that passes no check at delivery time (the name does not resolve):
    // the queue consumer refuses it at each attempt, without any traffic.
    await env.DB.prepare("UPDATE accounts SET webhook_url = 'https://gone.test/hook' WHERE id = ?")
      .bind(account.accountId)
      .run();
    const clip = await uploadFixture(account, "clip.mp4");
    const started = (await (await callTool(account, "extract-audio", { uploadId: clip.uploadId })).json()) as {
      jobId: string;
    };
    expect((await waitForJob(account, started.jobId)).status).toBe("completed");
    const log = await eventually(
      async () => (await (await json(account, "GET", `/api/v1/jobs/${started.jobId}/webhooks`)).json()) as Log,
      (l) => l.deliveries[0]?.status === "failed",
      { intervalMs: 200, what: "the delivery failed" },
    );
    expect(log.deliveries).toHaveLength(1);
    const [delivery] = log.deliveries;
    expect(delivery).toMatchObject({
      event: "job.completed",
      url: "https://gone.test/hook",
      status: "failed",
      nextAttemptAt: null,
    });
    expect(delivery.id).toMatch(/^msg_/);
    // WEBHOOK_RETRY_SCHEDULE "1,1": three attempts, each refused again at delivery time.
    expect(delivery.attempts.map((a) => a.attempt)).toEqual([1, 2, 3]);
    for (const attempt of delivery.attempts)
      expect(attempt).toMatchObject({
        responseStatus: null,
        error: expect.stringMatching(/^refused: .*does not resolve/),
      });
    // The body carries the download capability: it is made from the job row at each attempt, never stored.
    const stored = await env.DB.prepare("SELECT payload FROM job_webhooks WHERE id = ?")
      .bind(delivery.id)
      .first<{ payload: string | null }>();
    expect(stored!.payload).toBeNull();

    const other = await newAccount();
    await expectError(await json(other, "GET", `/api/v1/jobs/${started.jobId}/webhooks`), 404, "not_found");
  });

  it("records job.failed once when a job is cancelled, and nothing for a job without a URL", async () => {
    const account = await newAccount({ credits: 100 });
    await env.DB.prepare("UPDATE accounts SET webhook_url = 'https://gone.test/cancelled' WHERE id = ?")
      .bind(account.accountId)
      .run();
    const clip = await uploadFixture(account, "clip.mp4");
    const started = (await (await callTool(account, "convert", { uploadId: clip.uploadId, format: "mkv" })).json()) as {
      jobId: string;
    };
    expect((await json(account, "POST", `/api/v1/jobs/${started.jobId}/cancel`)).status).toBe(200);
    // A second terminal write (the watchdog, a redelivery) changes nothing.
    const { failJob } = await import("../../src/services/media-jobs/lifecycle");
    expect(await failJob(env.DB, started.jobId, "again", Date.now())).toBe(false);
    const rows = await env.DB.prepare("SELECT event FROM job_webhooks WHERE job_id = ?")
      .bind(started.jobId)
      .all<{ event: string }>();
    expect(rows.results).toEqual([{ event: "job.failed" }]);
    expect(await balanceOf(account)).toBe(100);

    const plain = await newAccount({ credits: 100 });
    const plainClip = await uploadFixture(plain, "clip.mp4");
    const job = (await (await callTool(plain, "extract-audio", { uploadId: plainClip.uploadId })).json()) as {
      jobId: string;
    };
    expect((await waitForJob(plain, job.jobId)).status).toBe("completed");
    expect(((await (await json(plain, "GET", `/api/v1/jobs/${job.jobId}/webhooks`)).json()) as Log).deliveries).toEqual(
      [],
    );
  });

  it("POSTs a signed body, retries a 500, stops at 2xx, never follows a redirect and ignores stale messages", async () => {
    // A delivery to a loopback receiver, driven by hand (ALLOW_PRIVATE_URLS only for this env).
    const { account, started, id } = await pendingDelivery("http://127.0.0.1:9/hook", "t1");
    const sent: WebhookMessage[] = [];
    const testEnv = {
      ...(env as Env),
      ALLOW_PRIVATE_URLS: "true",
      WEBHOOK_QUEUE: { send: async (m: WebhookMessage) => void sent.push(m) },
    } as unknown as Env;
    const received: Request[] = [];
    const answers = [
      new Response("no", { status: 500 }),
      new Response(null, { status: 302, headers: { location: "http://10.0.0.1/" } }),
      new Response(null, { status: 204 }),
    ];
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      received.push(new Request(input as string, init));
      return answers.shift()!;
    });

    expect(await attemptDelivery(testEnv, { deliveryId: id, token: "t1" }, Date.now())).toBe("retrying");
    expect(await attemptDelivery(testEnv, { deliveryId: id, token: "t1" }, Date.now())).toBe("stale");
    expect(await attemptDelivery(testEnv, sent[0], Date.now())).toBe("retrying");
    expect(await attemptDelivery(testEnv, sent[1], Date.now())).toBe("delivered");
    expect(received).toHaveLength(3);
    expect(
      received.every((r) => r.redirect === "manual" && r.method === "POST" && r.url === "http://127.0.0.1:9/hook"),
    ).toBe(true);

    const { secret } = await settings(account);
    const bodies = await Promise.all(received.map((r) => r.text()));
    expect(new Set(bodies).size).toBe(1);
    for (const [i, request] of received.entries()) {
      expect(request.headers.get("webhook-id")).toBe(id);
      expect(verifyStandardWebhook(secret, request.headers, bodies[i], Math.floor(Date.now() / 1000))).toBe(true);
    }
    const payload = JSON.parse(bodies[0]);
    expect(payload).toMatchObject({
      type: "job.completed",
      livemode: true,
      data: { jobId: started.jobId, status: "completed", progress: null },
    });
    expect(payload.data).toEqual(await (await json(account, "GET", `/api/v1/jobs/${started.jobId}`)).json());
    expect(new Date(payload.timestamp).toString()).not.toBe("Invalid Date");

    const log = (await (await json(account, "GET", `/api/v1/jobs/${started.jobId}/webhooks`)).json()) as Log;
    const delivery = log.deliveries.find((d) => d.id === id)!;
    expect(delivery.status).toBe("delivered");
    expect(delivery.attempts.map((a) => [a.attempt, a.responseStatus, a.error])).toEqual([
      [1, 500, null],
      [2, 302, "redirect not followed"],
      [3, 204, null],
    ]);
  });

  it("delivers a batch side by side: a slow receiver does not hold back another account's delivery", async () => {
    const hooks = inject("hookBaseUrl");
    const slowName = `slow-${Date.now()}`;
    const fastName = `fast-${Date.now()}`;
    const deliveries: WebhookMessage[] = [];
    for (const [name, query] of [
      [slowName, "?delayMs=2000"],
      [fastName, ""],
    ] as const) {
      const { id } = await pendingDelivery(`${hooks}/${name}${query}`, `t-${name}`);
      deliveries.push({ deliveryId: id, token: `t-${name}` });
    }
    const acked: string[] = [];
    const batch = {
      queue: "job-webhooks",
      messages: deliveries.map((body) => ({
        id: body.deliveryId,
        body,
        attempts: 1,
        timestamp: new Date(),
        ack: () => void acked.push(body.deliveryId),
        retry: () => undefined,
      })),
    } as unknown as MessageBatch<unknown>;
    await consumeWebhookBatch(batch, {
      ...(env as Env),
      ALLOW_PRIVATE_URLS: "true",
      WEBHOOK_QUEUE: { send: async () => undefined },
    } as unknown as Env);
    expect(acked.sort()).toEqual(deliveries.map((d) => d.deliveryId).sort());
    const log = async (name: string) =>
      (await (await fetch(`${hooks}/${name}/log`)).json()) as { arrivedAt: number; answeredAt: number }[];
    const [slow] = await log(slowName);
    const [fast] = await log(fastName);
    // The fast receiver heard of its job while the slow one was still holding its request.
    expect(fast!.arrivedAt).toBeLessThan(slow!.answeredAt);
  });

  it("signs with the new and the previous secret for 24 h after a rotation, then with the new one only", async () => {
    const account = await newAccount({ credits: 100 });
    const clip = await uploadFixture(account, "clip.mp4");
    const started = (await (await callTool(account, "extract-audio", { uploadId: clip.uploadId })).json()) as {
      jobId: string;
    };
    expect((await waitForJob(account, started.jobId)).status).toBe("completed");
    const before = (await settings(account)).secret;
    const rotated = (await (await json(account, "POST", "/api/v1/account/webhook/rotate-secret")).json()) as {
      secret: string;
    };
    const testEnv = {
      ...(env as Env),
      ALLOW_PRIVATE_URLS: "true",
      WEBHOOK_QUEUE: { send: async () => undefined },
    } as unknown as Env;
    const received: Request[] = [];
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      received.push(new Request(input as string, init));
      return new Response("ok");
    });
    // Two hand-made deliveries (one per event, the pair being unique): now, and 25 h later.
    for (const [token, at, event] of [
      ["a", Date.now(), "job.completed"],
      ["b", Date.now() + 25 * 3600 * 1000, "job.failed"],
    ] as const) {
      const id = newId("msg");
      await env.DB.prepare(
        `INSERT INTO job_webhooks (id, job_id, account_id, event, url, status, attempts, token, next_attempt_at, created_at)
         VALUES (?, ?, ?, ?, 'http://127.0.0.1:9/hook', 'pending', 0, ?, ?, ?)`,
      )
        .bind(id, started.jobId, account.accountId, event, token, at, at)
        .run();
      expect(await attemptDelivery(testEnv, { deliveryId: id, token }, at)).toBe("delivered");
    }
    const [during, after] = received;
    const duringBody = await during.text();
    const duringTs = Number(during.headers.get("webhook-timestamp"));
    expect(during.headers.get("webhook-signature")!.split(" ")).toHaveLength(2);
    expect(verifyStandardWebhook(rotated.secret, during.headers, duringBody, duringTs)).toBe(true);
    expect(verifyStandardWebhook(before, during.headers, duringBody, duringTs)).toBe(true);
    const afterBody = await after.text();
    const afterTs = Number(after.headers.get("webhook-timestamp"));
    expect(after.headers.get("webhook-signature")!.split(" ")).toHaveLength(1);
    expect(verifyStandardWebhook(rotated.secret, after.headers, afterBody, afterTs)).toBe(true);
    expect(verifyStandardWebhook(before, after.headers, afterBody, afterTs)).toBe(false);
  });
});
