/**
 * The connector's pipeline and template tools through the official MCP client, after a real OAuth
 * connection: save, list and delete templates, price and run a pipeline from steps or a template,
 * the refusals (REST's codes and messages, nothing spent) and the grant's scope.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { ADMIN, call } from "../helpers/api";
import { connect, mcpClient, toolError } from "../helpers/mcp";
import { expectLedgerMatches, ledgerOf } from "../helpers/web";

type Result = {
  isError?: boolean;
  structuredContent?: Record<string, any>;
  content: { type: string; text?: string }[];
};

let client: Awaited<ReturnType<typeof mcpClient>>;
let accountId: string;
let audio: string;

const callTool = (name: string, args: Record<string, unknown> = {}) =>
  client.callTool({ name, arguments: args }) as Promise<Result>;

async function ok(name: string, args: Record<string, unknown> = {}) {
  const result = await callTool(name, args);
  expect(result.isError, result.content[0]?.text).toBeFalsy();
  return result;
}

/** A trim whose cut is left to the run, then the noise removed; tools named as the connector names them. */
const cutAndClean = {
  name: "Cut and clean",
  steps: [{ tool: "trim", params: { start: "{{start}}", end: "{{end}}" } }, { tool: "clean_audio" }],
};

async function pipelineJobs(): Promise<number> {
  const row = await env.DB.prepare("SELECT COUNT(*) AS n FROM jobs WHERE account_id = ? AND tool = 'pipeline'")
    .bind(accountId)
    .first<{ n: number }>();
  return row!.n;
}

beforeAll(async () => {
  const connection = await connect("Pipeline client");
  accountId = connection.person.accountId;
  client = await mcpClient(connection.tokens.access_token);
  // Uploads belong to the account: one made with a REST key is the connector's input too.
  const key = (await (
    await call(`/api/admin/accounts/${accountId}/keys`, { method: "POST", headers: ADMIN })
  ).json()) as { apiKey: string };
  const form = new FormData();
  form.append(
    "file",
    new File([new Uint8Array(await (await fetch(`${env.FIXTURE_BASE_URL}/tone.mp3`)).arrayBuffer())], "tone.mp3"),
  );
  const stored = await call("/api/v1/uploads", {
    method: "POST",
    headers: { authorization: `Bearer ${key.apiKey}` },
    body: form,
  });
  expect(stored.status).toBe(200);
  audio = ((await stored.json()) as { uploadId: string }).uploadId;
});

