/**
 * Pipelines in workerd: every chain that cannot run, and every bad step, is a 400 naming its step
 * that spends nothing and makes no job (a step after transcribe is refused on the real stack,
 * test/e2e/pipelines.test.ts: workerd has no transcription, which refuses the transcribe step first); the ceiling and the balance are 402s; a pipeline is paid
 * with one ledger entry per step, exactly what its quote said, and its status shows its steps.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import {
  balanceOf,
  expectError,
  expectLedgerConsistent,
  newAccount,
  postJson,
  uploadFixture,
  waitForJob,
  type TestAccount,
  jobCount,
} from "../helpers/api";

const pipeline = (account: TestAccount, body: unknown, headers: Record<string, string> = {}) =>
  postJson("/api/v1/pipelines", body, { ...account.auth, ...headers });

let account: TestAccount;
let video: string;
let audio: string;
let image: string;

beforeAll(async () => {
  account = await newAccount({ credits: 1000 });
  video = (await uploadFixture(account, "clip.mp4")).uploadId;
  audio = (await uploadFixture(account, "tone.mp3")).uploadId;
  image = (await uploadFixture(account, "logo.png")).uploadId;
});

describe("refusals before any debit", () => {
  const cases: [string, () => unknown, RegExp][] = [
    ["no steps", () => ({ uploadId: video, steps: [] }), /steps/],
    ["eleven steps", () => ({ uploadId: video, steps: Array(11).fill({ tool: "convert" }) }), /steps/],
    ["an unknown tool", () => ({ uploadId: video, steps: [{ tool: "blur" }] }), /steps\.0\.tool/],
    [
      "text-to-speech as a step",
      () => ({ steps: [{ tool: "text-to-speech", params: { text: "Bonjour" } }] }),
      /steps\.0 \(text-to-speech\): text-to-speech cannot be a pipeline step/,
    ],
    [
      "a later step naming its input",
      () => ({
        uploadId: video,
        steps: [
          { tool: "trim", params: { start: 0, end: 1 } },
          { tool: "convert", params: { uploadId: video } },
        ],
      }),
      /steps\.1\.params\.uploadId/,
    ],
    [
      "a watermark after extract-audio removed the picture",
      () => ({
        uploadId: video,
        steps: [{ tool: "extract-audio" }, { tool: "watermark", params: { watermarkText: "ACME" } }],
      }),
      /steps\.1 \(watermark\): watermark needs video; the previous step \(extract-audio\) produces audio only/,
    ],
    [
      "a trim past the end of what the step before leaves",
      () => ({
        uploadId: video,
        steps: [
          { tool: "trim", params: { start: 0, end: 2 } },
          { tool: "trim", params: { start: 0, end: 2.4 } },
        ],
      }),
      /steps\.1 \(trim\): end: must not exceed the media duration \(2 s\)/,
    ],
    [
      "a bad parameter",
      () => ({ uploadId: video, steps: [{ tool: "convert" }, { tool: "convert", params: { format: "gif" } }] }),
      /steps\.1\.params\.format/,
    ],
    [
      "the input given twice",
      () => ({ uploadId: video, steps: [{ tool: "convert", params: { uploadId: video } }] }),
      /uploadId: the first step names its input already/,
    ],
    [
      "an upload id posing as a step's result",
      () => ({ uploadId: "step:0", steps: [{ tool: "convert" }] }),
      /steps\.0 \(convert\): uploadId: upload "step:0" is unknown/,
    ],
    [
      "a merge naming a step's result",
      () => ({ uploadId: video, steps: [{ tool: "convert" }, { tool: "merge", params: { uploadIds: ["step:7"] } }] }),
      /steps\.1 \(merge\): uploadIds\.1: upload "step:7" is unknown/,
    ],
    [
      "steps too large to store",
      () => ({
        uploadId: video,
        steps: [0, 1].map(() => ({ tool: "convert", params: { format: "mp4", note: "x".repeat(800_000) } })),
      }),
      /steps: the steps' parameters take \d+ characters in all, over the 1500000/,
    ],
    ["no input at all", () => ({ steps: [{ tool: "convert" }] }), /steps\.0\.params\.uploadId/],
    [
      "an unknown upload",
      () => ({ uploadId: "upl_nothere", steps: [{ tool: "convert" }] }),
      /steps\.0 \(convert\): uploadId/,
    ],
    [
      "a merge's upload of the wrong kind",
      () => ({ uploadId: video, steps: [{ tool: "convert" }, { tool: "merge", params: { uploadIds: [image] } }] }),
      /steps\.1 \(merge\): uploadIds\.1/,
    ],
    ["steps and a template", () => ({ uploadId: video, steps: [{ tool: "convert" }], templateId: "tpl_x" }), /steps/],
    ["neither steps nor a template", () => ({ uploadId: video }), /steps/],
  ];
  for (const [what, body, message] of cases) {
    it(`refuses ${what}`, async () => {
      const before = await balanceOf(account);
      const jobs = await jobCount(account);
      await expectError(await pipeline(account, body()), 400, "invalid_request", message);
      expect(await balanceOf(account)).toBe(before);
      expect(await jobCount(account)).toBe(jobs);
    });
  }

  it("refuses over maxCredits and over the balance with 402s carrying the figures", async () => {
    const body = {
      uploadId: video,
      steps: [{ tool: "convert" }, { tool: "watermark", params: { watermarkUploadId: image } }],
    };
    const over = await expectError(await pipeline(account, { ...body, maxCredits: 1 }), 402, "insufficient_credits");
    expect(over.error).toMatchObject({ maxCredits: 1 });
    expect((over.error as unknown as { required: number }).required).toBeGreaterThan(1);
    const poor = await newAccount({ credits: 1 });
    const poorVideo = (await uploadFixture(poor, "clip.mp4")).uploadId;
    await expectError(
      await pipeline(poor, { ...body, uploadId: poorVideo, steps: [{ tool: "convert" }, { tool: "convert" }] }),
      402,
      "insufficient_credits",
    );
    expect(await balanceOf(poor)).toBe(1);
    expect(await jobCount(poor)).toBe(0);
  });
});

describe("inputs and templates", () => {
  it("merges the pipeline's uploadId first when the first step is a merge", async () => {
    const response = await postJson(
      "/api/v1/quotes",
      { uploadId: video, steps: [{ tool: "merge", params: { uploadIds: [video] } }, { tool: "convert" }] },
      account.auth,
    );
    const quote = (await response.json()) as { tool: string; steps: { tool: string }[] };
    expect(response.status, JSON.stringify(quote)).toBe(200);
    expect(quote.steps.map((s) => s.tool)).toEqual(["merge", "convert"]);
  });

  it("refuses a template variable named after an object's own method unless it is sent", async () => {
    const saved = await postJson(
      "/api/v1/templates",
      { name: "odd names", steps: [{ tool: "watermark", params: { watermarkText: "{{constructor}}" } }] },
      account.auth,
    );
    const template = (await saved.json()) as { templateId: string; variables: string[] };
    expect(saved.status, JSON.stringify(template)).toBe(200);
    expect(template.variables).toEqual(["constructor"]);
    const before = await balanceOf(account);
    await expectError(
      await pipeline(account, { templateId: template.templateId, uploadId: video }),
      400,
      "invalid_request",
      /variables\.constructor: Required/,
    );
    expect(await balanceOf(account)).toBe(before);
  });
});

describe("a pipeline paid and run", () => {
  it("debits what its quote said, one ledger entry per step, and shows its steps", async () => {
    const steps = [
      { tool: "trim", params: { start: 0.5, end: 2 } },
      { tool: "extract-audio", params: { format: "wav" } },
      { tool: "clean-audio" },
    ];
    const quote = (await (await postJson("/api/v1/quotes", { uploadId: video, steps }, account.auth)).json()) as {
      tool: string;
      creditsRequired: number;
      steps: { tool: string; creditsRequired: number }[];
    };
    expect(quote.tool).toBe("pipeline");
    expect(quote.steps.map((s) => s.tool)).toEqual(["trim", "extract-audio", "clean-audio"]);
    const before = await balanceOf(account);
    const response = await pipeline(account, { uploadId: video, steps, maxCredits: quote.creditsRequired });
    const envelope = (await response.json()) as {
      jobId: string;
      creditsUsed: number;
      steps: { creditsUsed: number }[];
    };
    expect(response.status, JSON.stringify(envelope)).toBe(200);
    expect(envelope.creditsUsed).toBe(quote.creditsRequired);
    expect(envelope.steps.map((s) => s.creditsUsed)).toEqual(quote.steps.map((s) => s.creditsRequired));
    expect(await balanceOf(account)).toBe(before - quote.creditsRequired);

    const ledger = await env.DB.prepare(
      "SELECT idempotency_key AS key, amount, reason FROM ledger WHERE job_id = ? AND kind = 'debit' ORDER BY idempotency_key",
    )
      .bind(envelope.jobId)
      .all<{ key: string; amount: number; reason: string }>();
    expect(ledger.results).toEqual([
      { key: `debit:${envelope.jobId}`, amount: -quote.steps[0]!.creditsRequired, reason: "trim" },
      { key: `debit:${envelope.jobId}:1`, amount: -quote.steps[1]!.creditsRequired, reason: "extract-audio" },
      { key: `debit:${envelope.jobId}:2`, amount: -quote.steps[2]!.creditsRequired, reason: "clean-audio" },
    ]);
    const job = (await waitForJob(account, envelope.jobId, 300_000)) as unknown as {
      status: string;
      error?: string;
      result?: { filename: string };
      steps: { tool: string; status: string; engine?: string }[];
    };
    expect(job.status, job.error).toBe("completed");
    expect(job.result!.filename).toMatch(/\.wav$/);
    expect(job.steps.map((s) => [s.tool, s.status])).toEqual([
      ["trim", "completed"],
      ["extract-audio", "completed"],
      ["clean-audio", "completed"],
    ]);
    // The intermediate outputs are gone once read: only the result stays.
    const work = await env.MEDIA.list({ prefix: `work/${envelope.jobId}/` });
    expect(work.objects).toEqual([]);
    await expectLedgerConsistent(account);
  }, 360_000);
});
