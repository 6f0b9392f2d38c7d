/**
 * Pipeline templates over REST: save, list, read and delete; refusals in the contract's error shape
 * that change nothing; another account's template is unknown; and a pipeline run from a template
 * is the template with its variables put in, priced and debited as those steps, while a missing or
 * unknown variable is a 400 before any debit.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import {
  balanceOf,
  call,
  expectError,
  expectLedgerConsistent,
  newAccount,
  postJson,
  uploadFixture,
  type TestAccount,
  jobCount,
} from "../helpers/api";

const save = (account: TestAccount, body: unknown) => postJson("/api/v1/templates", body, account.auth);
const run = (account: TestAccount, body: unknown) => postJson("/api/v1/pipelines", body, account.auth);

/** A trim then an audio extraction, the cut and the format left to the run. */
const brandCut = {
  name: "Cut and extract",
  description: "Keeps a segment and gives its sound",
  steps: [
    { tool: "trim", params: { start: "{{start}}", end: "{{ end }}" } },
    { tool: "extract-audio", params: { format: "{{format}}" } },
  ],
};

interface Template {
  templateId: string;
  name: string;
  description?: string;
  steps: { tool: string; params: Record<string, unknown> }[];
  variables: string[];
  createdAt: string;
}

async function saved(account: TestAccount, body: unknown = brandCut): Promise<Template> {
  const response = await save(account, body);
  const template = (await response.json()) as Template;
  expect(response.status, JSON.stringify(template)).toBe(200);
  return template;
}

async function templateCount(account: TestAccount): Promise<number> {
  const row = await env.DB.prepare("SELECT COUNT(*) AS n FROM pipeline_templates WHERE account_id = ?")
    .bind(account.accountId)
    .first<{ n: number }>();
  return row!.n;
}

let account: TestAccount;
let video: string;

beforeAll(async () => {
  account = await newAccount({ credits: 1000 });
  video = (await uploadFixture(account, "clip.mp4")).uploadId;
});

