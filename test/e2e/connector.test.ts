/**
 * The connector as a person adds it to an assistant, end to end on `wrangler dev`: the official
 * MCP client gets a 401, follows it to the metadata, registers itself and sends the person to
 * /authorize; the person signs up and allows in a real browser (Debian chromium through
 * playwright-core); the client lists the tools, runs extract_audio on a URL upload and the
 * result is downloaded and probed; a call it cannot pay shows the billing page; a brand and a
 * post are created, approved by a client on the public page in the browser, and published to
 * the local Mastodon at their time, then counted. Screenshots in test-artifacts/screens.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  Client,
  StreamableHTTPClientTransport,
  UnauthorizedError,
  type OAuthClientProvider,
} from "@modelcontextprotocol/client";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ffprobe, untilMailed } from "./client";
import { eventually } from "../helpers/eventually";

const base = inject("e2eMainUrl");
const mastodon = inject("mastodonBaseUrl");
const fixtures = inject("fixtureBaseUrl");
const shots = path.resolve(import.meta.dirname, "../../test-artifacts/screens");

type Result = {
  isError?: boolean;
  structuredContent?: Record<string, any>;
  content: { type: string; text?: string }[];
};

/** What an assistant keeps between the steps of its OAuth connection. */
class AssistantAuth implements OAuthClientProvider {
  authorizationUrl?: URL;
  private client?: any;
  private saved?: any;
  private verifier = "";
  constructor(readonly redirectUrl: string) {}
  get clientMetadata() {
    return {
      client_name: "E2E Assistant",
      redirect_uris: [this.redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info: unknown) {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: unknown) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

let browser: Browser;
let callbackServer: Server;
let callbackUrl = "";

beforeAll(async () => {
  mkdirSync(shots, { recursive: true });
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  // The assistant's redirect target: a page on this machine, as a desktop client's.
  callbackServer = createServer((_req, res) =>
    res.writeHead(200, { "content-type": "text/plain" }).end("You can close this window."),
  );
  await new Promise<void>((resolve) => callbackServer.listen(0, "127.0.0.1", resolve));
  callbackUrl = `http://127.0.0.1:${(callbackServer.address() as AddressInfo).port}/callback`;
});

afterAll(async () => {
  await browser?.close();
  callbackServer?.close();
});

describe("assistant connector end to end", () => {
  it("connects by URL, runs a paid tool, refuses an unpaid one, and takes a post from draft to published", async () => {
    const mcpUrl = new URL(`${base}/api/mcp`);
    const auth = new AssistantAuth(callbackUrl);
    const first = new Client({ name: "e2e-assistant", version: "1.0.0" });
    await expect(
      first.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: auth })),
    ).rejects.toBeInstanceOf(UnauthorizedError);
    expect(auth.authorizationUrl?.pathname).toBe("/authorize");

    // The person: a new account, then the authorization page the assistant opened.
    const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    const email = `assistant${Date.now()}@example.com`;
    await page.goto(auth.authorizationUrl!.toString());
    await page.screenshot({ path: path.join(shots, "20-connector-sign-in.png"), fullPage: true });
    expect(await page.locator('input[name="email"]').count()).toBe(1);
    await page.goto(`${base}/app/signup`);
    await page.fill('input[name="email"]', email);
    await page.fill('input[name="password"]', "assistant password 1");
    await page.click('button[type="submit"]');
    await page.waitForURL(`${base}/app`);
    // Only a confirmed email connects an assistant: the person opens the mailed link first.
    await page.goto(auth.authorizationUrl!.toString());
    expect(await page.locator("h1").innerText()).toBe("Confirm your email first");
    // The mail leaves after the sign-up's answer: the outbox is read again until it is there.
    const mailed = page.locator(`div[data-mail-to="${email}"] a[href*="/app/verify/"]`);
    await untilMailed(page, `${base}/app/dev/outbox`, mailed);
    const confirm = await mailed.first().getAttribute("href");
    await page.goto(confirm!);
    await page.goto(auth.authorizationUrl!.toString());
    expect(await page.locator("h1").innerText()).toContain("E2E Assistant");
    expect(await page.getByTestId("redirect-host").innerText()).toContain("127.0.0.1");
    await page.screenshot({ path: path.join(shots, "21-connector-consent.png"), fullPage: true });
    const redirected = page.waitForURL((url) => url.toString().startsWith(callbackUrl));
    await page.click('button[value="approve"]');
    await redirected;
    const callback = new URL(page.url());
    const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: auth });
    await transport.finishAuth(callback.searchParams);

    const client = new Client({ name: "e2e-assistant", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: auth }));
    const call = (name: string, args: Record<string, unknown> = {}) =>
      client.callTool({ name, arguments: args }) as Promise<Result>;
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(
      expect.arrayContaining([
        "extract_audio",
        "upload_from_url",
        "get_job",
        "get_balance",
        "create_post",
        "create_approval_link",
      ]),
    );

