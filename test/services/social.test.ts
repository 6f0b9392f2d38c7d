/**
 * Brands and posts through REST and the public review page, publication to the local Mastodon
 * and a webhook receiver (real queue consumer and Durable Object alarms in workerd), exactly
 * once per network under repeated alarms and deliveries, statistics, media retention.
 */
import { env } from "cloudflare:workers";
import { runDurableObjectAlarm } from "cloudflare:test";
import { inject } from "vitest";
import { beforeEach, describe, expect, it } from "vitest";
import { hmacHex } from "../../src/lib/signing";
import { dispatchDuePosts, publishOne } from "../../src/services/social/publishing";
import { expirePostMedia } from "../../src/services/social/posts";
import { brandWebhookSecret } from "../../src/services/webhooks/signing";
import {
  balanceOf,
  call,
  callTool,
  newAccount,
  newKey,
  postJson,
  uploadFixture,
  waitForJob,
  type TestAccount,
} from "../helpers/api";
import { eventually } from "../helpers/eventually";
import { WebClient } from "../helpers/web";

const mastodon = inject("mastodonBaseUrl");
const hooks = inject("hookBaseUrl");
let account: TestAccount;

const api = (path: string, init: RequestInit = {}) =>
  call(path, { ...init, headers: { ...account.auth, "content-type": "application/json", ...(init.headers ?? {}) } });
const json = async <T = any>(response: Response, status = 200): Promise<T> => {
  const body = await response.json();
  expect(response.status, JSON.stringify(body)).toBe(status);
  return body as T;
};
const statuses = async () =>
  (await (await fetch(`${mastodon}/_test/statuses`)).json()) as {
    id: string;
    content: string;
    media_attachments: unknown[];
  }[];
const hookLog = async (name: string) =>
  (await (await fetch(`${hooks}/${name}/log`)).json()) as { headers: Record<string, string>; body: string }[];
const uid = () => Math.random().toString(36).slice(2, 10);
const storedMastodonConfig = async (brandId: string) =>
  (await env.DB.prepare("SELECT config FROM brand_channels WHERE brand_id = ? AND network = 'mastodon'")
    .bind(brandId)
    .first<{ config: string }>())!.config;

async function brand(options: { requiresApproval?: boolean; hook?: string; channels?: unknown[] } = {}) {
  return json(
    await api("/api/v1/brands", {
      method: "POST",
      body: JSON.stringify({
        name: `Brand ${uid()}`,
        timeZone: "Europe/Paris",
        requiresApproval: options.requiresApproval ?? true,
        webhookUrl: options.hook ? `${hooks}/${options.hook}` : null,
        channels: options.channels ?? [
          { network: "mastodon", instanceUrl: mastodon, accessToken: "mastodon-test-token" },
        ],
      }),
    }),
  );
}

// A fresh account (and key) per test: one key for the whole file passes the per-key rate limit
// (100 requests in 10 s) when the file runs alone on a fast machine.
beforeEach(async () => {
  account = await newAccount({ credits: 100 });
});

