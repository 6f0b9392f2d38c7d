/**
 * Quotes and the `maxCredits` ceiling: a quote refuses what the call refuses (same code and
 * message), spends nothing, and prices exactly what the call then debits, for every tool on both
 * pricing forms; a call over its ceiling is a 402 that carries both figures and changes nothing.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import {
  ADMIN,
  balanceOf,
  call,
  callTool,
  expectError,
  expectLedgerConsistent,
  newAccount,
  postJson,
  uploadFixture,
  type TestAccount,
  jobCount,
} from "../helpers/api";
import { BASE, connect, mcpClient, toolError } from "../helpers/mcp";

const quote = (account: TestAccount, body: unknown) => postJson("/api/v1/quotes", body, account.auth);

interface Uploads {
  video: string;
  audio: string;
  image: string;
}

async function uploadsOf(account: TestAccount): Promise<Uploads> {
  return {
    video: (await uploadFixture(account, "clip.mp4")).uploadId,
    audio: (await uploadFixture(account, "tone.mp3")).uploadId,
    image: (await uploadFixture(account, "logo.png")).uploadId,
  };
}

/**
 * One valid call of every tool this stack can run: workerd tests have no speech backend, so
 * transcription is refused here (quote and call alike, checked below); the end-to-end suite prices
 * every tool on the real backend (test/e2e/quotes.test.ts).
 */
const everyTool = ({ video, audio, image }: Uploads): [string, Record<string, unknown>][] => [
  ["subtitles", { uploadId: video, srtContent: "1\n00:00:00,500 --> 00:00:02,000\nBonjour\n" }],
  ["clean-audio", { uploadId: audio }],
  ["extract-audio", { uploadId: video }],
  ["convert", { uploadId: video, format: "webm" }],
  ["merge", { uploadIds: [video, video] }],
  ["watermark", { uploadId: video, watermarkUploadId: image }],
  ["trim", { uploadId: video, start: 0.5, end: 2 }],
  ["text-to-speech", { text: "Bonjour à tous, voici le devis.", voice: "lea" }],
  ["voice-change", { uploadId: video, voice: "thomas" }],
];

describe("quotes", () => {
  for (const plan of ["payg", "pro"]) {
    it(`price every tool exactly as the call then debits (${plan})`, async () => {
      const account = await newAccount({ credits: 100_000, plan });
      const calls = everyTool(await uploadsOf(account));
      for (const [tool, params] of calls) {
        const before = await balanceOf(account);
        const quoted = await quote(account, { tool, params });
        const body = (await quoted.json()) as Record<string, unknown>;
        expect(quoted.status, JSON.stringify(body)).toBe(200);
        expect(body).toMatchObject({ tool, balance: before, sufficient: true, plan });
        expect(await balanceOf(account)).toBe(before);

        const made = await callTool(account, tool, params);
        const envelope = (await made.json()) as { jobId: string; creditsUsed: number; estimatedSeconds: number };
        expect(made.status, JSON.stringify(envelope)).toBe(200);
        expect(envelope.creditsUsed, tool).toBe(body.creditsRequired);
        expect(envelope.estimatedSeconds, tool).toBe(body.estimatedSeconds);
        // What the call debited, whatever the job did since (a job may already have failed and been refunded).
        const debit = await env.DB.prepare("SELECT amount FROM ledger WHERE idempotency_key = ?")
          .bind(`debit:${envelope.jobId}`)
          .first<{ amount: number }>();
        expect((debit?.amount ?? 0) + envelope.creditsUsed, tool).toBe(0);
        // The price is what is checked here, not the work: stopped at once (refunded in full) unless it already ended.
        await call(`/api/v1/jobs/${envelope.jobId}/cancel`, { method: "POST", headers: account.auth });
      }
      // Plans make the light tools free: the quotes say so as the calls do.
      if (plan === "pro") {
        const convert = (await (await quote(account, { tool: "convert", params: calls[3]![1] })).json()) as {
          creditsRequired: number;
        };
        expect(convert.creditsRequired).toBe(0);
      }
      await expectLedgerConsistent(account);
    });
  }

  it("refuses what the call refuses, with the same code and message, and spends nothing", async () => {
    const account = await newAccount({ credits: 1000 });
    const { video, image } = await uploadsOf(account);
    const refused: [string, Record<string, unknown>][] = [
      ["transcribe", { uploadId: video }],
      ["trim", { uploadId: video, start: 3, end: 1 }],
      ["convert", { uploadId: video, format: "gif" }],
      ["convert", { uploadId: "upl_unknown" }],
      ["extract-audio", { uploadId: image }],
      ["merge", { uploadIds: [video] }],
      ["text-to-speech", { text: "", voice: "lea" }],
      ["subtitles", {}],
    ];
    for (const [tool, params] of refused) {
      const viaCall = (await (await callTool(account, tool, params)).json()) as { error: unknown };
      const viaQuote = await quote(account, { tool, params });
      expect(viaQuote.status).toBe(400);
      expect(await viaQuote.json(), `${tool} ${JSON.stringify(params)}`).toEqual(viaCall);
    }
    await expectError(await quote(account, { tool: "upscale", params: {} }), 400, "invalid_request", /^tool/);
    await expectError(await quote(account, { tool: "trim" }), 400, "invalid_request", /^params/);
    expect(await balanceOf(account)).toBe(1000);
    expect(await jobCount(account)).toBe(0);
  });

  it("says when the balance does not cover the call, and ignores the call's own fields", async () => {
    const account = await newAccount({ credits: 0 });
    const { video } = await uploadsOf(account);
    const response = await quote(account, {
      tool: "merge",
      params: { uploadIds: [video, video, video], webhookUrl: "https://example.com/hook", maxCredits: 1 },
    });
    const body = (await response.json()) as { creditsRequired: number; balance: number; sufficient: boolean };
    expect(response.status, JSON.stringify(body)).toBe(200);
    expect(body.creditsRequired).toBeGreaterThan(0);
    expect(body).toMatchObject({ balance: 0, sufficient: false });
  });

  it("needs an API key", async () => {
    const response = await postJson("/api/v1/quotes", { tool: "trim", params: {} });
    expect(response.status).toBe(401);
  });
});

