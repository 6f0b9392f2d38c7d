/**
 * What a brand channel keeps in `brand_channels.config` (JSON): the webhook's URL, the
 * Mastodon instance and access token, or the Bluesky handle, service URL and app password. The
 * token and the app password are encrypted at rest (src/lib/sealed-text.ts) under keys derived
 * from AUTH_SECRET for these purposes alone and bound to the brand; they are opened only where a
 * publisher calls the network, and no view shows them. Mastodon rows written before the
 * encryption held the token in plain text: the cron seals them (sealLegacyTokens), and until it
 * has, they are still read. Bluesky came after it: its app password is sealed from the start.
 */
import { z } from "zod";
import type { brandChannels } from "../../db/schema";
import type { Env } from "../../env";
import { isSealed, openText, sealText } from "../../lib/sealed-text";
import { authSecret } from "../../lib/signing";
import { BLUESKY_DEFAULT_SERVICE } from "./bluesky";
import { PublishError } from "./publishers";

/** A channel's settings as the publisher uses them, secrets in clear. */
export type ChannelSettings =
  | { network: "webhook"; url: string }
  | { network: "mastodon"; instanceUrl: string; accessToken: string }
  | { network: "bluesky"; handle: string; appPassword: string; serviceUrl: string };

/** A channel as given (a Bluesky account's service defaults to bsky.social). */
export type ChannelInput =
  | Exclude<ChannelSettings, { network: "bluesky" }>
  | { network: "bluesky"; handle: string; appPassword: string; serviceUrl?: string };

const TOKEN_PURPOSE = "brand-channel-access-token";
const APP_PASSWORD_PURPOSE = "brand-channel-app-password";
const tokenSecret = (env: Pick<Env, "AUTH_SECRET">) =>
  authSecret(env, "Channel access tokens cannot be stored on this server");

const WebhookConfig = z.object({ url: z.string() });
const MastodonConfig = z.object({ instanceUrl: z.string(), accessToken: z.string() });
const BlueskyConfig = z.object({ handle: z.string(), serviceUrl: z.string(), appPassword: z.string() });

/** The JSON to store for a channel of `brandId`, its access token sealed. */
export async function channelConfig(
  env: Pick<Env, "AUTH_SECRET">,
  brandId: string,
  channel: ChannelInput,
): Promise<string> {
  if (channel.network === "webhook") return JSON.stringify({ url: channel.url });
  if (channel.network === "bluesky") {
    const appPassword = await sealText(tokenSecret(env), APP_PASSWORD_PURPOSE, channel.appPassword, brandId);
    const serviceUrl = (channel.serviceUrl || BLUESKY_DEFAULT_SERVICE).replace(/\/$/, "");
    return JSON.stringify({ handle: channel.handle, serviceUrl, appPassword });
  }
  const accessToken = await sealText(tokenSecret(env), TOKEN_PURPOSE, channel.accessToken, brandId);
  return JSON.stringify({ instanceUrl: channel.instanceUrl.replace(/\/$/, ""), accessToken });
}

/** Where the channel publishes (its URL, instance or Bluesky service), for views: never a secret. */
export function channelTarget(row: typeof brandChannels.$inferSelect): string {
  const config = JSON.parse(row.config);
  if (row.network === "bluesky") return BlueskyConfig.parse(config).serviceUrl;
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
): Promise<ChannelSettings> {
  if (row.network === "webhook") return { network: "webhook", ...WebhookConfig.parse(JSON.parse(row.config)) };
  if (row.network === "bluesky") {
    const config = BlueskyConfig.parse(JSON.parse(row.config));
    try {
      // Never stored in plain text: a value that is not sealed was not written by this code.
      if (!isSealed(config.appPassword)) throw new Error("not sealed");
      return {
        network: "bluesky",
        handle: config.handle,
        serviceUrl: config.serviceUrl,
        appPassword: await openText(tokenSecret(env), APP_PASSWORD_PURPOSE, config.appPassword, row.brandId),
      };
    } catch (error) {
      throw new PublishError(
        `the Bluesky app password cannot be read (${error instanceof Error ? error.message : String(error)}); connect the channel again`,
        false,
      );
    }
  }
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