    // A paid tool on a URL upload; the result downloaded and probed.
    const upload = await call("upload_from_url", { url: `${fixtures}/clip.mp4` });
    expect(upload.isError, upload.content[0].text).toBeFalsy();
    const started = await call("extract_audio", { uploadId: upload.structuredContent!.uploadId, format: "mp3" });
    expect(started.structuredContent).toMatchObject({ creditsUsed: 3, creditsRemaining: 97 });
    const job = await eventually(
      () => call("get_job", { jobId: started.structuredContent!.jobId }),
      (read) => ["completed", "failed"].includes(read.structuredContent!.status),
      { timeoutMs: 50_000, intervalMs: 250, what: "the job to end" },
    );
    expect(job.structuredContent!.status).toBe("completed");
    const file = path.join(tmpdir(), `connector-${Date.now()}.mp3`);
    writeFileSync(file, new Uint8Array(await (await fetch(job.structuredContent!.downloadUrl)).arrayBuffer()));
    const probe = ffprobe(file);
    expect(probe.streams[0].codec_name).toBe("mp3");
    expect(Math.abs(Number(probe.format.duration) - 2.5)).toBeLessThan(0.2);

    // A call the balance cannot pay.
    const refused = await call("text_to_speech", { text: "long ".repeat(10_000) });
    expect(refused.isError).toBe(true);
    // An error fits no output schema: its data is JSON text, with no structuredContent.
    expect(refused.structuredContent).toBeUndefined();
    expect(JSON.parse(refused.content[0].text!)).toMatchObject({
      code: "insufficient_credits",
      balance: 97,
      required: 250,
      billingUrl: `${base}/app/billing`,
    });

    // A brand, a post with the clip, approval by the client in the browser, publication at its time.
    const brand = await call("create_brand", {
      name: "Studio Nord",
      timeZone: "Europe/Paris",
      requiresApproval: true,
      channels: [{ network: "mastodon", instanceUrl: mastodon, accessToken: "mastodon-test-token" }],
    });
    const post = await call("create_post", {
      brandId: brand.structuredContent!.brandId,
      text: `Teaser ${Date.now()}`,
      media: { uploadId: upload.structuredContent!.uploadId },
    });
    const postId = post.structuredContent!.postId;
    // The assistant sees the preflight of the post's media too: an H.264/AAC MP4 Mastodon takes.
    expect(post.structuredContent!.preflight).toEqual({ findings: [] });
    await call("submit_post", { postId });
    const link = await call("create_approval_link", { postId });
    const reviewer = await browser.newPage({ viewport: { width: 390, height: 844 }, isMobile: true });
    await reviewer.goto(link.structuredContent!.url);
    expect(await reviewer.getByTestId("post-preview").innerText()).toContain("Teaser");
    expect(await reviewer.locator("video").count()).toBe(1);
    await reviewer.screenshot({ path: path.join(shots, "22-review-page.png"), fullPage: true });
    await reviewer.fill('input[name="reviewerName"]', "Inès");
    await reviewer.click('button[value="approve"]');
    await reviewer.waitForSelector(".notice.ok");
    expect(await reviewer.getByTestId("post-state").innerText()).toBe("approved");
    await reviewer.close();

    await call("schedule_post", { postId, scheduledAt: new Date(Date.now() + 2000).toISOString() });
    const state = await eventually(
      async () => (await call("get_post", { postId })).structuredContent!.state,
      (read) => read === "published",
      {
        timeoutMs: 30_000,
        intervalMs: 250,
        what: "the post published",
      },
    );
    expect(state).toBe("published");
    const statuses = (await (await fetch(`${mastodon}/_test/statuses`)).json()) as {
      content: string;
      media_attachments: unknown[];
    }[];
    const mine = statuses.filter((s) => s.content.includes(post.structuredContent!.text));
    expect(mine).toHaveLength(1);
    expect(mine[0].media_attachments).toHaveLength(1);
    const stats = await call("get_brand_stats", { brandId: brand.structuredContent!.brandId });
    expect(stats.structuredContent).toMatchObject({
      postsByState: { published: 1 },
      publishedByNetwork: { mastodon: 1 },
      approval: { reviewed: 1 },
    });

    await page.goto(`${base}/app/posts`);
    expect(await page.locator(`tr[data-post-id="${postId}"]`).innerText()).toContain("Inès");
    await page.screenshot({ path: path.join(shots, "23-posts-page.png"), fullPage: true });
    await page.goto(`${base}/app/connected`);
    expect(await page.locator("tbody").innerText()).toContain("E2E Assistant");
    await page.screenshot({ path: path.join(shots, "24-connected-apps.png"), fullPage: true });
    await page.close();
  });
});
