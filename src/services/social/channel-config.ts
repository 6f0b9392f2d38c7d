/**
 * What a brand channel keeps in `brand_channels.config` (JSON): the webhook's URL, or the
 * Mastodon instance and access token. The token is encrypted at rest (src/lib/sealed-text.ts)
 * under a key derived from AUTH_SECRET for this purpose alone and bound to the brand; it is
 * opened only where a publisher calls Mastodon, and no view shows it. Rows written before the
 * encryption held the token in plain text: the cron seals them (sealLegacyTokens), and until it
 * has, they are still read.
 */
import { z } from "zod";
import type { brandChannels } from "../../db/schema";
import type { Env } from "../../env";
import { isSealed, openText, sealText } from "../../lib/sealed-text";
import { authSecret } from "../../lib/signing";
import { PublishError } from "./publishers";

export type ChannelInput =
  | { network: "webhook"; url: string }
  | { network: "mastodon"; instanceUrl: string; accessToken: string };

const TOKEN_PURPOSE = "brand-channel-access-token";
const tokenSecret = (env: Pick<Env, "AUTH_SECRET">) =>
  authSecret(env, "Channel access tokens cannot be stored on this server");

const WebhookConfig = z.object({ url: z.string() });
const MastodonConfig = z.object({ instanceUrl: z.string(), accessToken: z.string() });

/** The JSON to store for a channel of `brandId`, its access token sealed. */
export async function channelConfig(
  env: Pick<Env, "AUTH_SECRET">,
  brandId: string,
  channel: ChannelInput,
): Promise<string> {
  if (channel.network === "webhook") return JSON.stringify({ url: channel.url });
  const accessToken = await sealText(tokenSecret(env), TOKEN_PURPOSE, channel.accessToken, brandId);
  return JSON.stringify({ instanceUrl: channel.instanceUrl.replace(/\/$/, ""), accessToken });
}

/** Where the channel publishes (its URL or instance), for views: never the token. */
export function channelTarget(row: typeof brandChannels.$inferSelect): string {
  const config = JSON.parse(row.config);
  return row.network === "webhook" ? WebhookConfig.parse(config).url : MastodonConfig.parse(config).instanceUrl;
}

/**
 * The channel's settings with its token in clear, for the publisher. A token that does not
 * open (AUTH_SECRET changed, or the row was altered) is a refusal no retry can fix: the owner
 * has to connect the channel again.
 */
export async function publisherSettings(
  env: Pick<Env, "AUTH_SECRET">,
  row: typeof brandChannels.$inferSelect,
): Promise<ChannelInput> {
  if (row.network === "webhook") return { network: "webhook", ...WebhookConfig.parse(JSON.parse(row.config)) };
  const config = MastodonConfig.parse(JSON.parse(row.config));
  try {
    return {
      network: "mastodon",
      instanceUrl: config.instanceUrl,
      accessToken: await openText(tokenSecret(env), TOKEN_PURPOSE, config.accessToken, row.brandId),
    };
  } catch (error) {
    throw new PublishError(
      `the Mastodon access token cannot be read (${error instanceof Error ? error.message : String(error)}); connect the channel again`,
      false,
    );
  }
}

/**
 * Seals the access tokens of rows written before the encryption (plain text in D1), at most
 * `limit` per run; each row is rewritten only if it still holds that plain token, so a save of the
 * channel in between wins. Returns how many rows were sealed.
 */
export async function sealLegacyTokens(env: Pick<Env, "AUTH_SECRET" | "DB">, limit = 100): Promise<number> {
  if (!env.AUTH_SECRET) return 0;
  const rows = await env.DB.prepare(
    "SELECT id, brand_id, config FROM brand_channels WHERE network = 'mastodon' AND json_extract(config, '$.accessToken') NOT LIKE 'v1:%' LIMIT ?",
  )
    .bind(limit)
    .all<{ id: string; brand_id: string; config: string }>();
  let sealed = 0;
  for (const row of rows.results) {
    const config = MastodonConfig.safeParse(JSON.parse(row.config));
    if (!config.success || isSealed(config.data.accessToken)) continue;
    const next = await channelConfig(env, row.brand_id, { network: "mastodon", ...config.data });
    const changed = await env.DB.prepare("UPDATE brand_channels SET config = ? WHERE id = ? AND config = ?")
      .bind(next, row.id, row.config)
      .run();
    sealed += changed.meta.changes;
  }
  return sealed;
}
