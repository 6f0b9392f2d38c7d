/**
 * Bluesky as a brand's network, against the local Bluesky (scripts/local-bluesky: a PDS's and the
 * AppView's XRPC calls, records checked against the lexicons of @atproto/api): the app password
 * sealed in D1, text, image and video posts as the PDS received them (record, facets, blobs,
 * embeds), one record per post under retries, engagement read back into the statistics, a wrong
 * app password or media Bluesky cannot carry failing the post with a clear error, and the
 * 300-grapheme limit refused when the post is written.
 */
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, inject, it } from "vitest";
import { bluesky, recordKey } from "../../src/services/social/bluesky";
import { publishOne } from "../../src/services/social/publishing";
import { call, fixtureBytes, newAccount, uploadFixture, type TestAccount } from "../helpers/api";
import { eventually } from "../helpers/eventually";

const pds = inject("blueskyBaseUrl");
const appPassword = "test-bsky-app0-pass";
let account: TestAccount;

type Record_ = { uri: string; cid: string; rkey: string; record: any; counts: Record<string, number> };
type Blob_ = { cid: string; mimeType: string; size: number; sha256: string };

const api = (path: string, init: RequestInit = {}) =>
  call(path, { ...init, headers: { ...account.auth, "content-type": "application/json", ...(init.headers ?? {}) } });
const json = async <T = any>(response: Response, status = 200): Promise<T> => {
  const body = await response.json();
  expect(response.status, JSON.stringify(body)).toBe(status);
  return body as T;
};
const uid = () => Math.random().toString(36).slice(2, 10);
const records = async () => (await (await fetch(`${pds}/_test/records`)).json()) as Record_[];
const blobs = async () => (await (await fetch(`${pds}/_test/blobs`)).json()) as Blob_[];
const sessions = async () => ((await (await fetch(`${pds}/_test/sessions`)).json()) as { sessions: number }).sessions;
const sha256 = async (bytes: Uint8Array) =>
  [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))]
    .map((b) => b.toString(16).padStart(2, "0"))
    .join("");

async function brand(channel: Record<string, unknown> = {}) {
  return json(
    await api("/api/v1/brands", {
      method: "POST",
      body: JSON.stringify({
        name: `Brand ${uid()}`,
        timeZone: "Europe/Paris",
        requiresApproval: false,
        channels: [{ network: "bluesky", handle: "brand.test", appPassword, serviceUrl: pds, ...channel }],
      }),
    }),
  );
}

/** A post scheduled now, followed through the brand's alarm and the publish queue to its end. */
async function publishNow(brandId: string, text: string, media?: { uploadId: string }) {
  const post = await json(
    await api("/api/v1/posts", { method: "POST", body: JSON.stringify({ brandId, text, media }) }),
  );
  await json(
    await api(`/api/v1/posts/${post.postId}/schedule`, {
      method: "POST",
      body: JSON.stringify({ scheduledAt: "now" }),
    }),
  );
  return eventually(
    async () => json(await api(`/api/v1/posts/${post.postId}`)),
    (p) => p.state === "published" || p.state === "failed",
    { what: "the post published or failed" },
  );
}

const recordOf = async (post: { deliveries: { url: string | null }[] }) => {
  const rkey = post.deliveries[0]!.url!.split("/").pop();
  const found = (await records()).filter((r) => r.rkey === rkey);
  expect(found).toHaveLength(1);
  return found[0]!;
};

beforeEach(async () => {
  account = await newAccount({ credits: 100 });
});

