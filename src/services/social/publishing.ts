/**
 * Publication of scheduled posts, exactly once per network. A Durable Object per brand keeps an
 * alarm at its next due post (a cron sweep is the safety net); at the time, one queue message
 * per (post, network) goes to the publish queue, whose consumer claims the delivery row (unique
 * per post and network, leased while sending), calls the network's publisher and records the
 * result; retries back off and end in a dead-letter queue that marks the post failed. Brand
 * events (reviews, publication) are signed webhooks sent through the same queue.
 */
import { and, eq, lte, sql } from "drizzle-orm";
import { orm } from "../../db/client";
import { brandChannels, brands, postDeliveries, posts } from "../../db/schema";
import type { Env } from "../../env";
import { newId } from "../../lib/ids";
import { assertPublicUrl, type UrlPolicy } from "../../lib/public-url";
import { mediaUrl } from "../../backend-client/transfer-urls";
import { publisherSettings } from "./channel-config";
import { publishers, PublishError, type Publication } from "./publishers";
import { bluesky } from "./bluesky";
import { brandWebhookSecret } from "../webhooks/signing";

export type PublishMessage =
  | { kind: "publish"; postId: string; network: string }
  | { kind: "brand_event"; brandId: string; event: Record<string, unknown> };

/** A delivery being sent is not taken again before this (a consumer that died frees it after). */
const CLAIM_LEASE_MS = 5 * 60 * 1000;

export function publishPolicy(env: Env): UrlPolicy {
  const allowPrivate = (env.PUBLISH_ALLOW_PRIVATE_URLS ?? env.ALLOW_PRIVATE_URLS) === "true";
  return { allowPrivate, resolverUrl: env.DNS_RESOLVER_URL };
}

export function brandChannelsOf(db: D1Database, brandId: string) {
  return orm(db).select().from(brandChannels).where(eq(brandChannels.brandId, brandId)).all();
}

/** Tells the brand's scheduler about a post due at `at` (it keeps the earliest alarm). */
export async function schedulePublication(env: Env, brandId: string, at: number): Promise<void> {
  if (!env.BRAND_SCHEDULER) return;
  await env.BRAND_SCHEDULER.get(env.BRAND_SCHEDULER.idFromName(brandId)).schedule(brandId, at);
}

/** Queues the due posts of a brand (or of every brand) and returns when the next one is due. */
export async function dispatchDuePosts(
  env: Env,
  brandId: string | null,
  now: number,
): Promise<{ queued: number; nextAt: number | null }> {
  const d = orm(env.DB);
  const due = await d
    .select()
    .from(posts)
    .where(
      and(eq(posts.state, "scheduled"), lte(posts.scheduledAt, now), ...(brandId ? [eq(posts.brandId, brandId)] : [])),
    )
    .limit(200)
    .all();
  const messages: { body: PublishMessage }[] = [];
  for (const post of due) {
    for (const network of JSON.parse(post.networks) as string[])
      messages.push({ body: { kind: "publish", postId: post.id, network } });
    // Scheduling refuses a post without networks; one from before that rule reached nobody.
    if ((JSON.parse(post.networks) as string[]).length === 0)
      await failPost(env, post.id, "the post had no network to publish to", now);
  }
  for (let i = 0; i < messages.length; i += 100) await env.PUBLISH_QUEUE.sendBatch(messages.slice(i, i + 100));
  const next = brandId
    ? await d
        .select({ at: sql<number>`MIN(${posts.scheduledAt})` })
        .from(posts)
        .where(and(eq(posts.state, "scheduled"), eq(posts.brandId, brandId), sql`${posts.scheduledAt} > ${now}`))
        .get()
    : undefined;
  return { queued: messages.length, nextAt: next?.at ?? null };
}

/** The post is published once every network has it. */
async function finishPost(env: Env, postId: string, now: number): Promise<void> {
  const d = orm(env.DB);
  const post = await d.select().from(posts).where(eq(posts.id, postId)).get();
  if (!post || post.state !== "scheduled") return;
  const networks = JSON.parse(post.networks) as string[];
  const sent = await d
    .select()
    .from(postDeliveries)
    .where(and(eq(postDeliveries.postId, postId), eq(postDeliveries.status, "sent")))
    .all();
  if (!networks.every((n) => sent.some((s) => s.network === n))) return;
  const updated = await d
    .update(posts)
    .set({ state: "published", publishedAt: now, updatedAt: now })
    .where(and(eq(posts.id, postId), eq(posts.state, "scheduled")))
    .returning()
    .get();
  if (updated) {
    const brand = await d.select().from(brands).where(eq(brands.id, post.brandId)).get();
    if (brand)
      await emitBrandEvent(env, brand, {
        type: "post.published",
        postId,
        networks: sent.map((s) => ({ network: s.network, url: s.externalUrl })),
        at: new Date(now).toISOString(),
      });
  }
}

