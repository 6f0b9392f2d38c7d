/**
 * Brands: a name, a time zone for scheduling, whether posts need client approval, and the
 * networks it publishes to (each through a publisher: a signed webhook to the brand's
 * automation, a Mastodon account, or a Bluesky account). Free: no credits. Other accounts' brands look unknown.
 */
import { and, eq, notExists, sql } from "drizzle-orm";
import { orm } from "../../db/client";
import { brandChannels, brands, postReviews, posts } from "../../db/schema";
import type { Env } from "../../env";
import { invalidRequest, notFound } from "../../errors";
import { characterCount, displayName } from "../../lib/display-name";
import { newId } from "../../lib/ids";
import { canonicalTimeZone } from "../../lib/zoned-time";
import { channelConfig, channelTarget, type ChannelInput } from "./channel-config";
import { assertWebhookUrl } from "../webhooks/settings";
import { brandWebhookSecret } from "../webhooks/signing";
import { UnsafeUrlError } from "../../lib/public-url";
import { requireVerifiedEmail } from "../accounts/email-verification";
import { publishPolicy } from "./publishing";
import { BLUESKY_DEFAULT_SERVICE, normalHandle } from "./bluesky";

export type Network = "webhook" | "mastodon" | "bluesky";

export interface BrandInput {
  name: string;
  timeZone: string;
  requiresApproval?: boolean;
  webhookUrl?: string | null;
  channels?: ChannelInput[];
}

export interface BrandView {
  brandId: string;
  name: string;
  timeZone: string;
  requiresApproval: boolean;
  webhookUrl: string | null;
  /** Signs the brand's webhooks and the statistics its integration reports back (derived, never stored). */
  webhookSecret: string;
  networks: { network: Network; target: string }[];
  createdAt: string;
}

/**
 * Where a brand sends events and posts is checked when it is saved, with the rules of job webhooks
 * (https, a public host whose every address is public, no credentials in the URL), not only at
 * send time: a refused URL is a 400 naming the field, and nothing is saved. Publication checks
 * again, since a name may resolve elsewhere later.
 */
async function outboundUrl(env: Env, raw: string, field: string): Promise<string> {
  try {
    return (await assertWebhookUrl(raw, publishPolicy(env))).toString();
  } catch (error) {
    if (error instanceof UnsafeUrlError) throw invalidRequest(`${field}: ${error.message}.`);
    throw error;
  }
}

/**
 * Throws a 400 naming the first field refused; returns the input with its time zone spelt
 * canonically and its URLs as checked. Setting a webhook or a channel needs a confirmed email.
 */
async function checkInput<T extends Partial<BrandInput>>(env: Env, accountId: string, input: T): Promise<T> {
  if (input.name !== undefined && (!displayName(input.name) || characterCount(displayName(input.name)) > 100))
    throw invalidRequest("name: 1 to 100 characters.");
  const timeZone = input.timeZone === undefined ? undefined : canonicalTimeZone(input.timeZone);
  if (input.timeZone !== undefined && !timeZone)
    throw invalidRequest(`timeZone: '${input.timeZone.slice(0, 64)}' is not an IANA time zone (e.g. Europe/Paris).`);
  const seen = new Set<string>();
  for (const [i, channel] of (input.channels ?? []).entries()) {
    if (seen.has(channel.network)) throw invalidRequest(`channels.${i}: ${channel.network} is listed twice.`);
    seen.add(channel.network);
    if (channel.network === "mastodon" && !channel.accessToken)
      throw invalidRequest(`channels.${i}.accessToken: Required`);
  }
  if (input.webhookUrl || input.channels?.length)
    await requireVerifiedEmail(env.DB, accountId, "send a brand's events or posts anywhere");
  const webhookUrl = input.webhookUrl ? await outboundUrl(env, input.webhookUrl, "webhookUrl") : input.webhookUrl;
  const channels =
    input.channels &&
    (await Promise.all(
      input.channels.map(
        async (channel, i): Promise<ChannelInput> =>
          channel.network === "webhook"
            ? { ...channel, url: await outboundUrl(env, channel.url, `channels.${i}.url`) }
            : channel.network === "bluesky"
              ? {
                  ...channel,
                  handle: normalHandle(channel.handle),
                  serviceUrl: await outboundUrl(
                    env,
                    channel.serviceUrl || BLUESKY_DEFAULT_SERVICE,
                    `channels.${i}.serviceUrl`,
                  ),
                }
              : { ...channel, instanceUrl: await outboundUrl(env, channel.instanceUrl, `channels.${i}.instanceUrl`) },
      ),
    ));
  return {
    ...input,
    ...(timeZone !== undefined ? { timeZone } : {}),
    ...(input.webhookUrl !== undefined ? { webhookUrl } : {}),
    ...(channels !== undefined ? { channels } : {}),
  };
}

