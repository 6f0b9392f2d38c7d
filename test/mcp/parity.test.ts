/**
 * REST and the connector are two doors to one contract (src/contract/): the same inputs through
 * both give the same answers (fields and values, ids and times aside) and the same refusals (code
 * and message). One account: a live API key for REST, an assistant's connection for the connector.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { ADMIN, call, fixtureBytes } from "../helpers/api";
import { BASE, connect, mcpClient, toolError } from "../helpers/mcp";

type Result = {
  isError?: boolean;
  structuredContent?: Record<string, any>;
  content: { type: string; text?: string }[];
};
type Json = Record<string, any>;

let client: Awaited<ReturnType<typeof mcpClient>>;
let apiKey: string;

beforeAll(async () => {
  const connection = await connect("Parity client");
  client = await mcpClient(connection.tokens.access_token);
  const key = await call(
    `/api/admin/accounts/${connection.person.accountId}/keys`,
    { method: "POST", headers: ADMIN },
    BASE,
  );
  expect(key.status).toBe(200);
  apiKey = ((await key.json()) as { apiKey: string }).apiKey;
});

/** A REST call on the connector's origin (absolute URLs match): its status and body. */
async function rest(method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> {
  const response = await call(
    `/api/v1${path}`,
    {
      method,
      headers: {
        authorization: `Bearer ${apiKey}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    },
    BASE,
  );
  return { status: response.status, body: (await response.json()) as Json };
}

async function tool(name: string, args: Json = {}): Promise<Json> {
  const result = (await client.callTool({ name, arguments: args })) as Result;
  expect(result.isError, result.content[0]?.text).toBeFalsy();
  return result.structuredContent!;
}

async function restOk(method: string, path: string, body?: unknown): Promise<Json> {
  const { status, body: answer } = await rest(method, path, body);
  expect(status, JSON.stringify(answer)).toBe(200);
  return answer;
}

/** A REST refusal and a connector refusal: the same code and message (and details). */
async function expectSameRefusal(method: string, path: string, body: unknown, name: string, args: Json, status = 400) {
  const viaRest = await rest(method, path, body);
  expect(viaRest.status, JSON.stringify(viaRest.body)).toBe(status);
  const viaTool = toolError((await client.callTool({ name, arguments: args })) as Result);
  expect(viaTool).toEqual(viaRest.body.error);
  return viaTool;
}

/** The fields each side makes its own: ids, secrets, times of creation. */
const withoutIdentity = ({ brandId, postId, webhookSecret, createdAt, ...rest }: Json) => rest;

const brandInput = {
  name: "Parité",
  timeZone: "Europe/Paris",
  requiresApproval: true,
  webhookUrl: null,
  channels: [{ network: "webhook", url: "https://example.com/hooks/parity" }],
};

describe("REST and connector parity", () => {
  it("creates, updates and lists brands alike", async () => {
    const viaRest = await restOk("POST", "/brands", brandInput);
    const viaTool = await tool("create_brand", brandInput);
    expect(withoutIdentity(viaTool)).toEqual(withoutIdentity(viaRest));
    expect(Object.keys(viaTool).sort()).toEqual(Object.keys(viaRest).sort());

    const changes = { name: "Parité Nord", timeZone: "America/New_York", requiresApproval: false };
    const updatedRest = await restOk("PATCH", `/brands/${viaRest.brandId}`, changes);
    const updatedTool = await tool("update_brand", { brandId: viaTool.brandId, ...changes });
    expect(withoutIdentity(updatedTool)).toEqual(withoutIdentity(updatedRest));
    expect(updatedTool).toMatchObject({
      brandId: viaTool.brandId,
      webhookSecret: viaTool.webhookSecret,
      createdAt: viaTool.createdAt,
    });

    // One account: both doors list the same brands, byte for byte.
    expect(await tool("list_brands")).toEqual(await restOk("GET", "/brands"));
  });

  it("creates, updates and reads posts alike", async () => {
    const brand = await restOk("POST", "/brands", {
      name: "Parité posts",
      timeZone: "Europe/Paris",
      channels: [{ network: "webhook", url: "https://example.com/hooks/posts" }],
    });
    const input = {
      brandId: brand.brandId,
      text: "Ouverture samedi ☕",
      networks: ["webhook"],
      scheduledAt: "2027-03-01T09:30",
    };
    const viaRest = await restOk("POST", "/posts", input);
    const viaTool = await tool("create_post", input);
    expect(withoutIdentity(viaTool)).toEqual(withoutIdentity(viaRest));
    expect(viaTool).toMatchObject({
      brandId: brand.brandId,
      state: "draft",
      scheduledAtLocal: "2027-03-01T09:30",
      scheduledAt: "2027-03-01T08:30:00.000Z",
    });

    const changes = { text: "Ouverture dimanche", scheduledAt: null, media: null };
    const updatedRest = await restOk("PATCH", `/posts/${viaRest.postId}`, changes);
    const updatedTool = await tool("update_post", { postId: viaTool.postId, ...changes });
    expect(withoutIdentity(updatedTool)).toEqual(withoutIdentity(updatedRest));

    // The same post read through each door.
    expect(await tool("get_post", { postId: viaRest.postId })).toEqual(await restOk("GET", `/posts/${viaRest.postId}`));
    expect(await tool("list_posts", { brandId: brand.brandId })).toEqual(
      await restOk("GET", `/posts?brandId=${brand.brandId}`),
    );
    // Moves: submit on both, then schedule, which both refuse the same way while approval is pending.
    const submittedRest = await restOk("POST", `/posts/${viaRest.postId}/submit`, {});
    const submittedTool = await tool("submit_post", { postId: viaTool.postId });
    expect(withoutIdentity(submittedTool)).toEqual(withoutIdentity(submittedRest));
    expect(submittedTool.state).toBe("pending_approval");
    await expectSameRefusal(
      "POST",
      `/posts/${viaRest.postId}/schedule`,
      { scheduledAt: "2027-04-01T10:00" },
      "schedule_post",
      { postId: viaRest.postId, scheduledAt: "2027-04-01T10:00" },
    );
  });

  it("refuses the same invalid inputs with the same code and message", async () => {
    const brand = await restOk("POST", "/brands", { name: "Parité refus", timeZone: "Europe/Paris" });
    const six = ["webhook", "mastodon", "webhook", "mastodon", "webhook", "mastodon"];
    const tooMany = await expectSameRefusal(
      "POST",
      "/posts",
      { brandId: brand.brandId, text: "x", networks: six },
      "create_post",
      { brandId: brand.brandId, text: "x", networks: six },
    );
    expect(tooMany).toMatchObject({ code: "invalid_request", message: expect.stringMatching(/^networks: /) });

    const emptyZone = await expectSameRefusal(
      "POST",
      "/brands",
      { name: "Sans fuseau", timeZone: "" },
      "create_brand",
      { name: "Sans fuseau", timeZone: "" },
    );
    expect(emptyZone.message).toMatch(/^timeZone: /);
    await expectSameRefusal("PATCH", `/brands/${brand.brandId}`, { timeZone: "" }, "update_brand", {
      brandId: brand.brandId,
      timeZone: "",
    });

    const channels = Array.from({ length: 6 }, (_, i) => ({
      network: "webhook",
      url: `https://example.com/hooks/${i}`,
    }));
    await expectSameRefusal("POST", "/brands", { name: "Six", timeZone: "Europe/Paris", channels }, "create_brand", {
      name: "Six",
      timeZone: "Europe/Paris",
      channels,
    });
    // Refused by the services rather than the schema: an unknown zone, an unknown brand.
    await expectSameRefusal("POST", "/brands", { name: "Mars", timeZone: "Mars/Olympus" }, "create_brand", {
      name: "Mars",
      timeZone: "Mars/Olympus",
    });
    await expectSameRefusal("POST", "/posts", { brandId: "brd_unknown", text: "x" }, "create_post", {
      brandId: "brd_unknown",
      text: "x",
    });
    await expectSameRefusal("POST", "/posts", { brandId: brand.brandId, text: "" }, "create_post", {
      brandId: brand.brandId,
      text: "",
    });
    await expectSameRefusal("GET", "/posts/pst_unknown", undefined, "get_post", { postId: "pst_unknown" }, 404);
  });

  it("answers a tool call with the same job envelope and the job with the same status", async () => {
    const viaRest = await restOk("POST", "/text-to-speech", { text: "Bonjour" });
    const viaTool = await tool("text_to_speech", { text: "Bonjour" });
    expect(Object.keys(viaTool).sort()).toEqual(Object.keys(viaRest).sort());
    const { jobId: restJob, creditsRemaining: restLeft, ...restEnvelope } = viaRest;
    const { jobId: toolJob, creditsRemaining: toolLeft, ...toolEnvelope } = viaTool;
    expect(toolEnvelope).toEqual(restEnvelope);
    // The balance after each debit (the REST job may already have failed and been refunded).
    expect(Number.isInteger(toolLeft) && Number.isInteger(restLeft)).toBe(true);

    // This test server cannot speak: both jobs fail and are refunded, the same way.
    const restStatus = await restOk("GET", `/jobs/${restJob}?wait=50`);
    const toolStatus = await tool("get_job", { jobId: toolJob, waitSeconds: 50 });
    expect(restStatus.status).toMatch(/^(completed|failed)$/);
    const { jobId: _r, progress, result, ...restRest } = restStatus;
    const { jobId: _t, downloadUrl, filename, ...toolRest } = toolStatus;
    expect(toolRest).toEqual(restRest);
    expect(progress).toBeNull();
    expect(Boolean(downloadUrl)).toBe(Boolean(result));
    if (result) expect(filename).toBe(result.filename);

    // An unknown job is refused the same way; each door reads only its own jobs.
    await expectSameRefusal("GET", "/jobs/job_unknown", undefined, "get_job", { jobId: "job_unknown" }, 404);
    expect(toolError((await client.callTool({ name: "get_job", arguments: { jobId: restJob } })) as Result).code).toBe(
      "not_found",
    );
    expect((await rest("GET", `/jobs/${toolJob}`)).status).toBe(404);
  });

  it("saves, lists, prices, runs and deletes pipeline templates alike", async () => {
    const form = new FormData();
    form.append("file", new File([await fixtureBytes("tone.mp3")], "tone.mp3"));
    const stored = await call(
      "/api/v1/uploads",
      { method: "POST", headers: { authorization: `Bearer ${apiKey}` }, body: form },
      BASE,
    );
    expect(stored.status).toBe(200);
    const { uploadId } = (await stored.json()) as { uploadId: string };

    const input = {
      name: "Parité coupe",
      description: "Coupe puis nettoie",
      steps: [
        { tool: "trim", params: { start: "{{start}}", end: "{{end}}" } },
        { tool: "clean-audio", params: {} },
      ],
    };
    const viaRest = await restOk("POST", "/templates", input);
    const viaTool = await tool("save_template", input);
    const { templateId: restId, createdAt: _r, ...restTemplate } = viaRest;
    const { templateId: toolId, createdAt: _t, ...toolTemplate } = viaTool;
    expect(toolTemplate).toEqual(restTemplate);
    expect(await tool("list_templates")).toEqual(await restOk("GET", "/templates"));

    // The same template priced and run through each door: the same price, steps and envelope.
    const source = { templateId: restId, variables: { start: 0, end: 1 }, uploadId };
    expect(await tool("quote", source)).toEqual(await restOk("POST", "/quotes", source));
    const runRest = await restOk("POST", "/pipelines", source);
    const runTool = await tool("run_pipeline", { ...source, templateId: toolId });
    const { jobId: restJob, creditsRemaining: _rl, ...restEnvelope } = runRest;
    const { jobId: toolJob, creditsRemaining: _tl, ...toolEnvelope } = runTool;
    expect(toolEnvelope).toEqual(restEnvelope);
    const steps = (job: Json) => job.steps.map(({ tool, creditsUsed }: Json) => ({ tool, creditsUsed }));
    expect(steps(await tool("get_job", { jobId: toolJob }))).toEqual(steps(await restOk("GET", `/jobs/${restJob}`)));
    // Stopped here, refunded: running them is the runner's tests' work.
    await rest("POST", `/jobs/${restJob}/cancel`, {});
    await client.callTool({ name: "cancel_job", arguments: { jobId: toolJob } });

    // The same refusals: an unknown tool, a missing variable, a bad name, an unknown template.
    await expectSameRefusal("POST", "/pipelines", { steps: [{ tool: "upscale" }], uploadId }, "run_pipeline", {
      steps: [{ tool: "upscale" }],
      uploadId,
    });
    const missing = { templateId: restId, variables: { start: 0 }, uploadId };
    await expectSameRefusal("POST", "/pipelines", missing, "run_pipeline", missing);
    await expectSameRefusal("POST", "/quotes", missing, "quote", missing);
    const eleven = { name: "Onze", steps: Array.from({ length: 11 }, () => ({ tool: "convert" })) };
    await expectSameRefusal("POST", "/templates", eleven, "save_template", eleven);
    await expectSameRefusal("POST", "/templates", { ...input, name: " " }, "save_template", { ...input, name: " " });
    await expectSameRefusal(
      "DELETE",
      "/templates/tpl_unknown",
      undefined,
      "delete_template",
      { templateId: "tpl_unknown" },
      404,
    );

    const deletedRest = await restOk("DELETE", `/templates/${restId}`);
    const deletedTool = await tool("delete_template", { templateId: toolId });
    expect({ ...deletedTool, templateId: restId }).toEqual(deletedRest);
  });
});