describe("Bluesky", () => {
  it("connects an account with an app password, sealed in D1 and shown nowhere; checks the service URL", async () => {
    const b = await brand({ handle: "@Brand.Test" });
    expect(b.networks).toEqual([{ network: "bluesky", target: pds }]);
    const row = await env.DB.prepare("SELECT config FROM brand_channels WHERE brand_id = ? AND network = 'bluesky'")
      .bind(b.brandId)
      .first<{ config: string }>();
    const stored = JSON.parse(row!.config);
    expect(stored).toMatchObject({ handle: "brand.test", serviceUrl: pds });
    expect(stored.appPassword).toMatch(/^v1:[A-Za-z0-9+/]+=*:[A-Za-z0-9+/]+=*$/);
    expect(row!.config).not.toContain(appPassword);
    expect(JSON.stringify(b)).not.toContain(appPassword);
    expect(JSON.stringify(await json(await api("/api/v1/brands")))).not.toContain(appPassword);

    // Without a service URL, the account is on bsky.social.
    const hosted = await brand({ serviceUrl: undefined });
    expect(hosted.networks).toEqual([{ network: "bluesky", target: "https://bsky.social" }]);

    // The account's own password is refused (an app password has its shape), and so is plain http off loopback.
    for (const [channel, message] of [
      [{ appPassword: "my real password" }, /^channels\.0\.appPassword: an app password, xxxx-xxxx-xxxx-xxxx/],
      [{ handle: "not a handle" }, /^channels\.0\.handle: a handle \(brand\.bsky\.social\) or a DID/],
      [{ serviceUrl: "http://pds.example.com" }, /^channels\.0\.serviceUrl: only https URLs are accepted/],
    ] as const) {
      const refused = await api("/api/v1/brands", {
        method: "POST",
        body: JSON.stringify({
          name: "Refused",
          timeZone: "Europe/Paris",
          channels: [
            Object.assign({ network: "bluesky", handle: "brand.test", appPassword, serviceUrl: pds }, channel),
          ],
        }),
      });
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as any).error.message).toMatch(message);
    }
  });

  it("publishes a text with its links and tags as facets, at a record key of its own", async () => {
    const b = await brand();
    const text = `Nouveau site ${uid()} https://example.com/news #lancement`;
    const published = await publishNow(b.brandId, text);
    expect(published.state).toBe("published");
    const mine = await recordOf(published);
    const did = mine.uri.split("/")[2];
    expect(published.deliveries).toEqual([
      expect.objectContaining({
        network: "bluesky",
        status: "sent",
        url: `https://bsky.app/profile/${did}/post/${mine.rkey}`,
        attempts: 1,
      }),
    ]);
    expect(mine.rkey).toBe(await recordKey(published.postId, Date.parse(published.scheduledAt)));
    expect(mine.record).toMatchObject({ $type: "app.bsky.feed.post", text, createdAt: published.scheduledAt });
    expect(mine.record.embed).toBeUndefined();
    const bytes = (s: string) => new TextEncoder().encode(s).length;
    const at = (part: string) => ({
      byteStart: bytes(text.slice(0, text.indexOf(part))),
      byteEnd: bytes(text.slice(0, text.indexOf(part) + part.length)),
    });
    expect(mine.record.facets).toEqual([
      {
        index: at("https://example.com/news"),
        features: [{ $type: "app.bsky.richtext.facet#link", uri: "https://example.com/news" }],
      },
      { index: at("#lancement"), features: [{ $type: "app.bsky.richtext.facet#tag", tag: "lancement" }] },
    ]);
  });

  it("publishes an image and a video as blobs with their embeds, byte for byte", async () => {
    const b = await brand();
    for (const [fixture, mimeType, embed] of [
      ["logo.png", "image/png", "app.bsky.embed.images"],
      ["clip.mp4", "video/mp4", "app.bsky.embed.video"],
    ] as const) {
      const upload = await uploadFixture(account, fixture);
      const published = await publishNow(b.brandId, `Avec ${fixture} ${uid()}`, { uploadId: upload.uploadId });
      expect(published.state, published.failure).toBe("published");
      const mine = await recordOf(published);
      expect(mine.record.embed.$type).toBe(embed);
      const ref = embed === "app.bsky.embed.video" ? mine.record.embed.video : mine.record.embed.images[0].image;
      const source = await fixtureBytes(fixture);
      expect(ref).toEqual({ $type: "blob", ref: { $link: expect.any(String) }, mimeType, size: source.length });
      if (embed === "app.bsky.embed.images") expect(mine.record.embed.images[0].alt).toBe("");
      const blob = (await blobs()).find((x) => x.cid === ref.ref.$link);
      expect(blob).toEqual({ cid: ref.ref.$link, mimeType, size: source.length, sha256: await sha256(source) });
    }
  });

  it("writes one record per post when a publication is retried after a lost answer", async () => {
    const b = await brand();
    const post = await json(
      await api("/api/v1/posts", {
        method: "POST",
        body: JSON.stringify({ brandId: b.brandId, text: `Une fois ${uid()}` }),
      }),
    );
    const publication = {
      postId: post.postId,
      text: post.text,
      brand: { id: b.brandId, name: b.name, secret: b.webhookSecret },
      media: null,
      scheduledAt: new Date().toISOString(),
    };
    const config = { handle: "brand.test", appPassword, serviceUrl: pds };
    const policy = { allowPrivate: true };
    const first = await bluesky.publish(config, publication, policy);
    const again = await bluesky.publish(config, publication, policy);
    expect(again).toEqual(first);
    expect((await records()).filter((r) => r.uri === first.id)).toHaveLength(1);
    // Another text at that key is refused, never written over the post.
    await expect(bluesky.publish(config, { ...publication, text: "autre chose" }, policy)).rejects.toMatchObject({
      message: expect.stringMatching(/answered HTTP 400 InvalidSwap$/),
      retryable: false,
    });
    expect((await records()).find((r) => r.uri === first.id)!.record.text).toBe(post.text);
  });

  it("reads likes, replies, reposts and quotes back into the statistics, at most every 10 minutes", async () => {
    const b = await brand();
    const published = await publishNow(b.brandId, `Compté ${uid()}`);
    const mine = await recordOf(published);
    const engage = (counts: Record<string, number>) =>
      fetch(`${pds}/_test/posts/${mine.rkey}/engagement`, { method: "POST", body: JSON.stringify(counts) });
    await engage({ likeCount: 9, replyCount: 4, repostCount: 3, quoteCount: 2 });
    const stats = await json(await api(`/api/v1/brands/${b.brandId}/stats`));
    expect(stats.publishedByNetwork).toEqual({ bluesky: 1 });
    expect(stats.engagement.byNetwork.bluesky).toEqual({ views: 0, likes: 9, comments: 4, shares: 5 });
    expect(stats.engagement).toMatchObject({ views: 0, likes: 9, comments: 4, shares: 5 });

    // Read again at once: the counts as read, and no new session on the account.
    await engage({ likeCount: 20 });
    const opened = await sessions();
    expect((await json(await api(`/api/v1/brands/${b.brandId}/stats`))).engagement.byNetwork.bluesky.likes).toBe(9);
    expect(await sessions()).toBe(opened);
    // Ten minutes later, read from Bluesky again.
    await env.DB.prepare("UPDATE post_deliveries SET stats_updated_at = ? WHERE post_id = ?")
      .bind(Date.now() - 11 * 60_000, published.postId)
      .run();
    expect((await json(await api(`/api/v1/brands/${b.brandId}/stats`))).engagement.byNetwork.bluesky.likes).toBe(20);
  });

  it("fails the post at once, saying why, with a wrong app password; refuses media Bluesky does not carry before scheduling", async () => {
    const wrong = await brand({ appPassword: "aaaa-bbbb-cccc-dddd" });
    const before = (await records()).length;
    const refused = await publishNow(wrong.brandId, `Refusé ${uid()}`);
    expect(refused.state).toBe("failed");
    expect(refused.failure).toBe(
      `bluesky: ${new URL(pds).host} refused the handle or app password (HTTP 401 AuthenticationRequired); check both, or connect the channel again`,
    );
    expect(refused.deliveries).toEqual([
      expect.objectContaining({ network: "bluesky", status: "failed", attempts: 1 }),
    ]);
    expect((await records()).length).toBe(before);
    expect(await publishOne(env, refused.postId, "bluesky", Date.now())).toBe("skipped");

    const b = await brand();
    const audio = await uploadFixture(account, "tone.mp3");
    // The preflight (media-rules.ts) names it on the draft and refuses to schedule it: nothing reaches Bluesky.
    const sound = await json(
      await api("/api/v1/posts", {
        method: "POST",
        body: JSON.stringify({ brandId: b.brandId, text: `Son ${uid()}`, media: { uploadId: audio.uploadId } }),
      }),
    );
    const refusal = "Bluesky takes images, video (video/mp4), not audio/mpeg, or leave Bluesky out of networks.";
    expect(sound.preflight.findings).toEqual([{ network: "bluesky", rule: "type", message: refusal }]);
    const schedule = await api(`/api/v1/posts/${sound.postId}/schedule`, {
      method: "POST",
      body: JSON.stringify({ scheduledAt: "now" }),
    });
    expect(schedule.status).toBe(400);
    expect(((await schedule.json()) as any).error).toEqual({ code: "invalid_request", message: `media: ${refusal}` });
    expect((await json(await api(`/api/v1/posts/${sound.postId}`))).state).toBe("draft");
    expect((await records()).length).toBe(before);
  });

  it("refuses a text over 300 graphemes when the post is written, and creates nothing", async () => {
    const b = await brand();
    const count = async () =>
      (await env.DB.prepare("SELECT COUNT(*) AS n FROM posts WHERE account_id = ?")
        .bind(account.accountId)
        .first<{ n: number }>())!.n;
    const logo = await uploadFixture(account, "logo.png");
    for (const [text, message] of [
      [
        "a".repeat(301),
        "text: 301 characters as Bluesky counts them (an emoji is one, links count in full); Bluesky allows 300. Shorten it, or leave Bluesky out of networks.",
      ],
      // 150 families of four: 150 graphemes, but 3750 bytes of UTF-8.
      [
        "👨‍👩‍👧‍👦".repeat(150),
        "text: 3750 bytes in UTF-8; Bluesky allows 3000. Shorten it, or leave Bluesky out of networks.",
      ],
    ]) {
      const response = await api("/api/v1/posts", {
        method: "POST",
        body: JSON.stringify({ brandId: b.brandId, text, media: { uploadId: logo.uploadId } }),
      });
      expect(response.status).toBe(400);
      expect(((await response.json()) as any).error).toMatchObject({ code: "invalid_request", message });
    }
    expect(await count()).toBe(0);
    expect((await env.MEDIA.list({ prefix: "posts/" })).objects.some((o) => o.key.includes(logo.uploadId))).toBe(false);

    // 300 emoji are 300 graphemes: accepted, as Bluesky counts.
    const emoji = await json(
      await api("/api/v1/posts", {
        method: "POST",
        body: JSON.stringify({ brandId: b.brandId, text: "🎬".repeat(300) }),
      }),
    );
    // An edit to a longer text is refused too, and leaves the post as it was.
    const edit = await api(`/api/v1/posts/${emoji.postId}`, {
      method: "PATCH",
      body: JSON.stringify({ text: "🎬".repeat(301) }),
    });
    expect(edit.status).toBe(400);
    expect((await json(await api(`/api/v1/posts/${emoji.postId}`))).text).toBe("🎬".repeat(300));
    expect(await count()).toBe(1);
  });
});