/** The rows of a brand's channels, tokens sealed (plain values: drizzle's builders run when awaited). */
async function channelRows(
  env: Env,
  brandId: string,
  channels: ChannelInput[],
  now: number,
): Promise<(typeof brandChannels.$inferInsert)[]> {
  return Promise.all(
    channels.map(async (channel) => ({
      id: newId("chn", now),
      brandId,
      network: channel.network,
      config: await channelConfig(env, brandId, channel),
      createdAt: now,
    })),
  );
}

async function view(env: Env, row: typeof brands.$inferSelect): Promise<BrandView> {
  const channels = await orm(env.DB).select().from(brandChannels).where(eq(brandChannels.brandId, row.id)).all();
  return {
    brandId: row.id,
    name: row.name,
    timeZone: row.timeZone,
    requiresApproval: row.requiresApproval,
    webhookUrl: row.webhookUrl,
    webhookSecret: await brandWebhookSecret(env, row.id),
    networks: channels.map((c) => ({ network: c.network, target: channelTarget(c) })),
    createdAt: new Date(row.createdAt).toISOString(),
  };
}

export async function createBrand(env: Env, accountId: string, raw: BrandInput, now: number): Promise<BrandView> {
  const input = await checkInput(env, accountId, raw);
  const id = newId("brd", now);
  const row = {
    id,
    accountId,
    name: displayName(input.name),
    timeZone: input.timeZone,
    requiresApproval: input.requiresApproval ?? false,
    webhookUrl: input.webhookUrl ?? null,
    createdAt: now,
  };
  // Before anything is written: a server without WEBHOOK_SIGNING_KEY cannot show the brand's secret.
  await brandWebhookSecret(env, id);
  const d = orm(env.DB);
  await d.batch([
    d.insert(brands).values(row),
    ...(await channelRows(env, id, input.channels ?? [], now)).map((values) => d.insert(brandChannels).values(values)),
  ] as never);
  return view(env, row);
}

export async function brandRow(db: D1Database, accountId: string, brandId: string) {
  const row = await orm(db)
    .select()
    .from(brands)
    .where(and(eq(brands.id, brandId), eq(brands.accountId, accountId)))
    .get();
  if (!row) throw notFound(`Brand ${brandId.slice(0, 64)} not found.`);
  return row;
}

export async function getBrand(env: Env, accountId: string, brandId: string): Promise<BrandView> {
  return view(env, await brandRow(env.DB, accountId, brandId));
}

export async function listBrands(env: Env, accountId: string): Promise<BrandView[]> {
  const rows = await orm(env.DB).select().from(brands).where(eq(brands.accountId, accountId)).all();
  return Promise.all(rows.map((row) => view(env, row)));
}

/** Changes the settings given; `channels`, when given, replaces the brand's networks. */
export async function updateBrand(
  env: Env,
  accountId: string,
  brandId: string,
  raw: Partial<BrandInput>,
  now: number,
): Promise<BrandView> {
  await brandRow(env.DB, accountId, brandId);
  const input = await checkInput(env, accountId, raw);
  const d = orm(env.DB);
  const changes = {
    ...(input.name !== undefined ? { name: displayName(input.name) } : {}),
    ...(input.timeZone !== undefined ? { timeZone: input.timeZone } : {}),
    ...(input.requiresApproval !== undefined ? { requiresApproval: input.requiresApproval } : {}),
    ...(input.webhookUrl !== undefined ? { webhookUrl: input.webhookUrl } : {}),
  };
  // Turning client approval on: a post scheduled without a client's approval goes back to draft
  // (to be submitted), so it cannot publish unapproved; approved ones stay scheduled.
  const approvedByClient = d
    .select({ one: sql`1` })
    .from(postReviews)
    .where(and(eq(postReviews.postId, posts.id), eq(postReviews.decision, "approved")));
  const statements = [
    ...(Object.keys(changes).length ? [d.update(brands).set(changes).where(eq(brands.id, brandId))] : []),
    ...(input.requiresApproval === true
      ? [
          d
            .update(posts)
            .set({ state: "draft", updatedAt: now })
            .where(and(eq(posts.brandId, brandId), eq(posts.state, "scheduled"), notExists(approvedByClient))),
        ]
      : []),
    ...(input.channels
      ? [
          d.delete(brandChannels).where(eq(brandChannels.brandId, brandId)),
          ...(await channelRows(env, brandId, input.channels, now)).map((values) =>
            d.insert(brandChannels).values(values),
          ),
        ]
      : []),
  ];
  if (statements.length) await d.batch(statements as never);
  return getBrand(env, accountId, brandId);
}

export async function brandChannel(db: D1Database, brandId: string, network: string) {
  return orm(db)
    .select()
    .from(brandChannels)
    .where(and(eq(brandChannels.brandId, brandId), eq(brandChannels.network, network as Network)))
    .get();
}
