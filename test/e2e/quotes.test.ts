/**
 * Quotes on the real stack (`wrangler dev` Workers, the native backend with its speech engines):
 * for every tool on both pricing forms, the quote equals what the call then debits, and the
 * balance at the end is what the ledger says; the CLI quotes and keeps to --max-credits.
 */
import { spawnSync } from "node:child_process";
import path from "node:path";
import { describe, expect, inject, it } from "vitest";
import { eventually } from "../helpers/eventually";
import { balance, FIXTURES, upload, type Client } from "./client";

const root = path.resolve(import.meta.dirname, "../..");
const ADMIN = { authorization: "Bearer e2e-admin-token", "content-type": "application/json" };

async function clientOnPlan(base: string, plan: string): Promise<Client> {
  const email = `quotes-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`;
  const created = await fetch(`${base}/api/admin/accounts`, {
    method: "POST",
    headers: ADMIN,
    body: JSON.stringify({ email, credits: 10_000, plan }),
  });
  const { accountId } = (await created.json()) as { accountId: string };
  expect(created.status).toBe(200);
  const key = (await (
    await fetch(`${base}/api/admin/accounts/${accountId}/keys`, { method: "POST", headers: ADMIN })
  ).json()) as { apiKey: string };
  return { base, auth: { authorization: `Bearer ${key.apiKey}` }, accountId };
}

const post = (client: Client, route: string, body: unknown) =>
  fetch(`${client.base}/api/v1/${route}`, {
    method: "POST",
    headers: { ...client.auth, "content-type": "application/json" },
    body: JSON.stringify(body),
  });

describe("quotes on the real stack", () => {
  for (const plan of ["payg", "pro"]) {
    it(`price every tool as the call debits, on ${plan}`, async () => {
      const client = await clientOnPlan(inject("e2eMainUrl"), plan);
      const start = await balance(client);
      const video = (await upload(client, path.join(FIXTURES, "clip.mp4"))).uploadId;
      const audio = (await upload(client, path.join(FIXTURES, "tone.mp3"))).uploadId;
      const image = (await upload(client, path.join(FIXTURES, "logo.png"))).uploadId;
      const calls: [string, Record<string, unknown>][] = [
        ["subtitles", { uploadId: video }],
        ["transcribe", { uploadId: audio, format: "srt" }],
        ["clean-audio", { uploadId: audio }],
        ["extract-audio", { uploadId: video }],
        ["convert", { uploadId: video, format: "webm" }],
        ["merge", { uploadIds: [video, video] }],
        ["watermark", { uploadId: video, watermarkUploadId: image }],
        ["trim", { uploadId: video, start: 0.5, end: 2 }],
        ["text-to-speech", { text: "Bonjour à tous, voici le devis.", voice: "lea" }],
        ["voice-change", { uploadId: video, voice: "thomas" }],
      ];
      const jobs: { jobId: string; cost: number }[] = [];
      for (const [tool, params] of calls) {
        const quoted = await post(client, "quotes", { tool, params });
        const quote = (await quoted.json()) as { creditsRequired: number; estimatedSeconds: number; plan: string };
        expect(quoted.status, JSON.stringify(quote)).toBe(200);
        expect(quote.plan).toBe(plan);
        const made = await post(client, tool, { ...params, maxCredits: quote.creditsRequired });
        const envelope = (await made.json()) as { jobId: string; creditsUsed: number; estimatedSeconds: number };
        expect(made.status, `${tool}: ${JSON.stringify(envelope)}`).toBe(200);
        expect(envelope.creditsUsed, tool).toBe(quote.creditsRequired);
        expect(envelope.estimatedSeconds, tool).toBe(quote.estimatedSeconds);
        jobs.push({ jobId: envelope.jobId, cost: envelope.creditsUsed });
      }
      // Every job ends; what the account paid is the sum of the completed ones (failures are refunded).
      let kept = 0;
      for (const { jobId, cost } of jobs) {
        const job = await eventually(
          async () =>
            (await (await fetch(`${client.base}/api/v1/jobs/${jobId}?wait=30`, { headers: client.auth })).json()) as {
              status: string;
              error?: string;
            },
          (read) => read.status === "completed" || read.status === "failed",
          { timeoutMs: 120_000, intervalMs: 0, what: `job ${jobId} to end` },
        );
        // A job may fail on its media (a tone has no speech to caption): refunded, so not kept.
        if (job.status === "completed") kept += cost;
      }
      expect(await balance(client)).toBe(start - kept);
    });
  }

  it("quotes from the CLI and refuses a call over --max-credits without spending", async () => {
    const client = await clientOnPlan(inject("e2eMainUrl"), "payg");
    const video = (await upload(client, path.join(FIXTURES, "clip.mp4"))).uploadId;
    const env = {
      ...process.env,
      MEDIA_CREDITS_API_KEY: client.auth.authorization.slice("Bearer ".length),
      MEDIA_CREDITS_BASE_URL: client.base,
    };
    const cli = (...args: string[]) =>
      spawnSync(process.execPath, [path.join(root, "cli/src/main.ts"), ...args], { env, encoding: "utf8" });

    const quoted = cli("quote", "merge", video, video, "--json");
    expect(quoted.status, quoted.stderr).toBe(0);
    const quote = JSON.parse(quoted.stdout) as { creditsRequired: number };
    expect(quote.creditsRequired).toBeGreaterThan(0);

    const before = await balance(client);
    const refused = cli("merge", video, video, "--max-credits", String(quote.creditsRequired - 1), "--quiet");
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/error 402 insufficient_credits: This call costs \d+ credits?, over the maxCredits/);
    expect(await balance(client)).toBe(before);

    const badQuote = cli("quote", "trim", video, "--start", "2", "--end", "1");
    expect(badQuote.status).toBe(1);
    expect(badQuote.stderr).toContain("error 400 invalid_request: end: must be greater than start");
  });
});