describe("connector pipelines and templates", () => {
  it("lists run_pipeline and the template tools with their schemas and hints", async () => {
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    for (const name of ["run_pipeline", "save_template", "list_templates", "delete_template"])
      expect(byName.get(name)?.annotations?.openWorldHint, name).toBe(false);
    const run = byName.get("run_pipeline")!;
    expect(run.description).toMatch(/call quote with the same steps/i);
    expect(run.description).toContain("each step reading the previous step's result");
    expect(Object.keys(run.inputSchema.properties!).sort()).toEqual(
      ["idempotencyKey", "maxCredits", "steps", "templateId", "uploadId", "variables"].sort(),
    );
    expect(run.outputSchema?.properties).toHaveProperty("steps");
    expect(run.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false });
    expect(byName.get("save_template")!.description).toContain("{{name}}");
    expect(byName.get("list_templates")!.annotations).toMatchObject({ readOnlyHint: true });
    expect(byName.get("delete_template")!.annotations).toMatchObject({ destructiveHint: true });
    // quote takes a pipeline too.
    expect(Object.keys(byName.get("quote")!.inputSchema.properties!)).toEqual(
      expect.arrayContaining(["tool", "params", "steps", "templateId", "variables", "uploadId"]),
    );
  });

  it("saves, lists and deletes a template; step tools take either spelling", async () => {
    const saved = (await ok("save_template", cutAndClean)).structuredContent!;
    expect(saved).toMatchObject({
      templateId: expect.stringMatching(/^tpl_/),
      name: "Cut and clean",
      steps: [
        { tool: "trim", params: { start: "{{start}}", end: "{{end}}" } },
        { tool: "clean-audio", params: {} },
      ],
      variables: ["start", "end"],
    });
    const listed = (await ok("list_templates")).structuredContent!;
    expect(listed.templates.find((t: { templateId: string }) => t.templateId === saved.templateId)).toEqual(saved);
    expect((await ok("delete_template", { templateId: saved.templateId })).structuredContent).toEqual({
      templateId: saved.templateId,
      deleted: true,
    });
    expect(toolError(await callTool("delete_template", { templateId: saved.templateId }))).toMatchObject({
      code: "not_found",
    });
    const after = (await ok("list_templates")).structuredContent!;
    expect(after.templates.map((t: { templateId: string }) => t.templateId)).not.toContain(saved.templateId);
  });

  it("prices and runs a template with its variables: the job's steps are the template's", async () => {
    const template = (await ok("save_template", cutAndClean)).structuredContent!;
    const source = { templateId: template.templateId, variables: { start: 0, end: 1 }, uploadId: audio };
    const quoted = await ok("quote", source);
    expect(quoted.structuredContent).toMatchObject({
      tool: "pipeline",
      steps: [{ tool: "trim" }, { tool: "clean-audio" }],
    });
    expect(quoted.content[0]!.text).toMatch(/^pipeline would cost \d+ credits \(trim \d+, clean-audio \d+\)/);
    // The same pipeline written out is priced the same.
    const written = await ok("quote", {
      steps: [{ tool: "trim", params: { start: 0, end: 1 } }, { tool: "clean-audio" }],
      uploadId: audio,
    });
    expect(written.structuredContent!.creditsRequired).toBe(quoted.structuredContent!.creditsRequired);

    const started = await ok("run_pipeline", { ...source, maxCredits: quoted.structuredContent!.creditsRequired });
    const envelope = started.structuredContent!;
    expect(envelope).toMatchObject({
      status: "queued",
      creditsUsed: quoted.structuredContent!.creditsRequired,
      steps: [{ tool: "trim" }, { tool: "clean-audio" }],
    });
    expect(started.content[0]!.text).toContain("(trim -> clean-audio)");
    const job = (await ok("get_job", { jobId: envelope.jobId })).structuredContent!;
    expect(job.steps.map((step: { tool: string }) => step.tool)).toEqual(["trim", "clean-audio"]);
    // The connector's job: a REST key does not see it. Stopped here (refunded): running is the runner's tests' work.
    await callTool("cancel_job", { jobId: envelope.jobId });
    await expectLedgerMatches(accountId);
  });

  it("refuses a bad pipeline or template with REST's messages and spends nothing", async () => {
    const before = await ledgerOf(accountId);
    const jobsBefore = await pipelineJobs();
    const template = (await ok("save_template", cutAndClean)).structuredContent!;
    const refusals: [string, Record<string, unknown>, RegExp][] = [
      ["run_pipeline", { steps: [{ tool: "upscale" }], uploadId: audio }, /^steps\.0\.tool/],
      ["run_pipeline", { steps: [], uploadId: audio }, /^steps/],
      [
        "run_pipeline",
        { steps: Array.from({ length: 11 }, () => ({ tool: "clean_audio" })), uploadId: audio },
        /^steps/,
      ],
      [
        "run_pipeline",
        { steps: [{ tool: "text_to_speech", params: { text: "Bonjour" } }] },
        /text-to-speech cannot be/,
      ],
      [
        "run_pipeline",
        { templateId: template.templateId, variables: { start: 0 }, uploadId: audio },
        /^variables\.end: Required/,
      ],
      [
        "run_pipeline",
        { templateId: template.templateId, variables: { start: 0, end: 1, speed: 2 }, uploadId: audio },
        /^variables\.speed: the template has no such variable/,
      ],
      [
        "run_pipeline",
        { templateId: template.templateId, variables: { start: 2, end: 1 }, uploadId: audio },
        /^steps\.0/,
      ],
      ["quote", { templateId: template.templateId, uploadId: audio }, /^variables\.start: Required/],
      ["quote", { tool: "trim", steps: [{ tool: "trim" }] }, /^steps: price either/],
      ["save_template", { name: "", steps: [{ tool: "trim" }] }, /^name/],
      ["save_template", { name: "Nothing", steps: [] }, /^steps/],
      ["save_template", { name: "Unknown", steps: [{ tool: "upscale" }] }, /^steps\.0\.tool/],
    ];
    for (const [name, args, message] of refusals)
      expect(toolError(await callTool(name, args)), `${name} ${JSON.stringify(args)}`).toMatchObject({
        code: "invalid_request",
        message: expect.stringMatching(message),
      });
    expect(toolError(await callTool("run_pipeline", { templateId: "tpl_unknown", uploadId: audio })).code).toBe(
      "not_found",
    );
    // Only the template saved above: no debit, no job.
    expect(await ledgerOf(accountId)).toEqual(before);
    expect(await pipelineJobs()).toBe(jobsBefore);
  });

  it("refuses a connection the owner did not allow to process media", async () => {
    const social = await connect("Social only", { media: false });
    const limited = await mcpClient(social.tokens.access_token);
    for (const [name, args] of [
      ["run_pipeline", { steps: [{ tool: "clean_audio" }], uploadId: audio }],
      ["save_template", cutAndClean],
      ["list_templates", {}],
    ] as const) {
      const refused = toolError((await limited.callTool({ name, arguments: args })) as Result);
      expect(refused, name).toMatchObject({ code: "invalid_request", message: expect.stringMatching(/process media/) });
    }
  });
});
