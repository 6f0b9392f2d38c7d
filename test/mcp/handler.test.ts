/**
 * `handleMcpRequest` called directly, as the OAuth-protected route calls it once the token is
 * checked: raw JSON-RPC for the handshake, then the official MCP client over a fetch function
 * that hands every request to the handler. The queue consumer and the Durable Object really
 * run, so a job goes from queued to completed and its download URL serves the result.
 */
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { handleMcpRequest, type McpProps } from "../../src/mcp/handler";
import {
  BASE,
  balanceOf,
  call,
  expectLedgerConsistent,
  fixtureBytes,
  newAccount,
  uploadFixture,
  type TestAccount,
} from "../helpers/api";
import { toolError } from "../helpers/mcp";
import { WebClient } from "../helpers/web";

type Result = {
  isError?: boolean;
  structuredContent?: Record<string, any>;
  content: { type: string; text?: string }[];
};

const MCP_URL = `${BASE}/api/mcp`;
const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };

/** A JSON-RPC answer: JSON, or one SSE event (2025-era clients get the SDK's legacy transport). */
async function answerOf<T>(response: Response): Promise<T> {
  const text = await response.text();
  if (!(response.headers.get("content-type") ?? "").startsWith("text/event-stream")) return JSON.parse(text) as T;
  const data = text.split("\n").filter((line) => line.startsWith("data:"));
  expect(data).toHaveLength(1);
  return JSON.parse(data[0].slice(5)) as T;
}

const rpc = (props: McpProps, body: unknown) =>
  handleMcpRequest(new Request(MCP_URL, { method: "POST", headers, body: JSON.stringify(body) }), env, props);

async function clientFor(
  account: TestAccount,
): Promise<{ callTool: (name: string, args?: Record<string, unknown>) => Promise<Result>; client: Client }> {
  const client = new Client({ name: "handler-test", version: "1.0.0" });
  const props: McpProps = { accountId: account.accountId, grantId: "grant-test", clientName: "Handler Test" };
  const transport = new StreamableHTTPClientTransport(new URL(MCP_URL), {
    fetch: (url, init) => handleMcpRequest(new Request(url, init), env, props),
  });
  await client.connect(transport);
  return { client, callTool: (name, args = {}) => client.callTool({ name, arguments: args }) as Promise<Result> };
}

async function ledgerRows(account: TestAccount) {
  return (
    await env.DB.prepare("SELECT id, kind, amount FROM ledger WHERE account_id = ? ORDER BY id")
      .bind(account.accountId)
      .all()
  ).results;
}

const mediaTools = [
  "subtitles",
  "transcribe",
  "clean_audio",
  "extract_audio",
  "convert",
  "merge",
  "watermark",
  "trim",
  "text_to_speech",
  "voice_change",
];