describe("templates", () => {
  it("saves, lists, reads and deletes a template with its variables in order", async () => {
    const template = await saved(account);
    expect(template).toEqual({
      templateId: expect.stringMatching(/^tpl_/),
      name: "Cut and extract",
      description: "Keeps a segment and gives its sound",
      steps: brandCut.steps,
      variables: ["start", "end", "format"],
      createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
    });

    const read = await call(`/api/v1/templates/${template.templateId}`, { headers: account.auth });
    expect(read.status).toBe(200);
    expect(await read.json()).toEqual(template);

    const other = await saved(account, { name: "  Plain convert  ", steps: [{ tool: "convert" }] });
    // Names are trimmed; a step without params has none; no placeholder, no variable.
    expect(other).toMatchObject({ name: "Plain convert", steps: [{ tool: "convert", params: {} }], variables: [] });
    expect(other).not.toHaveProperty("description");
    const listed = await call("/api/v1/templates", { headers: account.auth });
    expect(listed.status).toBe(200);
    const { templates } = (await listed.json()) as { templates: Template[] };
    const ids = templates.map((t) => t.templateId);
    // Newest first.
    expect(ids.indexOf(other.templateId)).toBeLessThan(ids.indexOf(template.templateId));
    expect(templates.find((t) => t.templateId === template.templateId)).toEqual(template);

    const deleted = await call(`/api/v1/templates/${other.templateId}`, { method: "DELETE", headers: account.auth });
    expect(deleted.status).toBe(200);
    expect(await deleted.json()).toEqual({ templateId: other.templateId, deleted: true });
    await expectError(
      await call(`/api/v1/templates/${other.templateId}`, { headers: account.auth }),
      404,
      "not_found",
      /Template/,
    );
    await expectError(
      await call(`/api/v1/templates/${other.templateId}`, { method: "DELETE", headers: account.auth }),
      404,
      "not_found",
    );
  });

  it("refuses a bad template in the contract's error shape and saves nothing", async () => {
    const before = await templateCount(account);
    const step = { tool: "convert", params: {} };
    const refused: [unknown, RegExp][] = [
      [{ name: "Upscale", steps: [{ tool: "upscale", params: {} }] }, /^steps\.0\.tool/],
      [{ name: "Empty", steps: [] }, /^steps/],
      [{ name: "Eleven", steps: Array.from({ length: 11 }, () => step) }, /^steps/],
      [{ name: "   ", steps: [step] }, /^name/],
      [{ name: "x".repeat(101), steps: [step] }, /^name/],
      [{ steps: [step] }, /^name/],
      [{ name: "No steps" }, /^steps/],
      [{ name: "Odd params", steps: [{ tool: "convert", params: "fast" }] }, /^steps\.0\.params/],
      [{ name: "Long description", description: "x".repeat(501), steps: [step] }, /^description/],
    ];
    for (const [body, message] of refused)
      await expectError(await save(account, body), 400, "invalid_request", message);
    const malformed = await call("/api/v1/templates", {
      method: "POST",
      headers: { ...account.auth, "content-type": "application/json" },
      body: "{",
    });
    expect(malformed.status).toBe(400);
    expect(await templateCount(account)).toBe(before);
  });

  it("answers another account's template as unknown, to every verb", async () => {
    const template = await saved(account);
    const stranger = await newAccount();
    const path = `/api/v1/templates/${template.templateId}`;
    await expectError(await call(path, { headers: stranger.auth }), 404, "not_found");
    await expectError(await call(path, { method: "DELETE", headers: stranger.auth }), 404, "not_found");
    const { templates } = (await (await call("/api/v1/templates", { headers: stranger.auth })).json()) as {
      templates: Template[];
    };
    expect(templates).toEqual([]);
    // Nor can it be run or priced from there, and it is still the owner's.
    await expectError(
      await run(stranger, { templateId: template.templateId, variables: {}, uploadId: video }),
      404,
      "not_found",
    );
    expect((await call(path, { headers: account.auth })).status).toBe(200);
    // Without a key: 401 before anything.
    await expectError(await call("/api/v1/templates"), 401, "unauthorized");
    await expectError(await postJson("/api/v1/templates", brandCut), 401, "unauthorized");
  });

  it("refuses a missing, unknown or ill-typed variable with 400 and debits nothing", async () => {
    const payer = await newAccount({ credits: 1000 });
    const clip = (await uploadFixture(payer, "clip.mp4")).uploadId;
    const template = await saved(payer);
    const templateId = template.templateId;
    const refused: [unknown, RegExp][] = [
      [{ templateId, variables: { start: 0.5, end: 2 }, uploadId: clip }, /^variables\.format: Required/],
      [{ templateId, uploadId: clip }, /^variables\.start: Required/],
      [
        { templateId, variables: { start: 0.5, end: 2, format: "wav", speed: 2 }, uploadId: clip },
        /^variables\.speed: the template has no such variable/,
      ],
      [{ templateId, variables: { start: 0.5, end: 2, format: "gif" }, uploadId: clip }, /^steps\.1\.params\.format/],
      [{ templateId, variables: { start: 3, end: 1, format: "wav" }, uploadId: clip }, /^steps\.0/],
      [{ templateId, variables: { "bad-name": 1 }, uploadId: clip }, /^variables/],
      [{ templateId, steps: brandCut.steps, variables: {}, uploadId: clip }, /^steps: send either/],
      [{ templateId: "tpl_unknown", variables: {}, uploadId: clip }, /Template/],
    ];
    for (const [body, message] of refused) {
      const response = await run(payer, body);
      const status = (body as { templateId: string }).templateId === "tpl_unknown" ? 404 : 400;
      await expectError(response, status, status === 404 ? "not_found" : "invalid_request", message);
      // A quote refuses it the same way.
      const quoted = await postJson("/api/v1/quotes", body, payer.auth);
      expect(quoted.status, JSON.stringify(body)).toBe(status);
    }
    expect(await balanceOf(payer)).toBe(1000);
    expect(await jobCount(payer)).toBe(0);
    const ledger = await env.DB.prepare("SELECT COUNT(*) AS n FROM ledger WHERE account_id = ? AND kind = 'debit'")
      .bind(payer.accountId)
      .first<{ n: number }>();
    expect(ledger!.n).toBe(0);
    await expectLedgerConsistent(payer);
  });

  it("runs a template as its steps with the variables put in, priced and debited as those steps", async () => {
    const payer = await newAccount({ credits: 1000 });
    const clip = (await uploadFixture(payer, "clip.mp4")).uploadId;
    const template = await saved(payer);
    const variables = { start: 0.5, end: 2, format: "wav" };
    const filled = [
      { tool: "trim", params: { start: 0.5, end: 2 } },
      { tool: "extract-audio", params: { format: "wav" } },
    ];

    const quoted = await postJson(
      "/api/v1/quotes",
      { templateId: template.templateId, variables, uploadId: clip },
      payer.auth,
    );
    const quote = (await quoted.json()) as { creditsRequired: number; steps: { tool: string }[] };
    expect(quoted.status, JSON.stringify(quote)).toBe(200);
    // The same price as the same steps written out.
    const written = (await (
      await postJson("/api/v1/quotes", { steps: filled, uploadId: clip }, payer.auth)
    ).json()) as {
      creditsRequired: number;
    };
    expect(quote.creditsRequired).toBe(written.creditsRequired);
    expect(quote.steps.map((s) => s.tool)).toEqual(["trim", "extract-audio"]);

    const before = await balanceOf(payer);
    const response = await run(payer, { templateId: template.templateId, variables, uploadId: clip });
    const envelope = (await response.json()) as {
      jobId: string;
      creditsUsed: number;
      steps: { tool: string; creditsUsed: number }[];
    };
    expect(response.status, JSON.stringify(envelope)).toBe(200);
    expect(envelope.steps.map((s) => s.tool)).toEqual(["trim", "extract-audio"]);
    expect(envelope.creditsUsed).toBe(quote.creditsRequired);
    expect(envelope.steps.reduce((sum, s) => sum + s.creditsUsed, 0)).toBe(envelope.creditsUsed);

    // The job's steps are the template's, filled: numbers stay numbers, the first step reads the upload.
    const rows = (
      await env.DB.prepare(
        "SELECT position, tool, params, inputs FROM pipeline_steps WHERE job_id = ? ORDER BY position",
      )
        .bind(envelope.jobId)
        .all<{ position: number; tool: string; params: string; inputs: string }>()
    ).results;
    expect(rows.map((r) => r.tool)).toEqual(["trim", "extract-audio"]);
    expect(JSON.parse(rows[0]!.params)).toMatchObject({ uploadId: clip, start: 0.5, end: 2 });
    expect(JSON.parse(rows[1]!.params)).toMatchObject({ uploadId: "step:0", format: "wav" });
    expect(JSON.parse(rows[0]!.inputs)).toEqual([clip]);
    // One ledger entry per step.
    const debits = (
      await env.DB.prepare("SELECT idempotency_key, amount FROM ledger WHERE job_id = ? AND kind = 'debit'")
        .bind(envelope.jobId)
        .all<{ idempotency_key: string; amount: number }>()
    ).results;
    expect(debits.map((d) => d.idempotency_key).sort()).toEqual([
      `debit:${envelope.jobId}`,
      `debit:${envelope.jobId}:1`,
    ]);
    expect(debits.reduce((sum, d) => sum - d.amount, 0)).toBe(envelope.creditsUsed);
    // Its status lists them in order with their prices (running them is the runner's tests' work).
    const read = await call(`/api/v1/jobs/${envelope.jobId}`, { headers: payer.auth });
    const job = (await read.json()) as { steps?: { tool: string; status: string; creditsUsed: number }[] };
    expect(read.status).toBe(200);
    expect(job.steps?.map(({ tool, creditsUsed }) => ({ tool, creditsUsed }))).toEqual(
      envelope.steps.map(({ tool, creditsUsed }) => ({ tool, creditsUsed })),
    );
    // Stopped (refunded in full, once) unless it already ended.
    const cancelled = await call(`/api/v1/jobs/${envelope.jobId}/cancel`, { method: "POST", headers: payer.auth });
    if (cancelled.status === 200) expect(await balanceOf(payer)).toBe(before);
    await expectLedgerConsistent(payer);
  });

  it("keeps at most the account's limit of templates", async () => {
    const owner = await newAccount();
    const statements = Array.from({ length: 100 }, (_, i) =>
      env.DB.prepare(
        "INSERT INTO pipeline_templates (id, account_id, name, description, steps, created_at) VALUES (?, ?, ?, NULL, ?, ?)",
      ).bind(`tpl_limit_${owner.accountId}_${i}`, owner.accountId, `T${i}`, '[{"tool":"convert","params":{}}]', i),
    );
    await env.DB.batch(statements);
    await expectError(await save(owner, brandCut), 400, "invalid_request", /at most 100 templates/);
    expect(await templateCount(owner)).toBe(100);
    const deleted = await call(`/api/v1/templates/tpl_limit_${owner.accountId}_0`, {
      method: "DELETE",
      headers: owner.auth,
    });
    expect(deleted.status).toBe(200);
    await saved(owner);
  });
});
