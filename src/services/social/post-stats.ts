/**
 * Statistics of a brand over a period: posts by state, publications per network, approval
 * turnaround, and engagement (views, likes, comments, shares) — read from Mastodon for its
 * statuses and from Bluesky for its posts, or reported back by the brand's own integration
 * through a signed call.
 */
import { and, eq, gte, inArray, isNull, lt, or } from "drizzle-orm";
import { orm } from "../../db/client";
import { brandChannels, brands, postDeliveries, posts } from "../../db/schema";
import type { Env } from "../../env";
import { invalidRequest, notFound, unauthorized } from "../../errors";
import { constantTimeEqual } from "../../lib/constant-time";
import { hmacHex } from "../../lib/signing";
import { brandRow } from "./brands";
import { publisherSettings } from "./channel-config";
import { publishers, type Engagement } from "./publishers";
import { bluesky } from "./bluesky";
import { publishPolicy } from "./publishing";
import { brandWebhookSecret } from "../webhooks/signing";

export interface BrandStats {
  brandId: string;
  from: string;
  to: string;
  postsByState: Record<string, number>;
  publishedByNetwork: Record<string, number>;
  approval: { reviewed: number; averageHours: number | null };
  engagement: Engagement & { byNetwork: Record<string, Engagement> };
}

const zero = (): Engagement => ({ views: 0, likes: 0, comments: 0, shares: 0 });
const add = (a: Engagement, b: Engagement) => ({
  views: a.views + b.views,
  likes: a.likes + b.likes,
  comments: a.comments + b.comments,
  shares: a.shares + b.shares,
});

const DAY_MS = 24 * 3600 * 1000;
/** 2026-11-23, 2026-11-23T09:30, 2026-11-23T09:30:00.000Z, 2026-11-23T09:30+01:00 (Date.parse alone also takes "1"). */
const ISO_DATE_OR_TIME = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * The period of a stats request, the same for REST and the connector: ISO dates or times, `to`
 * now and `from` 30 days before `to` when left out. A bare date as `to` includes that whole day
 * (to=2026-11-23 counts the 23rd).
 */
export function statsPeriod(
  from: string | undefined,
  to: string | undefined,
  now: number,
): { start: number; end: number } {
  const parse = (field: string, value: string) => {
    const instant = ISO_DATE_OR_TIME.test(value.trim()) ? Date.parse(value.trim()) : Number.NaN;
    if (Number.isNaN(instant))
      throw invalidRequest(
        `${field}: '${value.slice(0, 40)}' is not a date; give an ISO date (2026-11-23) or time (2026-11-23T09:30:00Z).`,
      );
    return instant;
  };
  const end = to === undefined ? now : parse("to", to) + (/^\d{4}-\d{2}-\d{2}$/.test(to.trim()) ? DAY_MS : 0);
  const start = from === undefined ? end - 30 * DAY_MS : parse("from", from);
  return { start, end };
}

/**
 * Counts posts created in [from, to); Mastodon and Bluesky counts are refreshed first (at most 50
 * posts each).
 */
export async function brandStats(
  env: Env,
  accountId: string,
  brandId: string,
  from: number,
  to: number,
): Promise<BrandStats> {
  if (!(from < to)) throw invalidRequest("from: must be before to.");
  await brandRow(env.DB, accountId, brandId);
  const d = orm(env.DB);
  const rows = await d
    .select()
    .from(posts)
    .where(and(eq(posts.brandId, brandId), gte(posts.createdAt, from), lt(posts.createdAt, to)))
    .all();
  const ids = rows.map((r) => r.id);
  await refreshMastodonEngagement(env, brandId, ids);
  await refreshBlueskyEngagement(env, brandId, ids, Date.now());
  const deliveries = ids.length
    ? await d
        .select()
        .from(postDeliveries)
        .where(and(inArray(postDeliveries.postId, ids), eq(postDeliveries.status, "sent")))
        .all()
    : [];
  const postsByState: Record<string, number> = {};
  for (const row of rows) postsByState[row.state] = (postsByState[row.state] ?? 0) + 1;
  const publishedByNetwork: Record<string, number> = {};
  const byNetwork: Record<string, Engagement> = {};
  let engagement = zero();
  for (const delivery of deliveries) {
    publishedByNetwork[delivery.network] = (publishedByNetwork[delivery.network] ?? 0) + 1;
    const counts = {
      views: delivery.views,
      likes: delivery.likes,
      comments: delivery.comments,
      shares: delivery.shares,
    };
    byNetwork[delivery.network] = add(byNetwork[delivery.network] ?? zero(), counts);
    engagement = add(engagement, counts);
  }
  const reviewed = rows.filter((r) => r.submittedAt !== null && r.decidedAt !== null);
  const averageHours = reviewed.length
    ? Math.round(
        (reviewed.reduce((sum, r) => sum + (r.decidedAt! - r.submittedAt!), 0) / reviewed.length / 3_600_000) * 100,
      ) / 100
    : null;
  return {
    brandId,
    from: new Date(from).toISOString(),
    to: new Date(to).toISOString(),
    postsByState,
    publishedByNetwork,
    approval: { reviewed: reviewed.length, averageHours },
    engagement: { ...engagement, byNetwork },
  };
}