describe("brands and posts", () => {
  it("validates brands: time zone, URLs, networks; other accounts see nothing", async () => {
    const bad = await api("/api/v1/brands", {
      method: "POST",
      body: JSON.stringify({ name: "X", timeZone: "Mars/Olympus" }),
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error.message).toMatch(/timeZone/);
    // A name has up to 100 characters, an emoji counting one (not its two UTF-16 units).
    const emoji = await api("/api/v1/brands", {
      method: "POST",
      body: JSON.stringify({ name: "🎬".repeat(100), timeZone: "Europe/Paris" }),
    });
    expect(emoji.status).toBe(200);
    const long = await api("/api/v1/brands", {
      method: "POST",
      body: JSON.stringify({ name: "🎬".repeat(101), timeZone: "Europe/Paris" }),
    });
    expect([long.status, ((await long.json()) as any).error.message]).toEqual([400, "name: 1 to 100 characters."]);
    const created = await brand();
    expect(created).toMatchObject({
      timeZone: "Europe/Paris",
      requiresApproval: true,
      networks: [{ network: "mastodon", target: mastodon }],
    });
    expect(created.webhookSecret).toMatch(/^whsec_/);
    const other = await newAccount({ credits: 1 });
    expect((await call(`/api/v1/brands/${created.brandId}`, { headers: other.auth })).status).toBe(404);
    // In a body, another account's (or an unknown) brandId is a 400 naming the field, as an uploadId is.
    const foreign = await call("/api/v1/posts", {
      method: "POST",
      headers: { ...other.auth, "content-type": "application/json" },
      body: JSON.stringify({ brandId: created.brandId, text: "hi" }),
    });
    expect(foreign.status).toBe(400);
    expect(((await foreign.json()) as any).error.message).toMatch(/^brandId: /);
    const wrongNetwork = await api("/api/v1/posts", {
      method: "POST",
      body: JSON.stringify({ brandId: created.brandId, text: "hi", networks: ["webhook"] }),
    });
    expect(wrongNetwork.status).toBe(400);
  });

  it("keeps the brand's webhook secret out of D1: derived from WEBHOOK_SIGNING_KEY and the brand id", async () => {
    const first = await brand({ channels: [{ network: "webhook", url: `${hooks}/${uid()}` }] });
    const second = await brand({ channels: [{ network: "webhook", url: `${hooks}/${uid()}` }] });
    expect(first.webhookSecret).toBe(await brandWebhookSecret(env, first.brandId));
    expect(second.webhookSecret).not.toBe(first.webhookSecret);
    // The same on every read, REST and list alike.
    expect((await json(await api(`/api/v1/brands/${first.brandId}`))).webhookSecret).toBe(first.webhookSecret);
    const listed = await json(await api("/api/v1/brands"));
    expect(listed.brands.find((b: any) => b.brandId === first.brandId).webhookSecret).toBe(first.webhookSecret);
    const row = await env.DB.prepare("SELECT * FROM brands WHERE id = ?").bind(first.brandId).first();
    expect(Object.keys(row!)).not.toContain("webhook_secret");
    const channels = await env.DB.prepare("SELECT * FROM brand_channels WHERE brand_id = ?").bind(first.brandId).all();
    for (const stored of [JSON.stringify(row), JSON.stringify(channels.results)]) {
      expect(stored).not.toContain("whsec_");
      expect(stored).not.toContain(first.webhookSecret.slice("whsec_".length));
    }
  });

  it("takes a job's result as media only from the key that made it, and keeps other accounts' approval links unknown", async () => {
    const owner = await newAccount({ credits: 20 });
    const sibling = await newKey(owner);
    const clip = await uploadFixture(owner, "clip.mp4");
    const { jobId } = (await (await callTool(owner, "extract-audio", { uploadId: clip.uploadId })).json()) as {
      jobId: string;
    };
    expect((await waitForJob(owner, jobId)).status).toBe("completed");
    const b = (await (
      await postJson("/api/v1/brands", { name: `Brand ${uid()}`, timeZone: "Europe/Paris" }, owner.auth)
    ).json()) as { brandId: string };
    const attach = (caller: TestAccount, id: string) =>
      postJson("/api/v1/posts", { brandId: b.brandId, text: "hello", media: { jobId: id } }, caller.auth);
    // docs/contract.md: a job is readable only by the key that created it; another key of the same
    // account gets exactly the unknown job's answer, so it learns nothing about it either.
    const unknown = await attach(sibling, "job_01UNKNOWNUNKNOWNUNKNOWNUN");
    const foreign = await attach(sibling, jobId);
    expect(foreign.status).toBe(400);
    expect(await foreign.json()).toEqual(await unknown.json());
    const both = await postJson(
      "/api/v1/posts",
      { brandId: b.brandId, text: "hello", media: { uploadId: clip.uploadId, jobId: "job_x" } },
      owner.auth,
    );
    expect(both.status).toBe(400);
    expect(((await both.json()) as any).error.message).toBe("media: give uploadId or jobId, not both.");
    const mine = await json(await attach(owner, jobId));
    expect(mine.media).toMatchObject({ filename: expect.stringMatching(/\.mp3$/), contentType: "audio/mpeg" });
    const media = await call(`/api/v1/posts/${mine.postId}/media`, { headers: owner.auth });
    expect(media.status).toBe(200);
    expect((await media.arrayBuffer()).byteLength).toBeGreaterThan(1000);

    // Another account revoking this account's approval link: the unknown link's answer, no post id.
    const reviewed = await brand({ requiresApproval: true });
    const post = await json(
      await api("/api/v1/posts", {
        method: "POST",
        body: JSON.stringify({ brandId: reviewed.brandId, text: `À relire ${uid()}` }),
      }),
    );
    await json(await api(`/api/v1/posts/${post.postId}/submit`, { method: "POST", body: "{}" }));
    const link = await json(await api(`/api/v1/posts/${post.postId}/approval-links`, { method: "POST" }));
    const stranger = await newAccount({ credits: 1 });
    const refused = await call(`/api/v1/approval-links/${link.linkId}`, { method: "DELETE", headers: stranger.auth });
    expect(refused.status).toBe(404);
    expect(await refused.json()).toEqual({ error: { code: "not_found", message: "No such approval link." } });
    expect((await call(`/review/${new URL(link.url).pathname.split("/").pop()}`)).status).toBe(200);
  });

  it("stores and shows an accepted time zone in its canonical spelling, at creation and on change", async () => {
    const created = await json(
      await api("/api/v1/brands", {
        method: "POST",
        body: JSON.stringify({ name: `Brand ${uid()}`, timeZone: "europe/paris" }),
      }),
    );
    expect(created.timeZone).toBe("Europe/Paris");
    const stored = () =>
      env.DB.prepare("SELECT time_zone FROM brands WHERE id = ?").bind(created.brandId).first<{ time_zone: string }>();
    expect((await stored())!.time_zone).toBe("Europe/Paris");
    const changed = await json(
      await api(`/api/v1/brands/${created.brandId}`, {
        method: "PATCH",
        body: JSON.stringify({ timeZone: "AMERICA/NEW_YORK" }),
      }),
    );
    expect(changed.timeZone).toBe("America/New_York");
    expect((await stored())!.time_zone).toBe("America/New_York");
    expect((await json(await api(`/api/v1/brands/${created.brandId}`))).timeZone).toBe("America/New_York");
  });

  it("a brand PATCH without requiresApproval keeps the setting (the schema's default used to switch approval off)", async () => {
    const b = await brand({ requiresApproval: true });
    const renamed = await json(
      await api(`/api/v1/brands/${b.brandId}`, { method: "PATCH", body: JSON.stringify({ name: "Renamed" }) }),
    );
    expect(renamed).toMatchObject({ name: "Renamed", requiresApproval: true });
    const off = await json(
      await api(`/api/v1/brands/${b.brandId}`, { method: "PATCH", body: JSON.stringify({ requiresApproval: false }) }),
    );
    expect(off).toMatchObject({ name: "Renamed", requiresApproval: false });
    const created = await json(
      await api("/api/v1/brands", { method: "POST", body: JSON.stringify({ name: "Default", timeZone: "UTC" }) }),
    );
    expect(created.requiresApproval).toBe(false);
  });

  it("turning client approval on sends a post scheduled without approval back to draft", async () => {
    const b = await brand({ requiresApproval: false });
    const post = await json(
      await api("/api/v1/posts", {
        method: "POST",
        body: JSON.stringify({ brandId: b.brandId, text: "sans validation" }),
      }),
    );
    await json(
      await api(`/api/v1/posts/${post.postId}/schedule`, {
        method: "POST",
        body: JSON.stringify({ scheduledAt: new Date(Date.now() + 3_600_000).toISOString() }),
      }),
    );
    await json(
      await api(`/api/v1/brands/${b.brandId}`, { method: "PATCH", body: JSON.stringify({ requiresApproval: true }) }),
    );
    expect((await json(await api(`/api/v1/posts/${post.postId}`))).state).toBe("draft");
    // It now needs a client: scheduling it directly is refused until it is approved.
    const direct = await api(`/api/v1/posts/${post.postId}/schedule`, { method: "POST", body: "{}" });
    expect(direct.status).toBe(400);
    expect(((await direct.json()) as any).error.message).toMatch(/needs client approval first/);

    // A post a client approved stays scheduled when approval is switched off and on again.
    const approved = await json(
      await api("/api/v1/posts", { method: "POST", body: JSON.stringify({ brandId: b.brandId, text: "validé" }) }),
    );
    await json(await api(`/api/v1/posts/${approved.postId}/submit`, { method: "POST", body: "{}" }));
    const link = await json(await api(`/api/v1/posts/${approved.postId}/approval-links`, { method: "POST" }));
    expect(
      (await new WebClient().post(new URL(link.url).pathname, { decision: "approve", reviewerName: "Camille" })).status,
    ).toBe(303);
    await json(
      await api(`/api/v1/posts/${approved.postId}/schedule`, {
        method: "POST",
        body: JSON.stringify({ scheduledAt: new Date(Date.now() + 3_600_000).toISOString() }),
      }),
    );
    await json(
      await api(`/api/v1/brands/${b.brandId}`, { method: "PATCH", body: JSON.stringify({ requiresApproval: false }) }),
    );
    await json(
      await api(`/api/v1/brands/${b.brandId}`, { method: "PATCH", body: JSON.stringify({ requiresApproval: true }) }),
    );
    expect((await json(await api(`/api/v1/posts/${approved.postId}`))).state).toBe("scheduled");
    await json(await api(`/api/v1/posts/${approved.postId}/cancel`, { method: "POST", body: "{}" }));
  });

  it("an edit that leaves a post scheduled needs a time still to come; impossible local times are refused", async () => {
    const b = await brand({ requiresApproval: false });
    const post = await json(
      await api("/api/v1/posts", { method: "POST", body: JSON.stringify({ brandId: b.brandId, text: "à l'heure" }) }),
    );
    const at = new Date(Date.now() + 3_600_000).toISOString();
    await json(
      await api(`/api/v1/posts/${post.postId}/schedule`, { method: "POST", body: JSON.stringify({ scheduledAt: at }) }),
    );
    const edit = (body: unknown) =>
      api(`/api/v1/posts/${post.postId}`, { method: "PATCH", body: JSON.stringify(body) });
    for (const [body, message] of [
      [{ scheduledAt: null }, /^scheduledAt: a scheduled post keeps a time/],
      [{ scheduledAt: "2020-01-01T09:00" }, /^scheduledAt: is in the past/],
      [{ scheduledAt: "2027-02-30T09:00" }, /^scheduledAt: '2027-02-30T09:00' is not a time/],
      // Later instants have no RFC 3339 form (a 9999-12-31 in New York is +010000-01-01 in UTC).
      [{ scheduledAt: "9999-12-31T23:59-05:00" }, /^scheduledAt: must be before the year 10000/],
    ] as const) {
      const refused = await edit(body);
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as any).error.message).toMatch(message);
    }
    const still = await json(await api(`/api/v1/posts/${post.postId}`));
    expect(still).toMatchObject({ state: "scheduled", text: "à l'heure" });
    expect(Date.parse(still.scheduledAt)).toBe(Date.parse(at));
    const moved = await json(await edit({ text: "plus tard", scheduledAt: "2027-03-01T09:00" }));
    expect(moved).toMatchObject({ state: "scheduled", text: "plus tard" });
    // "now" publishes at once: an assistant has no clock to write the present with.
    const soon = await json(
      await api("/api/v1/posts", {
        method: "POST",
        body: JSON.stringify({ brandId: b.brandId, text: "tout de suite" }),
      }),
    );
    const before = Date.now();
    const scheduledNow = await json(
      await api(`/api/v1/posts/${soon.postId}/schedule`, {
        method: "POST",
        body: JSON.stringify({ scheduledAt: "now" }),
      }),
    );
    expect(scheduledNow.state).toBe("scheduled");
    expect(Date.parse(scheduledNow.scheduledAt)).toBeGreaterThanOrEqual(before - 1000);
    expect(Date.parse(scheduledNow.scheduledAt)).toBeLessThanOrEqual(Date.now());
    await json(await api(`/api/v1/posts/${soon.postId}/cancel`, { method: "POST", body: "{}" }));
    // A draft may drop its time.
    const draft = await json(
      await api("/api/v1/posts", {
        method: "POST",
        body: JSON.stringify({ brandId: b.brandId, text: "brouillon", scheduledAt: "2027-03-01T09:00" }),
      }),
    );
    expect(
      (
        await json(
          await api(`/api/v1/posts/${draft.postId}`, { method: "PATCH", body: JSON.stringify({ scheduledAt: null }) }),
        )
      ).state,
    ).toBe("draft");
    await json(await api(`/api/v1/posts/${post.postId}/cancel`, { method: "POST", body: "{}" }));
  });

  it("a text over the Mastodon instance's limit (links count 23) can be drafted but not scheduled, submitted or edited in", async () => {
    const at = new Date(Date.now() + 3_600_000).toISOString();
    const limits = (await (await fetch(`${mastodon}/api/v2/instance`)).json()) as any;
    expect(limits.configuration.statuses).toMatchObject({ max_characters: 500, characters_reserved_per_url: 23 });
    const long = "é".repeat(501);
    // 571 characters written, 494 as Mastodon counts them: the link is 23.
    const linked = `${"a".repeat(470)} https://example.com/${"x".repeat(80)}`;
    const refusedWith = async (response: Response) => {
      expect(response.status).toBe(400);
      return ((await response.json()) as any).error.message as string;
    };
    for (const requiresApproval of [false, true]) {
      const b = await brand({
        requiresApproval,
        channels: [
          { network: "mastodon", instanceUrl: mastodon, accessToken: "mastodon-test-token" },
          { network: "webhook", url: `${hooks}/${uid()}` },
        ],
      });
      const draft = await json(
        await api("/api/v1/posts", { method: "POST", body: JSON.stringify({ brandId: b.brandId, text: long }) }),
      );
      expect(draft.state).toBe("draft");
      const action = requiresApproval ? "submit" : "schedule";
      const message = await refusedWith(
        await api(`/api/v1/posts/${draft.postId}/${action}`, {
          method: "POST",
          body: JSON.stringify({ scheduledAt: at }),
        }),
      );
      expect(message).toBe(
        "text: 501 characters as Mastodon counts them (each link 23); the brand's instance allows 500. Shorten it, or leave Mastodon out of networks.",
      );
      expect((await json(await api(`/api/v1/posts/${draft.postId}`))).state).toBe("draft");
      // Without Mastodon the text goes to the webhook as it is.
      await json(
        await api(`/api/v1/posts/${draft.postId}`, {
          method: "PATCH",
          body: JSON.stringify({ networks: ["webhook"] }),
        }),
      );
      expect(
        (
          await json(
            await api(`/api/v1/posts/${draft.postId}/${action}`, {
              method: "POST",
              body: JSON.stringify({ scheduledAt: at }),
            }),
          )
        ).state,
      ).toBe(requiresApproval ? "pending_approval" : "scheduled");
      // Characters as people see them: 300 flags are 300 characters (600 code points), and a full stop after a link is not part of it.
      const flags = await json(
        await api("/api/v1/posts", {
          method: "POST",
          body: JSON.stringify({
            brandId: b.brandId,
            text: `${"🇫🇷".repeat(300)} https://example.com/${"y".repeat(300)}.`,
          }),
        }),
      );
      expect(
        (
          await json(
            await api(`/api/v1/posts/${flags.postId}/${action}`, {
              method: "POST",
              body: JSON.stringify({ scheduledAt: at }),
            }),
          )
        ).state,
      ).toBe(requiresApproval ? "pending_approval" : "scheduled");
      // Under way, neither Mastodon back in nor a longer text for it.
      const withLink = await json(
        await api("/api/v1/posts", { method: "POST", body: JSON.stringify({ brandId: b.brandId, text: linked }) }),
      );
      expect(
        (
          await json(
            await api(`/api/v1/posts/${withLink.postId}/${action}`, {
              method: "POST",
              body: JSON.stringify({ scheduledAt: at }),
            }),
          )
        ).state,
      ).toBe(requiresApproval ? "pending_approval" : "scheduled");
      if (!requiresApproval) {
        expect(
          await refusedWith(
            await api(`/api/v1/posts/${withLink.postId}`, { method: "PATCH", body: JSON.stringify({ text: long }) }),
          ),
        ).toMatch(/^text: 501 characters/);
        expect(
          await refusedWith(
            await api(`/api/v1/posts/${draft.postId}`, {
              method: "PATCH",
              body: JSON.stringify({ networks: ["mastodon", "webhook"] }),
            }),
          ),
        ).toMatch(/^text: 501 characters/);
        expect((await json(await api(`/api/v1/posts/${withLink.postId}`))).text).toBe(linked);
      }
    }
  });

  it("a post without networks can be drafted but not scheduled, submitted or edited to none while scheduled", async () => {
    const bare = await brand({ requiresApproval: false, channels: [] });
    const lonely = await json(
      await api("/api/v1/posts", {
        method: "POST",
        body: JSON.stringify({ brandId: bare.brandId, text: "pour personne" }),
      }),
    );
    expect(lonely).toMatchObject({ state: "draft", networks: [] });
    const at = new Date(Date.now() + 3_600_000).toISOString();
    for (const action of ["schedule", "submit"]) {
      const refused = await api(`/api/v1/posts/${lonely.postId}/${action}`, {
        method: "POST",
        body: JSON.stringify({ scheduledAt: at }),
      });
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as any).error.message).toMatch(/^networks: the post has no network to publish to/);
    }
    expect((await json(await api(`/api/v1/posts/${lonely.postId}`))).state).toBe("draft");

    const b = await brand({ requiresApproval: false });
    const post = await json(
      await api("/api/v1/posts", {
        method: "POST",
        body: JSON.stringify({ brandId: b.brandId, text: "quelque part" }),
      }),
    );
    await json(
      await api(`/api/v1/posts/${post.postId}/schedule`, { method: "POST", body: JSON.stringify({ scheduledAt: at }) }),
    );
    const emptied = await api(`/api/v1/posts/${post.postId}`, {
      method: "PATCH",
      body: JSON.stringify({ networks: [] }),
    });
    expect(emptied.status).toBe(400);
    expect(await json(await api(`/api/v1/posts/${post.postId}`))).toMatchObject({
      state: "scheduled",
      networks: ["mastodon"],
    });
    await json(await api(`/api/v1/posts/${post.postId}/cancel`, { method: "POST", body: "{}" }));
  });

  it("a post for a network the brand dropped since is refused at schedule and submit, as at creation", async () => {
    const b = await brand({ requiresApproval: false });
    const post = await json(
      await api("/api/v1/posts", {
        method: "POST",
        body: JSON.stringify({ brandId: b.brandId, text: "vers nulle part", networks: ["mastodon"] }),
      }),
    );
    await json(await api(`/api/v1/brands/${b.brandId}`, { method: "PATCH", body: JSON.stringify({ channels: [] }) }));
    const at = new Date(Date.now() + 3_600_000).toISOString();
    for (const action of ["schedule", "submit"]) {
      const refused = await api(`/api/v1/posts/${post.postId}/${action}`, {
        method: "POST",
        body: JSON.stringify({ scheduledAt: at }),
      });
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as any).error).toEqual({
        code: "invalid_request",
        message: expect.stringMatching(/^networks: the brand does not publish to mastodon \(it has: none\)/),
      });
    }
    expect((await json(await api(`/api/v1/posts/${post.postId}`))).state).toBe("draft");
  });

  it("keeps a post that needs approval out of the schedule until a client approves it on the review page", async () => {
    const b = await brand({ hook: `events-${uid()}` });
    const post = await json(
      await api("/api/v1/posts", {
        method: "POST",
        body: JSON.stringify({ brandId: b.brandId, text: "Nouvelle vidéo !", scheduledAt: "2030-06-01T09:30" }),
      }),
    );
    expect(post).toMatchObject({
      state: "draft",
      scheduledAtLocal: "2030-06-01T09:30",
      scheduledAt: "2030-06-01T07:30:00.000Z",
      networks: ["mastodon"],
    });
    const early = await api(`/api/v1/posts/${post.postId}/schedule`, { method: "POST", body: "{}" });
    expect(early.status).toBe(400);
    expect(((await early.json()) as any).error.message).toMatch(/state draft cannot be scheduled.*client approval/);
    expect((await api(`/api/v1/posts/${post.postId}/approval-links`, { method: "POST" })).status).toBe(400);
    await json(await api(`/api/v1/posts/${post.postId}/submit`, { method: "POST", body: "{}" }));
    const link = await json(await api(`/api/v1/posts/${post.postId}/approval-links`, { method: "POST" }));
    expect(new Date(link.expiresAt).getTime() - Date.now()).toBeGreaterThan(13.9 * 24 * 3600_000);
    const path = new URL(link.url).pathname;

    const reviewer = new WebClient();
    const page = await (await reviewer.get(path)).text();
    expect(page).toContain("Nouvelle vidéo !");
    expect(page).toContain("2030-06-01 09:30 (Europe/Paris)");
    expect(page).toContain('data-testid="post-state">waiting for approval<');
    const noComment = await reviewer.post(path, { decision: "request_changes", reviewerName: "Camille" });
    expect(noComment.status).toBe(400);
    expect(await noComment.text()).toMatch(/Message: say what should change/i);
    const changes = await reviewer.post(path, {
      decision: "request_changes",
      reviewerName: "Camille",
      comment: "Ajoute le lien",
    });
    // Redirected to the page with the outcome: a reload does not send the decision again.
    expect(changes.status).toBe(303);
    expect(changes.headers.get("location")).toBe(`${path}?done=changes`);
    const after = await (await reviewer.get(`${path}?done=changes`)).text();
    expect(after).toContain("your request for changes was sent");
    expect(after).toContain('data-testid="post-state">changes requested<');
    // The outcome shown is the post's: a link claiming an approval thanks for nothing.
    expect(await (await reviewer.get(`${path}?done=approved`)).text()).not.toContain("the post is approved");
    const resent = await reviewer.post(path, {
      decision: "request_changes",
      reviewerName: "Camille",
      comment: "Ajoute le lien",
    });
    expect(resent.status).toBe(400);
    expect(await resent.text()).toContain("This post is not waiting for a review any more");
    let read = await json(await api(`/api/v1/posts/${post.postId}`));
    expect(read.state).toBe("changes_requested");
    expect(read.reviews).toMatchObject([
      { decision: "changes_requested", reviewerName: "Camille", comment: "Ajoute le lien" },
    ]);

    await json(
      await api(`/api/v1/posts/${post.postId}`, {
        method: "PATCH",
        body: JSON.stringify({ text: "Nouvelle vidéo ! https://example.com" }),
      }),
    );
    await json(await api(`/api/v1/posts/${post.postId}/submit`, { method: "POST", body: "{}" }));
    // Direction controls go from the name shown to the brand's people.
    expect((await reviewer.post(path, { decision: "approve", reviewerName: "\u202ECamille\u202C" })).status).toBe(303);
    read = await json(await api(`/api/v1/posts/${post.postId}`));
    expect(read.state).toBe("approved");
    expect(read.reviews.map((r: any) => r.decision)).toEqual(["changes_requested", "approved"]);
    expect(read.reviews.map((r: any) => r.reviewerName)).toEqual(["Camille", "Camille"]);
    expect((await json(await api(`/api/v1/posts/${post.postId}/schedule`, { method: "POST", body: "{}" }))).state).toBe(
      "scheduled",
    );

    // The decisions reached the brand's webhook, signed with its secret.
    const events = await eventually(
      () => hookLog(new URL(b.webhookUrl).pathname.slice(1)),
      (log) => log.length >= 2,
      { what: "two review events at the brand's webhook" },
    );
    expect(events.map((e) => JSON.parse(e.body).type)).toEqual(["post.changes_requested", "post.approved"]);
    const first = events[0];
    expect(first.headers["webhook-signature"]).toBe(
      `v1=${await hmacHex(b.webhookSecret, `${first.headers["webhook-timestamp"]}.${first.body}`)}`,
    );

    // Revoked links stop working.
    const second = await json(
      await api(
        `/api/v1/posts/${(await json(await api("/api/v1/posts", { method: "POST", body: JSON.stringify({ brandId: b.brandId, text: "autre" }) }))).postId}/submit`,
        { method: "POST", body: "{}" },
      ),
    );
    const link2 = await json(await api(`/api/v1/posts/${second.postId}/approval-links`, { method: "POST" }));
    await json(await api(`/api/v1/approval-links/${link2.linkId}`, { method: "DELETE" }));
    expect((await call(new URL(link2.url).pathname)).status).toBe(404);
    expect(await balanceOf(account)).toBe(100);
  });

  it("publishes at its time through the brand's alarm, once per network, and counts it", async () => {
    const hook = `publish-${uid()}`;
    const b = await brand({
      requiresApproval: false,
      channels: [
        { network: "mastodon", instanceUrl: mastodon, accessToken: "mastodon-test-token" },
        { network: "webhook", url: `${hooks}/${hook}` },
      ],
    });
    // The Mastodon token is sealed in D1 and shown nowhere; only the publisher opens it.
    expect(JSON.parse(await storedMastodonConfig(b.brandId)).accessToken).toMatch(
      /^v1:[A-Za-z0-9+/]+=*:[A-Za-z0-9+/]+=*$/,
    );
    expect(await storedMastodonConfig(b.brandId)).not.toContain("mastodon-test-token");
    expect(JSON.stringify(b)).not.toContain("mastodon-test-token");
    expect(JSON.stringify(await json(await api("/api/v1/brands")))).not.toContain("mastodon-test-token");
    const logo = await uploadFixture(account, "logo.png");
    const before = (await statuses()).length;
    const at = new Date(Date.now() + 1500).toISOString();
    const post = await json(
      await api("/api/v1/posts", {
        method: "POST",
        body: JSON.stringify({ brandId: b.brandId, text: `Publié ${uid()}`, media: { uploadId: logo.uploadId } }),
      }),
    );
    expect(post.media).toMatchObject({ filename: "logo.png", contentType: "image/png" });
    await json(
      await api(`/api/v1/posts/${post.postId}/schedule`, { method: "POST", body: JSON.stringify({ scheduledAt: at }) }),
    );
    // Not before its time.
    expect(await publishOne(env, post.postId, "mastodon", Date.now())).toBe("skipped");
    const published = await eventually(
      async () => json(await api(`/api/v1/posts/${post.postId}`)),
      (p) => p.state === "published",
      { what: "the post published" },
    );
    expect(published.state).toBe("published");
    expect(Date.parse(published.publishedAt)).toBeGreaterThanOrEqual(Date.parse(at));
    expect(published.deliveries.map((d: any) => [d.network, d.status]).sort()).toEqual([
      ["mastodon", "sent"],
      ["webhook", "sent"],
    ]);

    // Repeated alarms, sweeps and messages publish nothing more.
    const scheduler = env.BRAND_SCHEDULER.get(env.BRAND_SCHEDULER.idFromName(b.brandId));
    await runDurableObjectAlarm(scheduler);
    await dispatchDuePosts(env, null, Date.now());
    // Nothing is in flight to publish it again: a sweep queues no message for it, and messages are skipped.
    expect(await dispatchDuePosts(env, b.brandId, Date.now())).toMatchObject({ queued: 0 });
    expect(
      await Promise.all([
        publishOne(env, post.postId, "mastodon", Date.now()),
        publishOne(env, post.postId, "webhook", Date.now()),
      ]),
    ).toEqual(["skipped", "skipped"]);
    const mine = (await statuses()).slice(before).filter((s) => s.content.includes(post.text.split(" ")[1]));
    expect(mine).toHaveLength(1);
    expect(mine[0].media_attachments).toHaveLength(1);
    const delivered = await hookLog(hook);
    expect(delivered).toHaveLength(1);
    expect(JSON.parse(delivered[0].body)).toMatchObject({
      type: "post.publish",
      postId: post.postId,
      text: post.text,
      media: { filename: "logo.png" },
    });

    // Engagement: Mastodon counts read back; the integration reports its own, signed.
    await fetch(`${mastodon}/_test/statuses/${mine[0].id}/engagement`, {
      method: "POST",
      body: JSON.stringify({ favourites_count: 7, reblogs_count: 2, replies_count: 3 }),
    });
    const report = JSON.stringify({ postId: post.postId, network: "webhook", views: 120, likes: 5 });
    const ts = String(Math.floor(Date.now() / 1000));
    const forged = await call("/api/integrations/engagement", {
      method: "POST",
      headers: { "webhook-timestamp": ts, "webhook-signature": "v1=00" },
      body: report,
    });
    expect(forged.status).toBe(401);
    const reported = await call("/api/integrations/engagement", {
      method: "POST",
      headers: {
        "webhook-timestamp": ts,
        "webhook-signature": `v1=${await hmacHex(b.webhookSecret, `${ts}.${report}`)}`,
      },
      body: report,
    });
    expect(reported.status).toBe(200);
    const stats = await json(await api(`/api/v1/brands/${b.brandId}/stats`));
    expect(stats.postsByState).toEqual({ published: 1 });
    expect(stats.publishedByNetwork).toEqual({ mastodon: 1, webhook: 1 });
    expect(stats.engagement).toMatchObject({ views: 120, likes: 12, comments: 3, shares: 2 });
    expect(stats.engagement.byNetwork.mastodon).toEqual({ views: 0, likes: 7, comments: 3, shares: 2 });
    // A bare date as `to` counts that whole day; a word is not a date.
    const today = new Date().toISOString().slice(0, 10);
    const upToToday = await json(await api(`/api/v1/brands/${b.brandId}/stats?to=${today}`));
    expect(upToToday.postsByState).toEqual({ published: 1 });
    expect(Date.parse(upToToday.to)).toBe(Date.parse(today) + 24 * 3600 * 1000);
    for (const from of ["yesterday", "1"]) {
      const word = await api(`/api/v1/brands/${b.brandId}/stats?from=${from}`);
      expect(word.status).toBe(400);
      expect(((await word.json()) as any).error.message).toMatch(new RegExp(`^from: '${from}' is not a date`));
    }

    // Media of published posts goes 30 days after publication.
    const row = await env.DB.prepare("SELECT media_key FROM posts WHERE id = ?")
      .bind(post.postId)
      .first<{ media_key: string }>();
    expect(await env.MEDIA.head(row!.media_key)).not.toBeNull();
    expect(await expirePostMedia(env, Date.now() + 31 * 24 * 3600_000)).toBeGreaterThanOrEqual(1);
    expect(await env.MEDIA.head(row!.media_key)).toBeNull();
  });

  it("still publishes with a Mastodon token stored before encryption, seals it when the channels are saved again, and opens no token copied from another brand", async () => {
    const publish = async (brandId: string, text: string) => {
      const post = await json(await api("/api/v1/posts", { method: "POST", body: JSON.stringify({ brandId, text }) }));
      await json(
        await api(`/api/v1/posts/${post.postId}/schedule`, {
          method: "POST",
          body: JSON.stringify({ scheduledAt: new Date(Date.now() + 500).toISOString() }),
        }),
      );
      return eventually(
        async () => json(await api(`/api/v1/posts/${post.postId}`)),
        (p) => p.state !== "scheduled",
        { what: "the post out of scheduled" },
      );
    };
    const legacy = await brand({ requiresApproval: false });
    const plain = JSON.stringify({ instanceUrl: mastodon, accessToken: "mastodon-test-token" });
    await env.DB.prepare("UPDATE brand_channels SET config = ? WHERE brand_id = ? AND network = 'mastodon'")
      .bind(plain, legacy.brandId)
      .run();
    const text = `Ancien jeton ${uid()}`;
    expect((await publish(legacy.brandId, text)).state).toBe("published");
    expect((await statuses()).some((status) => status.content.includes(text))).toBe(true);
    expect(JSON.stringify(await json(await api(`/api/v1/brands/${legacy.brandId}`)))).not.toContain(
      "mastodon-test-token",
    );

    await json(
      await api(`/api/v1/brands/${legacy.brandId}`, {
        method: "PATCH",
        body: JSON.stringify({
          channels: [{ network: "mastodon", instanceUrl: mastodon, accessToken: "mastodon-test-token" }],
        }),
      }),
    );
    expect(await storedMastodonConfig(legacy.brandId)).not.toContain("mastodon-test-token");
    expect((await publish(legacy.brandId, `Jeton scellé ${uid()}`)).state).toBe("published");

    // A sealed token is bound to its brand: copied into another brand's row, it does not open.
    const other = await brand({
      requiresApproval: false,
      channels: [{ network: "mastodon", instanceUrl: mastodon, accessToken: "wrong-token" }],
    });
    await env.DB.prepare("UPDATE brand_channels SET config = ? WHERE brand_id = ? AND network = 'mastodon'")
      .bind(await storedMastodonConfig(legacy.brandId), other.brandId)
      .run();
    const refused = await publish(other.brandId, `Jeton copié ${uid()}`);
    expect(refused.state).toBe("failed");
    expect(refused.failure).toMatch(/^mastodon: the Mastodon access token cannot be read/);
  });

  it("retries a failing network and fails the post when a publisher refuses for good", async () => {
    const b = await brand({
      requiresApproval: false,
      channels: [{ network: "mastodon", instanceUrl: mastodon, accessToken: "wrong-token" }],
    });
    const post = await json(
      await api("/api/v1/posts", { method: "POST", body: JSON.stringify({ brandId: b.brandId, text: "refusé" }) }),
    );
    await json(
      await api(`/api/v1/posts/${post.postId}/schedule`, {
        method: "POST",
        body: JSON.stringify({ scheduledAt: new Date(Date.now() + 500).toISOString() }),
      }),
    );
    const failed = await eventually(
      async () => json(await api(`/api/v1/posts/${post.postId}`)),
      (p) => p.state === "failed",
      { what: "the post failed" },
    );
    expect(failed.state).toBe("failed");
    expect(failed.failure).toMatch(/401/);
    expect(failed.deliveries[0]).toMatchObject({ network: "mastodon", status: "failed" });
    // A post that ended cannot move again.
    const again = await api(`/api/v1/posts/${post.postId}/schedule`, { method: "POST", body: "{}" });
    expect(((await again.json()) as any).error.message).toMatch(/state failed/);
  });

  it("deletes a brand with its posts, their media and review links; refused while a post is scheduled, and for another account", async () => {
    const b = await brand({ requiresApproval: true });
    const clip = await uploadFixture(account, "tone.mp3");
    const withMedia = await json(
      await api("/api/v1/posts", {
        method: "POST",
        body: JSON.stringify({ brandId: b.brandId, text: "avec média", media: { uploadId: clip.uploadId } }),
      }),
    );
    const mediaKey = (await env.DB.prepare("SELECT media_key FROM posts WHERE id = ?")
      .bind(withMedia.postId)
      .first<{ media_key: string }>())!.media_key;
    expect(await env.MEDIA.head(mediaKey)).not.toBeNull();
    await json(await api(`/api/v1/posts/${withMedia.postId}/submit`, { method: "POST", body: "{}" }));
    const link = await json(
      await api(`/api/v1/posts/${withMedia.postId}/approval-links`, { method: "POST", body: "{}" }),
    );
    const planned = await json(
      await api("/api/v1/posts", { method: "POST", body: JSON.stringify({ brandId: b.brandId, text: "prévu" }) }),
    );
    await json(await api(`/api/v1/posts/${planned.postId}/submit`, { method: "POST", body: "{}" }));
    await env.DB.prepare("UPDATE posts SET state = 'scheduled', scheduled_at = ? WHERE id = ?")
      .bind(Date.now() + 3_600_000, planned.postId)
      .run();

    const stranger = await newAccount({ credits: 1 });
    expect((await call(`/api/v1/brands/${b.brandId}`, { method: "DELETE", headers: stranger.auth })).status).toBe(404);
    const refused = await json(await api(`/api/v1/brands/${b.brandId}`, { method: "DELETE" }), 400);
    expect(refused.error).toMatchObject({
      code: "invalid_request",
      message: expect.stringMatching(/1 scheduled post; unschedule or cancel it first/),
    });
    expect((await api(`/api/v1/posts/${withMedia.postId}`)).status).toBe(200);

    await json(await api(`/api/v1/posts/${planned.postId}/unschedule`, { method: "POST", body: "{}" }));
    expect(await json(await api(`/api/v1/brands/${b.brandId}`, { method: "DELETE" }))).toEqual({
      brandId: b.brandId,
      deleted: true,
    });
    expect((await api(`/api/v1/brands/${b.brandId}`)).status).toBe(404);
    for (const post of [withMedia, planned]) expect((await api(`/api/v1/posts/${post.postId}`)).status).toBe(404);
    expect(await env.MEDIA.head(mediaKey)).toBeNull();
    expect((await new WebClient().get(new URL(link.url).pathname)).status).toBe(404);
    const left = await env.DB.prepare(
      "SELECT (SELECT COUNT(*) FROM brand_channels WHERE brand_id = ?1) + (SELECT COUNT(*) FROM posts WHERE brand_id = ?1) AS n",
    )
      .bind(b.brandId)
      .first<{ n: number }>();
    expect(left!.n).toBe(0);
    expect((await api(`/api/v1/brands/${b.brandId}`, { method: "DELETE" })).status).toBe(404);
  });

  it("cancels a scheduled post before its time: nothing is published", async () => {
    const b = await brand({ requiresApproval: false });
    const before = (await statuses()).length;
    const post = await json(
      await api("/api/v1/posts", { method: "POST", body: JSON.stringify({ brandId: b.brandId, text: "annulé" }) }),
    );
    const at = Date.now() + 800;
    await json(
      await api(`/api/v1/posts/${post.postId}/schedule`, {
        method: "POST",
        body: JSON.stringify({ scheduledAt: new Date(at).toISOString() }),
      }),
    );
    expect((await json(await api(`/api/v1/posts/${post.postId}/cancel`, { method: "POST", body: "{}" }))).state).toBe(
      "cancelled",
    );
    // Past its time, what the brand's alarm and the sweep run queues nothing, and a message sent
    // before the cancel would be skipped: no wait for the clock.
    expect(await dispatchDuePosts(env, b.brandId, at + 1000)).toMatchObject({ queued: 0 });
    expect(await publishOne(env, post.postId, "mastodon", at + 1000)).toBe("skipped");
    expect((await statuses()).length).toBe(before);
    expect((await api(`/api/v1/posts/${post.postId}`, { method: "DELETE" })).status).toBe(200);
    expect((await api(`/api/v1/posts/${post.postId}`)).status).toBe(404);
  });
});