/** One (post, network) publication; throws to have the queue retry it. */
export async function publishOne(env: Env, postId: string, network: string, now: number): Promise<"sent" | "skipped"> {
  const d = orm(env.DB);
  const post = await d.select().from(posts).where(eq(posts.id, postId)).get();
  if (!post || post.state !== "scheduled" || (post.scheduledAt ?? 0) > now + 1000) return "skipped";
  await d
    .insert(postDeliveries)
    .values({ id: newId("dlv", now), postId, network, status: "pending" })
    .onConflictDoNothing()
    .run();
  const claimed = await d
    .update(postDeliveries)
    .set({ status: "sending", claimedAt: now, attempts: sql`${postDeliveries.attempts} + 1` })
    .where(
      and(
        eq(postDeliveries.postId, postId),
        eq(postDeliveries.network, network),
        sql`(${postDeliveries.status} = 'pending' OR (${postDeliveries.status} = 'sending' AND ${postDeliveries.claimedAt} < ${now - CLAIM_LEASE_MS}))`,
      ),
    )
    .returning()
    .get();
  if (!claimed) {
    await finishPost(env, postId, now);
    return "skipped";
  }
  const channel = await d
    .select()
    .from(brandChannels)
    .where(and(eq(brandChannels.brandId, post.brandId), eq(brandChannels.network, network as "webhook")))
    .get();
  const brand = await d.select().from(brands).where(eq(brands.id, post.brandId)).get();
  try {
    if (!channel || !brand) throw new PublishError(`the brand no longer publishes to ${network}`, false);
    const publication: Publication = {
      postId,
      text: post.text,
      brand: { id: brand.id, name: brand.name, secret: await brandWebhookSecret(env, brand.id) },
      media: post.mediaKey
        ? {
            filename: post.mediaFilename!,
            contentType: post.mediaContentType!,
            read: () => env.MEDIA.get(post.mediaKey!),
            url: () => mediaUrl(env, post.mediaKey!, "GET", 24 * 3600 * 1000).catch(() => null),
          }
        : null,
      scheduledAt: new Date(post.scheduledAt!).toISOString(),
    };
    const settings = await publisherSettings(env, channel);
    const result =
      settings.network === "webhook"
        ? await publishers.webhook.publish(settings, publication, publishPolicy(env))
        : settings.network === "bluesky"
          ? await bluesky.publish(settings, publication, publishPolicy(env))
          : await publishers.mastodon.publish(settings, publication, publishPolicy(env));
    await d
      .update(postDeliveries)
      .set({
        status: "sent",
        externalId: result.id ?? null,
        externalUrl: result.url ?? null,
        deliveredAt: now,
        lastError: null,
      })
      .where(eq(postDeliveries.id, claimed.id))
      .run();
    await finishPost(env, postId, now);
    return "sent";
  } catch (error) {
    const message = error instanceof Error ? error.message.slice(0, 500) : String(error);
    const final = error instanceof PublishError && !error.retryable;
    await d
      .update(postDeliveries)
      .set({ status: final ? "failed" : "pending", lastError: message })
      .where(eq(postDeliveries.id, claimed.id))
      .run();
    if (final) await failPost(env, postId, `${network}: ${message}`, now);
    else throw error;
    return "skipped";
  }
}

/** After the last retry (dead-letter queue) or a refusal that no retry can fix. */
export async function failPost(env: Env, postId: string, reason: string, now: number): Promise<void> {
  const d = orm(env.DB);
  const updated = await d
    .update(posts)
    .set({ state: "failed", failure: reason.slice(0, 500), updatedAt: now })
    .where(and(eq(posts.id, postId), eq(posts.state, "scheduled")))
    .returning()
    .get();
  if (!updated) return;
  await d
    .update(postDeliveries)
    .set({ status: "failed" })
    .where(and(eq(postDeliveries.postId, postId), sql`${postDeliveries.status} != 'sent'`))
    .run();
  const brand = await d.select().from(brands).where(eq(brands.id, updated.brandId)).get();
  if (brand)
    await emitBrandEvent(env, brand, {
      type: "post.failed",
      postId,
      reason: updated.failure,
      at: new Date(now).toISOString(),
    });
}

/** Brand events go out through the queue (retried with backoff), signed with the brand's secret. */
export async function emitBrandEvent(
  env: Env,
  brand: typeof brands.$inferSelect,
  event: Record<string, unknown>,
): Promise<void> {
  if (!brand.webhookUrl) return;
  await env.PUBLISH_QUEUE.send({ kind: "brand_event", brandId: brand.id, event: { ...event, brandId: brand.id } });
}

export async function deliverBrandEvent(env: Env, brandId: string, event: Record<string, unknown>): Promise<void> {
  const brand = await orm(env.DB).select().from(brands).where(eq(brands.id, brandId)).get();
  if (!brand?.webhookUrl) return;
  await publishers.webhook.send(brand.webhookUrl, await brandWebhookSecret(env, brand.id), event, publishPolicy(env));
}

/** The publish queue's consumer: retries with backoff; the dead-letter queue fails the post. */
export async function consumePublishBatch(batch: MessageBatch<PublishMessage>, env: Env): Promise<void> {
  const dead = batch.queue.endsWith("-dlq");
  // Side by side, as job webhooks: a slow network or receiver must not hold back other brands'.
  await Promise.all(
    batch.messages.map(async (message) => {
      const body = message.body;
      try {
        if (dead) {
          if (body.kind === "publish")
            await failPost(env, body.postId, `${body.network}: publication failed after retries`, Date.now());
        } else if (body.kind === "publish") {
          await publishOne(env, body.postId, body.network, Date.now());
        } else {
          await deliverBrandEvent(env, body.brandId, body.event);
        }
        message.ack();
      } catch (error) {
        console.warn("publish attempt failed", body.kind, error instanceof Error ? error.message : String(error));
        message.retry({ delaySeconds: Math.min(3600, 5 * 2 ** message.attempts) });
      }
    }),
  );
}

export async function assertPublishable(env: Env, url: string): Promise<void> {
  await assertPublicUrl(url, publishPolicy(env));
}