async function refreshMastodonEngagement(env: Env, brandId: string, postIds: string[]): Promise<void> {
  if (postIds.length === 0) return;
  const d = orm(env.DB);
  const channel = await d
    .select()
    .from(brandChannels)
    .where(and(eq(brandChannels.brandId, brandId), eq(brandChannels.network, "mastodon")))
    .get();
  if (!channel) return;
  const config = await publisherSettings(env, channel).catch((error: Error) => {
    // Statistics stay as last read; publication says why the token is unreadable.
    console.warn("mastodon statistics unavailable", error.message);
    return null;
  });
  if (config?.network !== "mastodon") return;
  const statuses = await d
    .select()
    .from(postDeliveries)
    .where(
      and(
        inArray(postDeliveries.postId, postIds),
        eq(postDeliveries.network, "mastodon"),
        eq(postDeliveries.status, "sent"),
      ),
    )
    .limit(50)
    .all();
  for (const delivery of statuses) {
    if (!delivery.externalId) continue;
    try {
      const counts = await publishers.mastodon.engagement(config, delivery.externalId, publishPolicy(env));
      await d
        .update(postDeliveries)
        .set({ ...counts, statsUpdatedAt: Date.now() })
        .where(eq(postDeliveries.id, delivery.id))
        .run();
    } catch (error) {
      // Statistics stay as last read; the next read tries again.
      console.warn("mastodon statistics unavailable", error instanceof Error ? error.message : String(error));
    }
  }
}

/**
 * Bluesky counts are read again at most every 10 minutes per post: each read opens a session
 * with the app password, and Bluesky allows an account 30 sessions in 5 minutes and 300 a day
 * (publication needs them too), so reloading the statistics must not use them up.
 */
const BLUESKY_STATS_MAX_AGE_MS = 10 * 60 * 1000;

async function refreshBlueskyEngagement(env: Env, brandId: string, postIds: string[], now: number): Promise<void> {
  if (postIds.length === 0) return;
  const d = orm(env.DB);
  const channel = await d
    .select()
    .from(brandChannels)
    .where(and(eq(brandChannels.brandId, brandId), eq(brandChannels.network, "bluesky")))
    .get();
  if (!channel) return;
  const stale = await d
    .select()
    .from(postDeliveries)
    .where(
      and(
        inArray(postDeliveries.postId, postIds),
        eq(postDeliveries.network, "bluesky"),
        eq(postDeliveries.status, "sent"),
        or(isNull(postDeliveries.statsUpdatedAt), lt(postDeliveries.statsUpdatedAt, now - BLUESKY_STATS_MAX_AGE_MS)),
      ),
    )
    .limit(50)
    .all();
  const uris = stale.flatMap((delivery) => (delivery.externalId ? [delivery.externalId] : []));
  if (uris.length === 0) return;
  try {
    const config = await publisherSettings(env, channel);
    if (config.network !== "bluesky") return;
    const counts = await bluesky.engagement(config, uris, publishPolicy(env));
    for (const delivery of stale) {
      const found = delivery.externalId ? counts.get(delivery.externalId) : undefined;
      await d
        .update(postDeliveries)
        .set({ ...(found ?? {}), statsUpdatedAt: now })
        .where(eq(postDeliveries.id, delivery.id))
        .run();
    }
  } catch (error) {
    // Statistics stay as last read; the next read tries again.
    console.warn("bluesky statistics unavailable", error instanceof Error ? error.message : String(error));
  }
}

/**
 * Engagement reported by the brand's own integration (the webhook network): the body is
 * signed like the brand's webhooks, `Webhook-Signature: v1=<hex HMAC-SHA256(secret, ts.body)>`.
 */
export async function reportEngagement(
  env: Env,
  rawBody: string,
  timestamp: string | undefined,
  signature: string | undefined,
  now: number,
): Promise<void> {
  let report: {
    postId?: unknown;
    network?: unknown;
    views?: unknown;
    likes?: unknown;
    comments?: unknown;
    shares?: unknown;
  };
  try {
    report = JSON.parse(rawBody);
  } catch {
    throw invalidRequest("The body must be JSON.");
  }
  // null, an array or a scalar parse as JSON too (fuzzing found null answered 500).
  if (typeof report !== "object" || report === null || Array.isArray(report))
    throw invalidRequest("The body must be a JSON object.");
  if (typeof report.postId !== "string" || report.postId.length > 64) throw invalidRequest("postId: Required");
  const network = typeof report.network === "string" ? report.network : "webhook";
  const post = await orm(env.DB).select().from(posts).where(eq(posts.id, report.postId)).get();
  const brand = post ? await orm(env.DB).select().from(brands).where(eq(brands.id, post.brandId)).get() : undefined;
  if (
    !post ||
    !brand ||
    !timestamp ||
    !signature ||
    !/^\d+$/.test(timestamp) ||
    Math.abs(now / 1000 - Number(timestamp)) > 300
  )
    throw unauthorized("Missing or invalid signature.");
  if (
    !constantTimeEqual(
      signature,
      `v1=${await hmacHex(await brandWebhookSecret(env, brand.id), `${timestamp}.${rawBody}`)}`,
    )
  )
    throw unauthorized("Missing or invalid signature.");
  const count = (value: unknown, field: string) => {
    if (value === undefined) return undefined;
    if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value > 1e12)
      throw invalidRequest(`${field}: a whole number, at least 0.`);
    return value;
  };
  const counts = Object.fromEntries(
    Object.entries({
      views: count(report.views, "views"),
      likes: count(report.likes, "likes"),
      comments: count(report.comments, "comments"),
      shares: count(report.shares, "shares"),
    }).filter(([, v]) => v !== undefined),
  );
  const updated = await orm(env.DB)
    .update(postDeliveries)
    .set({ ...counts, statsUpdatedAt: now })
    .where(
      and(eq(postDeliveries.postId, post.id), eq(postDeliveries.network, network), eq(postDeliveries.status, "sent")),
    )
    .returning()
    .get();
  if (!updated) throw notFound(`The post was not published to ${network.slice(0, 32)}.`);
}