describe("handleMcpRequest", () => {
  it("answers initialize and tools/list as raw JSON-RPC, with schemas, descriptions, prices and hints", async () => {
    const account = await newAccount({ credits: 10 });
    const init = await rpc(
      { accountId: account.accountId },
      {
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
      },
    );
    expect(init.status).toBe(200);
    const hello = await answerOf<{
      result: { serverInfo: { name: string }; capabilities: { tools?: unknown }; instructions: string };
    }>(init);
    expect(hello.result.serverInfo.name).toBe("media-credits-api");
    // Stateless: no GET stream, so no list-changed notification is promised.
    expect(hello.result.capabilities.tools).toEqual({ listChanged: false });
    expect(hello.result.instructions).toContain("create_upload_link");

    const listed = await rpc(
      { accountId: account.accountId },
      { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} },
    );
    expect(listed.status).toBe(200);
    const { tools } = (await answerOf<{ result: { tools: any[] } }>(listed)).result;
    const byName = new Map(tools.map((t) => [t.name, t]));
    for (const name of [
      ...mediaTools,
      "upload_from_url",
      "create_upload_link",
      "get_upload_link",
      "get_job",
      "get_balance",
      "get_cloned_voice",
      "list_voices",
    ]) {
      expect(byName.has(name), name).toBe(true);
    }
    for (const tool of tools) {
      expect(tool.name).toMatch(/^[a-z]+(_[a-z]+)*$/);
      expect(tool.inputSchema.type).toBe("object");
      expect(tool.outputSchema?.type, tool.name).toBe("object");
      expect(tool.description.length).toBeGreaterThan(40);
    }
    for (const name of mediaTools) {
      const tool = byName.get(name);
      expect(tool.description, name).toMatch(/Cost: .*credits|Cost: free/);
      expect(tool.inputSchema.properties, name).toHaveProperty("idempotencyKey");
      expect(tool.outputSchema.properties, name).toMatchObject({
        jobId: {},
        status: {},
        creditsUsed: {},
        creditsRemaining: {},
        estimatedSeconds: {},
      });
      expect(tool.annotations, name).toMatchObject({
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
      });
    }
    const extract = byName.get("extract_audio");
    expect(extract.description).toContain("3 credits per call");
    expect(extract.inputSchema.required).toEqual(["uploadId"]);
    expect(extract.inputSchema.properties.format).toMatchObject({ enum: ["mp3", "wav", "aac"], default: "mp3" });
    // Choices of whole numbers are integers, as in the OpenAPI document.
    expect(byName.get("subtitles").inputSchema.properties.captionWords).toMatchObject({
      type: "integer",
      enum: [1, 2, 4],
      default: 4,
    });
    expect(byName.get("watermark").inputSchema.properties.interval).toMatchObject({
      type: "integer",
      enum: [3, 5, 8],
      default: 5,
    });
    expect(byName.get("text_to_speech").inputSchema.properties.text).toMatchObject({
      type: "string",
      minLength: 1,
      maxLength: 100_000,
    });
    expect(byName.get("merge").description).toMatch(
      /per minute, pro rata .* The seconds billed are the inputs. durations added up\./,
    );
    // Field help comes from the registry's documentation, worded for an assistant.
    expect(extract.inputSchema.properties.uploadId.description).toContain("upload_from_url");
    expect(byName.get("trim").description).toMatch(/For example \d+ credits for 10 minutes/);
    for (const name of ["get_job", "get_balance", "get_cloned_voice", "list_voices", "get_upload_link"]) {
      expect(byName.get(name).annotations, name).toMatchObject({ readOnlyHint: true, idempotentHint: true });
    }
    expect(byName.get("create_upload_link").annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false });
    // Post moves: only schedule takes a time; cancel ends a post for good.
    expect(Object.keys(byName.get("schedule_post").inputSchema.properties).sort()).toEqual(["postId", "scheduledAt"]);
    for (const name of ["submit_post", "unschedule_post", "cancel_post"])
      expect(Object.keys(byName.get(name).inputSchema.properties), name).toEqual(["postId"]);
    expect(byName.get("cancel_post").annotations).toMatchObject({ destructiveHint: true });
    // Scheduling publishes to outside networks; the other post moves stay inside the service.
    expect(byName.get("schedule_post").annotations).toMatchObject({ openWorldHint: true });
    expect(byName.get("submit_post").annotations).toMatchObject({ openWorldHint: false });
    expect(byName.get("delete_post").annotations).toMatchObject({ destructiveHint: true });
    expect(byName.get("delete_brand").annotations).toMatchObject({ destructiveHint: true });
  });

  it("runs extract_audio on an upload: queued and debited, then get_job until completed with an absolute download URL", async () => {
    const account = await newAccount({ credits: 10 });
    const upload = await uploadFixture(account, "clip.mp4");
    const { callTool } = await clientFor(account);

    const started = await callTool("extract_audio", { uploadId: upload.uploadId, format: "mp3" });
    expect(started.isError, started.content[0].text).toBeFalsy();
    expect(started.structuredContent).toMatchObject({ status: "queued", creditsUsed: 3, creditsRemaining: 7 });
    expect(started.structuredContent!.estimatedSeconds).toBeGreaterThanOrEqual(1);
    expect(await balanceOf(account)).toBe(7);

    const jobId = started.structuredContent!.jobId as string;
    let job: Result;
    const deadline = Date.now() + 60_000;
    for (;;) {
      job = await callTool("get_job", { jobId });
      expect(job.isError, job.content[0].text).toBeFalsy();
      if (["completed", "failed"].includes(job.structuredContent!.status)) break;
      if (Date.now() > deadline) throw new Error(`job still ${job.structuredContent!.status}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(job.structuredContent).toMatchObject({ jobId, status: "completed", filename: "clip.mp3" });
    const downloadUrl = job.structuredContent!.downloadUrl as string;
    expect(downloadUrl).toMatch(new RegExp(`^${BASE}/api/download/[A-Za-z0-9_-]+$`));
    const download = await call(downloadUrl);
    expect(download.status).toBe(200);
    expect(download.headers.get("content-type")).toBe("audio/mpeg");
    expect((await download.arrayBuffer()).byteLength).toBeGreaterThan(1000);

    const balance = await callTool("get_balance");
    expect(balance.structuredContent).toMatchObject({
      balance: 7,
      planCredits: 0,
      purchasedCredits: 7,
      plan: "payg",
      planRenewsAt: null,
    });
    await expectLedgerConsistent(account);
  });

  it("refuses a call it cannot pay with the balance, the price and the billing page; nothing is debited", async () => {
    const account = await newAccount({ credits: 2 });
    const upload = await uploadFixture(account, "clip.mp4");
    const { callTool } = await clientFor(account);
    const before = await ledgerRows(account);
    const refused = toolError(await callTool("extract_audio", { uploadId: upload.uploadId }));
    expect(refused).toMatchObject({
      code: "insufficient_credits",
      balance: 2,
      required: 3,
      billingUrl: `${BASE}/app/billing`,
    });
    expect(refused.message).toContain(`${BASE}/app/billing`);
    expect(refused.message).toMatch(/3 credits.*balance is 2/);
    expect(await ledgerRows(account)).toEqual(before);
    await expectLedgerConsistent(account);
  });

  it("refuses invalid input with the field's name, as REST does, and charges nothing", async () => {
    const account = await newAccount({ credits: 50 });
    const upload = await uploadFixture(account, "clip.mp4");
    const { callTool } = await clientFor(account);
    const before = await ledgerRows(account);

    const badEnum = await callTool("extract_audio", { uploadId: upload.uploadId, format: "flac" });
    expect(badEnum.isError).toBe(true);
    expect(badEnum.content[0].text).toMatch(/format: /);
    const missing = await callTool("extract_audio", { format: "mp3" });
    expect(missing.isError).toBe(true);
    expect(missing.content[0].text).toContain("uploadId: Required");
    // A refinement of the registry schema (not only the field types) is checked too.
    const backwards = await callTool("trim", { uploadId: upload.uploadId, start: 2, end: 1 });
    expect(backwards.isError).toBe(true);
    expect(backwards.content[0].text).toContain("end: must be greater than start");
    // One message per field, its type error alone: a string is not also "too big" for an array of 20.
    const notAList = await callTool("merge", { uploadIds: upload.uploadId });
    expect(notAList.isError).toBe(true);
    expect(notAList.content[0].text).toContain("uploadIds: Invalid input: expected array, received string");
    expect(notAList.content[0].text).not.toMatch(/Too big/);
    // A valid SRT of 2,000,000 characters in CJK is 6 MB of JSON: read, not refused for its size.
    const longSrt = await callTool("subtitles", { uploadId: "upl_unknown", srtContent: "字".repeat(1_999_000) });
    expect(toolError(longSrt)).toMatchObject({
      code: "invalid_request",
      message: expect.stringMatching(/^uploadId: /),
    });
    const badKey = await callTool("extract_audio", { uploadId: upload.uploadId, idempotencyKey: "" });
    expect(badKey.isError).toBe(true);
    expect(badKey.content[0].text).toMatch(/idempotencyKey: /);
    // Checks that need the upload come from the same service as REST.
    const unknownUpload = toolError(await callTool("extract_audio", { uploadId: "upl_unknown" }));
    expect(unknownUpload).toMatchObject({ code: "invalid_request", message: expect.stringMatching(/^uploadId: /) });

    expect(await ledgerRows(account)).toEqual(before);
    expect(await balanceOf(account)).toBe(50);
  });

  it("applies the registry's defaults and replays an idempotency key without a second debit", async () => {
    const account = await newAccount({ credits: 20 });
    const upload = await uploadFixture(account, "clip.mp4");
    const { callTool } = await clientFor(account);
    const first = await callTool("extract_audio", { uploadId: upload.uploadId, idempotencyKey: "mcp-retry-1" });
    // format omitted = its default: the same request as spelling it out.
    const second = await callTool("extract_audio", {
      uploadId: upload.uploadId,
      format: "mp3",
      idempotencyKey: "mcp-retry-1",
    });
    expect(first.isError, first.content[0].text).toBeFalsy();
    expect(second.structuredContent).toEqual(first.structuredContent);
    expect(await balanceOf(account)).toBe(17);
  });

  it("hands out a one-time upload page; the posted file's uploadId is then readable by get_upload_link", async () => {
    const account = await newAccount({ credits: 10 });
    const { callTool } = await clientFor(account);
    const link = await callTool("create_upload_link");
    expect(link.isError, link.content[0].text).toBeFalsy();
    const { linkId, url, expiresAt } = link.structuredContent! as { linkId: string; url: string; expiresAt: string };
    expect(linkId).toMatch(/^ul_/);
    expect(url.startsWith(`${BASE}/`)).toBe(true);
    expect(Date.parse(expiresAt) - Date.now()).toBeGreaterThan(59 * 60_000);
    expect(Date.parse(expiresAt) - Date.now()).toBeLessThanOrEqual(3600_000);
    // Only the token's hash is stored.
    const token = new URL(url).pathname.split("/").pop()!;
    expect(
      await env.DB.prepare("SELECT COUNT(*) AS n FROM upload_links WHERE token_hash = ?").bind(token).first("n"),
    ).toBe(0);
    expect((await callTool("get_upload_link", { linkId })).structuredContent).toEqual({ status: "pending" });

    const person = new WebClient(BASE);
    const page = await person.get(new URL(url).pathname);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('type="file"');
    const form = new FormData();
    form.append("file", new File([await fixtureBytes("tone.mp3")], "tone.mp3"));
    // A cross-site post is refused (CSRF), and does not use the link up.
    expect((await person.post(new URL(url).pathname, form, "https://evil.example")).status).toBe(403);
    const uploaded = await person.post(new URL(url).pathname, form);
    expect(uploaded.status).toBe(303);
    const uploadId = (await (await person.get(uploaded.headers.get("location")!)).text()).match(/(upl_[0-9A-Z]+)/)![1];

    const status = await callTool("get_upload_link", { linkId });
    expect(status.structuredContent).toEqual({
      status: "uploaded",
      uploadId,
      filename: "tone.mp3",
      durationSeconds: expect.closeTo(3, 1),
      expiresIn: expect.toSatisfy((s: number) => s > 10_700 && s <= 10_800),
    });
    // Used: a second file is refused.
    expect((await person.post(new URL(url).pathname, form)).status).toBe(404);
    // The upload is the account's: a paid tool takes it.
    const job = await callTool("extract_audio", { uploadId });
    expect(job.isError, job.content[0].text).toBeFalsy();

    // Another account cannot read the link.
    const other = await clientFor(await newAccount({ credits: 0 }));
    // The error fits no output schema (get_upload_link's requires status): no structuredContent.
    expect(toolError(await other.callTool("get_upload_link", { linkId }))).toMatchObject({ code: "not_found" });
  });

  it("reads the voices and the cloned voice, and turns an unknown job into an isError result", async () => {
    const account = await newAccount({ credits: 0 });
    const { callTool } = await clientFor(account);
    const voices = await callTool("list_voices");
    expect((voices.structuredContent!.voices as { voice: string }[]).map((v) => v.voice)).toEqual([
      "lea",
      "camille",
      "thomas",
      "gilles",
    ]);
    const clone = await callTool("get_cloned_voice");
    expect(clone.isError).toBeFalsy();
    expect(clone.structuredContent).toEqual({ registered: false, manageUrl: `${BASE}/app/voice` });
    expect(toolError(await callTool("get_job", { jobId: "job_unknown" }))).toMatchObject({ code: "not_found" });
  });

  it("answers malformed grant props with a JSON-RPC error, not a throw", async () => {
    const response = await rpc({ accountId: "" }, { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} });
    expect(response.status).toBe(500);
    expect(((await response.json()) as { error: { code: number } }).error.code).toBe(-32603);
  });
});