describe("maxCredits", () => {
  let account: TestAccount;
  let uploads: Uploads;

  beforeAll(async () => {
    account = await newAccount({ credits: 10_000 });
    uploads = await uploadsOf(account);
  });

  it("refuses a call that would cost more with a 402 carrying required and maxCredits, changing nothing", async () => {
    const params = { uploadIds: [uploads.video, uploads.video] };
    const price = ((await (await quote(account, { tool: "merge", params })).json()) as { creditsRequired: number })
      .creditsRequired;
    const before = await balanceOf(account);
    const jobs = await jobCount(account);
    const refused = await expectError(
      await callTool(account, "merge", { ...params, maxCredits: price - 1 }),
      402,
      "insufficient_credits",
      /over the maxCredits/,
    );
    expect(refused.error).toMatchObject({ required: price, maxCredits: price - 1 });
    expect(await balanceOf(account)).toBe(before);
    expect(await jobCount(account)).toBe(jobs);

    const accepted = await callTool(account, "merge", { ...params, maxCredits: price });
    const envelope = (await accepted.json()) as { jobId: string; creditsUsed: number };
    expect(accepted.status).toBe(200);
    expect(envelope.creditsUsed).toBe(price);
    await call(`/api/v1/jobs/${envelope.jobId}/cancel`, { method: "POST", headers: account.auth });
    await expectLedgerConsistent(account);
  });

  it("is a whole number of credits, at least 0", async () => {
    for (const maxCredits of [-1, 1.5, "10", null]) {
      await expectError(
        await callTool(account, "extract-audio", { uploadId: uploads.video, maxCredits }),
        400,
        "invalid_request",
        /^maxCredits/,
      );
    }
  });

  it("is part of the body an Idempotency-Key compares", async () => {
    const headers = { "idempotency-key": `ceiling-${Date.now()}` };
    const first = await callTool(account, "extract-audio", { uploadId: uploads.video, maxCredits: 100 }, headers);
    expect(first.status).toBe(200);
    const { jobId } = (await first.json()) as { jobId: string };
    await expectError(
      await callTool(account, "extract-audio", { uploadId: uploads.video, maxCredits: 99 }, headers),
      400,
      "invalid_request",
      /different request body/,
    );
    await call(`/api/v1/jobs/${jobId}/cancel`, { method: "POST", headers: account.auth });
  });
});

describe("the connector's quote and maxCredits", () => {
  it("quotes as REST does and stops a call over its ceiling before any debit", async () => {
    const connection = await connect("Quote client");
    const client = await mcpClient(connection.tokens.access_token);
    const key = await call(
      `/api/admin/accounts/${connection.person.accountId}/keys`,
      { method: "POST", headers: ADMIN },
      BASE,
    );
    const { apiKey } = (await key.json()) as { apiKey: string };
    const account: TestAccount = {
      accountId: connection.person.accountId,
      keyId: "",
      apiKey,
      auth: { authorization: `Bearer ${apiKey}` },
    };
    const { video } = await uploadsOf(account);

    const viaTool = (await client.callTool({
      name: "quote",
      arguments: { tool: "merge", params: { uploadIds: [video, video] } },
    })) as {
      isError?: boolean;
      structuredContent?: Record<string, unknown>;
      content: { type: string; text?: string }[];
    };
    expect(viaTool.isError, viaTool.content[0]?.text).toBeFalsy();
    const viaRest = (await (
      await quote(account, { tool: "merge", params: { uploadIds: [video, video] } })
    ).json()) as Record<string, unknown>;
    expect(viaTool.structuredContent).toEqual(viaRest);

    const before = await balanceOf(account);
    const over = await client.callTool({
      name: "merge",
      arguments: { uploadIds: [video, video], maxCredits: (viaRest.creditsRequired as number) - 1 },
    });
    expect(toolError(over as never)).toMatchObject({
      code: "insufficient_credits",
      required: viaRest.creditsRequired,
      maxCredits: (viaRest.creditsRequired as number) - 1,
    });
    expect(await balanceOf(account)).toBe(before);

    const badTool = await client.callTool({ name: "quote", arguments: { tool: "upscale", params: {} } });
    expect(toolError(badTool as never)).toMatchObject({
      code: "invalid_request",
      message: expect.stringMatching(/^tool/),
    });
  });
});
