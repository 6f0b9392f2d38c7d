/**
 * The connector's tools through the official MCP client, after a real OAuth connection: the
 * same validation, prices, 402 data and job flow as REST, results downloadable by URL.
 */
import { env } from "cloudflare:workers";
import { parseBuffer } from "music-metadata";
import { beforeAll, describe, expect, it } from "vitest";
import { ADMIN, call, postJson } from "../helpers/api";
import { BASE, connect, mcpClient, toolError } from "../helpers/mcp";
import { expectLedgerMatches, ledgerOf, WebClient } from "../helpers/web";
import { inject } from "vitest";

type Result = {
  isError?: boolean;
  structuredContent?: Record<string, any>;
  content: { type: string; text?: string }[];
};

let client: Awaited<ReturnType<typeof mcpClient>>;
let accountId: string;

const callTool = (name: string, args: Record<string, unknown> = {}) =>
  client.callTool({ name, arguments: args }) as Promise<Result>;

beforeAll(async () => {
  const connection = await connect("MCP test client");
  accountId = connection.person.accountId;
  client = await mcpClient(connection.tokens.access_token);
});

describe("MCP tools", () => {
  it("lists the ten media tools from the registry, plus uploads, jobs, balance and voices, with schemas and hints", async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const name of [
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
      "upload_from_url",
      "get_job",
      "get_balance",
      "list_voices",
    ]) {
      expect(names).toContain(name);
    }
    for (const tool of tools) {
      expect(tool.name).toMatch(/^[a-z]+(_[a-z]+)*$/);
      expect(tool.description!.length).toBeGreaterThan(40);
      expect(tool.inputSchema.type).toBe("object");
    }
    const extract = tools.find((t) => t.name === "extract_audio")!;
    expect(extract.description).toContain("3 credits per call");
    expect(extract.inputSchema.properties).toHaveProperty("format");
    expect(extract.outputSchema?.properties).toHaveProperty("jobId");
    expect(extract.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false, idempotentHint: false });
    expect(tools.find((t) => t.name === "get_balance")!.annotations).toMatchObject({ readOnlyHint: true });
  });

  it("uploads from a URL, runs extract_audio, and gives an absolute download URL that serves the MP3", async () => {
    const upload = await callTool("upload_from_url", { url: `${env.FIXTURE_BASE_URL}/clip.mp4` });
    // Tests run without ALLOW_PRIVATE_URLS: the loopback fixture server is refused, as any private address.
    expect(upload.isError).toBe(true);
    expect(upload.content[0].text).toMatch(/url/i);
    // Upload through REST instead (same account) and go on through the connector.
    const key = (await (
      await call(`/api/admin/accounts/${accountId}/keys`, { method: "POST", headers: ADMIN })
    ).json()) as { apiKey: string };
    const form = new FormData();
    form.append(
      "file",
      new File([new Uint8Array(await (await fetch(`${env.FIXTURE_BASE_URL}/clip.mp4`)).arrayBuffer())], "clip.mp4"),
    );
    const stored = (await (
      await call("/api/v1/uploads", { method: "POST", headers: { authorization: `Bearer ${key.apiKey}` }, body: form })
    ).json()) as { uploadId: string };

    const started = await callTool("extract_audio", { uploadId: stored.uploadId, format: "mp3" });
    expect(started.isError, started.content[0].text).toBeFalsy();
    expect(started.structuredContent).toMatchObject({ status: "queued", creditsUsed: 3, creditsRemaining: 97 });
    const jobId = started.structuredContent!.jobId as string;
    // One call waits for the end: the runner answers it when it completes the job.
    const job = await callTool("get_job", { jobId, waitSeconds: 50 });
    expect(job.structuredContent).toMatchObject({ status: "completed", filename: "clip.mp3" });
    const url = job.structuredContent!.downloadUrl as string;
    expect(url.startsWith(`${BASE}/api/download/`)).toBe(true);
    const download = await call(url);
    expect(download.headers.get("content-type")).toBe("audio/mpeg");
    const bytes = new Uint8Array(await download.arrayBuffer());
    const meta = await parseBuffer(bytes, { mimeType: "audio/mpeg" }, { duration: true });
    expect(meta.format.codec).toMatch(/MPEG 1 Layer 3/);
    expect(Math.abs(meta.format.duration! - 2.5)).toBeLessThan(0.15);
    // The job belongs to the connector: a REST key of the same account does not see it.
    expect((await call(`/api/v1/jobs/${jobId}`, { headers: { authorization: `Bearer ${key.apiKey}` } })).status).toBe(
      404,
    );
  });

  it("refuses invalid input naming the field, and charges nothing", async () => {
    const before = await ledgerOf(accountId);
    const bad = await callTool("trim", { uploadId: "upl_unknown", start: 5, end: 2 });
    expect(bad.isError).toBe(true);
    expect(bad.structuredContent).toBeUndefined();
    expect(bad.content[0].text).toMatch(/end/);
    expect(toolError(await callTool("convert", { uploadId: "upl_unknown", format: "mp4" }))).toMatchObject({
      code: "invalid_request",
      message: expect.stringMatching(/^uploadId/),
    });
    const overlong = await callTool("get_job", { jobId: "job_unknown", waitSeconds: 51 });
    expect(overlong.isError).toBe(true);
    expect(overlong.content[0].text).toMatch(/waitSeconds/);
    expect(await ledgerOf(accountId)).toEqual(before);
  });

  it("answers a call it cannot pay with the balance, the price and the billing page", async () => {
    const text = "x".repeat(50_000);
    const refused = toolError(await callTool("text_to_speech", { text }));
    expect(refused).toMatchObject({ code: "insufficient_credits", required: 250, billingUrl: `${BASE}/app/billing` });
    expect(typeof refused.balance).toBe("number");
    expect(refused.message).toContain("/app/billing");
    await expectLedgerMatches(accountId);
  });

  it("reads the balance with its buckets and the voices", async () => {
    await postJson(`/api/admin/accounts/${accountId}/credits`, { amount: 500, reason: "test" }, ADMIN);
    const balance = await callTool("get_balance");
    expect(balance.structuredContent).toMatchObject({
      plan: "payg",
      planCredits: 0,
      billingUrl: `${BASE}/app/billing`,
    });
    expect(balance.structuredContent!.balance).toBe(balance.structuredContent!.purchasedCredits);
    const voices = await callTool("list_voices");
    expect((voices.structuredContent!.voices as { voice: string }[]).map((v) => v.voice)).toEqual([
      "lea",
      "camille",
      "thomas",
      "gilles",
    ]);
  });

  it("replays an idempotent call without a second debit", async () => {
    const first = await callTool("text_to_speech", { text: "Bonjour", idempotencyKey: "same-call" });
    const second = await callTool("text_to_speech", { text: "Bonjour", idempotencyKey: "same-call" });
    expect(first.isError, first.content[0].text).toBeFalsy();
    expect(second.structuredContent!.jobId).toBe(first.structuredContent!.jobId);
    const debits = (await ledgerOf(accountId)).filter(
      (e) => e.kind === "debit" && e.job_id === first.structuredContent!.jobId,
    );
    expect(debits).toHaveLength(1);
  });

  it("manages a brand and a post through approval to publication, for free", async () => {
    const debits = async () => (await ledgerOf(accountId)).filter((e) => e.kind === "debit").length;
    const before = await debits();
    const brand = await callTool("create_brand", {
      name: "Café Lumière",
      timeZone: "Europe/Paris",
      requiresApproval: true,
      channels: [{ network: "mastodon", instanceUrl: inject("mastodonBaseUrl"), accessToken: "mastodon-test-token" }],
    });
    expect(brand.isError, brand.content[0].text).toBeFalsy();
    const brandId = brand.structuredContent!.brandId as string;
    const post = await callTool("create_post", { brandId, text: "Ouverture samedi ☕" });
    const postId = post.structuredContent!.postId as string;
    const early = toolError(
      await callTool("schedule_post", { postId, scheduledAt: new Date(Date.now() + 1000).toISOString() }),
    );
    expect(early).toMatchObject({ code: "invalid_request", message: expect.stringMatching(/state draft/) });
    expect((await callTool("submit_post", { postId })).structuredContent!.state).toBe("pending_approval");
    const link = await callTool("create_approval_link", { postId });
    const reviewer = new WebClient();
    const path = new URL(link.structuredContent!.url as string).pathname;
    expect((await reviewer.post(path, { decision: "approve", reviewerName: "Élodie" })).status).toBe(303);
    const approved = await callTool("get_post", { postId });
    expect(approved.structuredContent).toMatchObject({
      state: "approved",
      reviews: [{ decision: "approved", reviewerName: "Élodie" }],
    });
    await callTool("schedule_post", { postId, scheduledAt: new Date(Date.now() + 800).toISOString() });
    let state = "";
    for (let i = 0; i < 100 && state !== "published"; i++) {
      state = (await callTool("get_post", { postId })).structuredContent!.state as string;
      if (state !== "published") await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(state).toBe("published");
    const stats = await callTool("get_brand_stats", { brandId });
    expect(stats.structuredContent).toMatchObject({
      postsByState: { published: 1 },
      publishedByNetwork: { mastodon: 1 },
      approval: { reviewed: 1 },
    });
    // Posts cost nothing: no debit was written for any of it.
    expect(await debits()).toBe(before);
  });

  it("gives a post's media as an absolute link that needs no key, ends with the media, and refuses a forged one", async () => {
    const key = (await (
      await call(`/api/admin/accounts/${accountId}/keys`, { method: "POST", headers: ADMIN })
    ).json()) as { apiKey: string };
    const bytes = new Uint8Array(await (await fetch(`${env.FIXTURE_BASE_URL}/logo.png`)).arrayBuffer());
    const form = new FormData();
    form.append("file", new File([bytes], "logo.png"));
    const stored = (await (
      await call("/api/v1/uploads", { method: "POST", headers: { authorization: `Bearer ${key.apiKey}` }, body: form })
    ).json()) as { uploadId: string };
    const brand = await callTool("create_brand", { name: "Vitrine", timeZone: "Europe/Paris" });
    const post = await callTool("create_post", {
      brandId: brand.structuredContent!.brandId,
      text: "Nouveau logo",
      media: { uploadId: stored.uploadId },
    });
    expect(post.isError, post.content[0].text).toBeFalsy();
    const url = post.structuredContent!.media.url as string;
    expect(url.startsWith(`${BASE}/api/post-media/`)).toBe(true);
    // No Authorization header: solo and starter accounts have no REST key to send.
    const served = await call(new URL(url).pathname);
    expect(served.status).toBe(200);
    expect(served.headers.get("content-type")).toBe("image/png");
    expect(served.headers.get("content-disposition")).toBe('attachment; filename="logo.png"');
    expect(new Uint8Array(await served.arrayBuffer())).toEqual(bytes);
    expect((await call(new URL(url).pathname, { method: "HEAD" })).headers.get("content-length")).toBe(
      String(bytes.byteLength),
    );
    // get_post and list_posts hand out the same kind of link.
    expect(
      (await callTool("get_post", { postId: post.structuredContent!.postId })).structuredContent!.media.url,
    ).toMatch(/\/api\/post-media\//);

    const forged = await call(`${new URL(url).pathname.slice(0, -4)}AAAA`);
    expect(forged.status).toBe(404);
    expect(((await forged.json()) as { error: { code: string } }).error.code).toBe("not_found");
    // Removing the media ends its links.
    await callTool("update_post", { postId: post.structuredContent!.postId, media: null });
    expect((await call(new URL(url).pathname)).status).toBe(404);
  });

  it("lists, edits, unschedules, cancels and deletes brands, posts and links, each answer matching its output schema", async () => {
    const use = async (name: string, args: Record<string, unknown>) => {
      const result = await callTool(name, args);
      expect(result.isError, `${name}: ${result.content[0].text}`).toBeFalsy();
      return result.structuredContent as Record<string, any>;
    };
    const brand = await use("create_brand", {
      name: "Atelier",
      timeZone: "America/New_York",
      channels: [{ network: "mastodon", instanceUrl: inject("mastodonBaseUrl"), accessToken: "mastodon-test-token" }],
    });
    expect((await use("list_brands", {})).brands.map((b: any) => b.brandId)).toContain(brand.brandId);
    expect(await use("update_brand", { brandId: brand.brandId, name: "Atelier Nord" })).toMatchObject({
      name: "Atelier Nord",
      requiresApproval: false,
    });
    const post = await use("create_post", { brandId: brand.brandId, text: "Bientôt" });
    expect(
      await use("update_post", { postId: post.postId, text: "Demain", scheduledAt: "2027-01-15T09:00" }),
    ).toMatchObject({ text: "Demain", scheduledAtLocal: "2027-01-15T09:00", scheduledAt: "2027-01-15T14:00:00.000Z" });
    expect((await use("schedule_post", { postId: post.postId })).state).toBe("scheduled");
    expect((await use("unschedule_post", { postId: post.postId })).state).toBe("draft");
    expect(
      (await use("list_posts", { brandId: brand.brandId, state: "draft" })).posts.map((p: any) => p.postId),
    ).toEqual([post.postId]);
    expect((await use("submit_post", { postId: post.postId })).state).toBe("pending_approval");
    const link = await use("create_approval_link", { postId: post.postId });
    expect(await use("revoke_approval_link", { linkId: link.linkId })).toEqual({ linkId: link.linkId, revoked: true });
    expect((await use("cancel_post", { postId: post.postId })).state).toBe("cancelled");
    expect(await use("delete_post", { postId: post.postId })).toEqual({ postId: post.postId, deleted: true });
    expect((await use("list_posts", { brandId: brand.brandId })).posts).toEqual([]);
    // A brand goes with its posts; while one is scheduled, the tool says what to do first.
    const planned = await use("create_post", {
      brandId: brand.brandId,
      text: "Plus tard",
      scheduledAt: "2027-02-01T09:00",
    });
    await use("schedule_post", { postId: planned.postId });
    const refused = toolError(await callTool("delete_brand", { brandId: brand.brandId }));
    expect(refused.message).toMatch(/1 scheduled post; unschedule or cancel it first/);
    await use("unschedule_post", { postId: planned.postId });
    expect(await use("delete_brand", { brandId: brand.brandId })).toEqual({ brandId: brand.brandId, deleted: true });
    expect((await use("list_brands", {})).brands.map((b: any) => b.brandId)).not.toContain(brand.brandId);
    expect((await callTool("get_post", { postId: planned.postId })).isError).toBe(true);
  });

  it("refuses to schedule or submit a post for a network the brand no longer publishes to", async () => {
    const brand = await callTool("create_brand", {
      name: "Sans canal",
      timeZone: "Europe/Paris",
      channels: [{ network: "mastodon", instanceUrl: inject("mastodonBaseUrl"), accessToken: "mastodon-test-token" }],
    });
    const brandId = brand.structuredContent!.brandId as string;
    const post = await callTool("create_post", {
      brandId,
      text: "Plus de Mastodon",
      networks: ["mastodon"],
      scheduledAt: "2027-03-01T09:00",
    });
    expect(post.isError, post.content[0].text).toBeFalsy();
    expect((await callTool("update_brand", { brandId, channels: [] })).isError).toBeFalsy();
    for (const name of ["schedule_post", "submit_post"]) {
      const refused = toolError(await callTool(name, { postId: post.structuredContent!.postId }));
      expect(refused).toMatchObject({
        code: "invalid_request",
        message: expect.stringMatching(/^networks: the brand does not publish to mastodon \(it has: none\)/),
      });
    }
  });

  it("connects a Bluesky account, publishes to it, and refuses a text over its 300 graphemes", async () => {
    const { tools } = await client.listTools();
    const createBrand = JSON.stringify(tools.find((t) => t.name === "create_brand")!.inputSchema);
    expect(createBrand).toContain('"bluesky"');
    expect(JSON.stringify(tools.find((t) => t.name === "create_post")!.inputSchema)).toContain('"bluesky"');
    const brand = await callTool("create_brand", {
      name: "Ciel",
      timeZone: "Europe/Paris",
      channels: [
        {
          network: "bluesky",
          handle: "brand.test",
          appPassword: "test-bsky-app0-pass",
          serviceUrl: inject("blueskyBaseUrl"),
        },
      ],
    });
    expect(brand.isError, brand.content[0].text).toBeFalsy();
    expect(brand.structuredContent!.networks).toEqual([{ network: "bluesky", target: inject("blueskyBaseUrl") }]);
    const brandId = brand.structuredContent!.brandId as string;
    expect(toolError(await callTool("create_post", { brandId, text: "x".repeat(301) }))).toMatchObject({
      code: "invalid_request",
      message: expect.stringMatching(/^text: 301 characters as Bluesky counts them/),
    });
    const post = await callTool("create_post", { brandId, text: `Envolée ${Date.now()}`, networks: ["bluesky"] });
    expect(post.isError, post.content[0].text).toBeFalsy();
    const postId = post.structuredContent!.postId as string;
    await callTool("schedule_post", { postId, scheduledAt: "now" });
    let state = "";
    for (let i = 0; i < 100 && state !== "published"; i++) {
      state = (await callTool("get_post", { postId })).structuredContent!.state as string;
      if (state !== "published") await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(state).toBe("published");
    expect((await callTool("get_brand_stats", { brandId })).structuredContent).toMatchObject({
      publishedByNetwork: { bluesky: 1 },
    });
  });

  it("hands out a one-time upload page whose upload the assistant then reads", async () => {
    const link = await callTool("create_upload_link");
    expect(link.isError, link.content[0].text).toBeFalsy();
    const url = new URL(link.structuredContent!.url as string);
    expect((await callTool("get_upload_link", { linkId: link.structuredContent!.linkId })).structuredContent).toEqual({
      status: "pending",
    });
    const person = new WebClient(BASE);
    const page = await person.get(url.pathname);
    expect(await page.text()).toContain('type="file"');
    const form = new FormData();
    form.append(
      "file",
      new File([new Uint8Array(await (await fetch(`${env.FIXTURE_BASE_URL}/tone.mp3`)).arrayBuffer())], "tone.mp3"),
    );
    const uploaded = await person.post(url.pathname, form);
    // Redirected to the page, which now says the file arrived: a reload uploads nothing more.
    expect(uploaded.status).toBe(303);
    expect(uploaded.headers.get("location")).toBe(url.pathname);
    const done = await person.get(url.pathname);
    expect(done.status).toBe(200);
    const doneHtml = await done.text();
    expect(doneHtml).not.toContain('type="file"');
    const uploadId = doneHtml.match(/data-testid="upload-id">(upl_[0-9A-Z]+)</)![1];
    expect((await callTool("get_upload_link", { linkId: link.structuredContent!.linkId })).structuredContent).toEqual({
      status: "uploaded",
      uploadId,
      filename: "tone.mp3",
      durationSeconds: expect.closeTo(3, 1),
      expiresIn: expect.toSatisfy((s: number) => s > 10_700 && s <= 10_800),
    });
    const again = new FormData();
    again.append("file", new File([new Uint8Array(10)], "x.mp3"));
    expect((await person.post(url.pathname, again)).status).toBe(404);
    // The upload is the account's: the connector can use it.
    const job = await callTool("extract_audio", { uploadId, format: "wav" });
    expect(job.isError, job.content[0].text).toBeFalsy();
  });
});
