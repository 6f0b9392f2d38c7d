/**
 * Where an account's job webhooks go, per key mode: the default URL (checked as a call's
 * webhookUrl is: https to a public host, or loopback http in local development) and the secret's
 * version, which rotation bumps. Live and test settings are apart: a test key never reaches the
 * live URL or secret. D1 holds no secret (they are derived, src/services/webhooks/signing.ts).
 */
import ipaddr from "ipaddr.js";
import type { Env } from "../../env";
import { AppError, invalidRequest } from "../../errors";
import { assertPublicUrl, UnsafeUrlError, type UrlPolicy } from "../../lib/public-url";
import type { KeyMode } from "../accounts/accounts";
import { requireVerifiedEmail } from "../accounts/email-verification";
import { accountWebhookSecret } from "./signing";

export const MAX_WEBHOOK_URL_LENGTH = 2048;
/** After a rotation, the previous secret also signs for this long, so receivers can switch without a gap. */
export const ROTATION_OVERLAP_MS = 24 * 3600 * 1000;

export function webhookPolicy(env: Env): UrlPolicy {
  return { allowPrivate: env.ALLOW_PRIVATE_URLS === "true", resolverUrl: env.DNS_RESOLVER_URL };
}

function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, "").toLowerCase();
  if (bare === "localhost" || bare.endsWith(".localhost")) return true;
  if (!ipaddr.isValid(bare)) return false;
  let address = ipaddr.parse(bare);
  if (address.kind() === "ipv6" && (address as ipaddr.IPv6).isIPv4MappedAddress())
    address = (address as ipaddr.IPv6).toIPv4Address();
  return address.range() === "loopback";
}

/**
 * Throws UnsafeUrlError unless `raw` may receive webhooks: https to a public host (names are
 * resolved and every address must be public), as URL uploads are checked. With
 * ALLOW_PRIVATE_URLS=true (local development only) plain http is accepted on loopback.
 */
export async function assertWebhookUrl(raw: string, policy: UrlPolicy): Promise<URL> {
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) throw new UnsafeUrlError(`at most ${MAX_WEBHOOK_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UnsafeUrlError("not a valid URL");
  }
  if (url.username || url.password) throw new UnsafeUrlError("credentials in the URL are not accepted");
  const httpAllowed = policy.allowPrivate && isLoopback(url.hostname);
  if (url.protocol !== "https:" && !(url.protocol === "http:" && httpAllowed))
    throw new UnsafeUrlError("only https URLs are accepted");
  return await assertPublicUrl(url.toString(), policy);
}

/** The call-time check: a refused URL is a 400 naming the field, before anything is debited. */
export async function validateWebhookUrl(env: Env, raw: string, field = "webhookUrl"): Promise<string> {
  try {
    return (await assertWebhookUrl(raw, webhookPolicy(env))).toString();
  } catch (error) {
    if (error instanceof UnsafeUrlError) throw invalidRequest(`${field}: ${error.message}.`);
    throw error;
  }
}

export interface AccountWebhookView {
  url: string | null;
  secret: string;
  secretVersion: number;
}

/** The columns of each mode's settings: live keys' and test keys' are apart (a test key never reaches the live ones). */
const SETTINGS = {
  live: { url: "webhook_url", version: "webhook_secret_version", rotatedAt: "webhook_secret_rotated_at" },
  test: {
    url: "test_webhook_url",
    version: "test_webhook_secret_version",
    rotatedAt: "test_webhook_secret_rotated_at",
  },
} as const;

export async function accountWebhookRow(db: D1Database, accountId: string, mode: KeyMode) {
  const column = SETTINGS[mode];
  const row = await db
    .prepare(
      `SELECT ${column.url} AS url, ${column.version} AS version, ${column.rotatedAt} AS rotatedAt FROM accounts WHERE id = ?`,
    )
    .bind(accountId)
    .first<{ url: string | null; version: number; rotatedAt: number | null }>();
  if (!row) throw new AppError("not_found", "Account not found.");
  return row;
}

/** The webhook settings of a mode: live keys see the live ones, test keys the test ones. */
export async function getAccountWebhook(
  env: Env,
  accountId: string,
  mode: KeyMode = "live",
): Promise<AccountWebhookView> {
  const row = await accountWebhookRow(env.DB, accountId, mode);
  return {
    url: row.url,
    secret: await accountWebhookSecret(env, accountId, row.version, mode),
    secretVersion: row.version,
  };
}

/**
 * Sets (after the same checks as a call's webhookUrl, and once the account's email is confirmed)
 * or clears the mode's default URL.
 */
export async function setAccountWebhookUrl(
  env: Env,
  accountId: string,
  raw: string | null,
  mode: KeyMode = "live",
): Promise<AccountWebhookView> {
  if (raw !== null) await requireVerifiedEmail(env.DB, accountId, "set a webhook URL");
  const url = raw === null ? null : await validateWebhookUrl(env, raw, "url");
  await accountWebhookSecret(env, accountId, 1);
  await env.DB.prepare(`UPDATE accounts SET ${SETTINGS[mode].url} = ? WHERE id = ?`).bind(url, accountId).run();
  return getAccountWebhook(env, accountId, mode);
}

/**
 * A new secret at once. For 24 h deliveries carry two signatures (new and previous secret), so
 * a receiver can switch to the new secret without missing events; then the previous one stops.
 */
export async function rotateAccountWebhookSecret(
  env: Env,
  accountId: string,
  now: number,
  mode: KeyMode = "live",
): Promise<AccountWebhookView> {
  await accountWebhookSecret(env, accountId, 1);
  const column = SETTINGS[mode];
  await env.DB.prepare(
    `UPDATE accounts SET ${column.version} = ${column.version} + 1, ${column.rotatedAt} = ? WHERE id = ?`,
  )
    .bind(now, accountId)
    .run();
  return getAccountWebhook(env, accountId, mode);
}

/**
 * A call's own webhook URL, checked now (400 if refused). A call without one notifies the
 * default of its key's mode, which the job's insert reads (src/services/media-jobs/creation.ts).
 */
export async function checkCallWebhookUrl(env: Env, accountId: string, callUrl: string): Promise<string> {
  await requireVerifiedEmail(env.DB, accountId, "use a webhook URL");
  const url = await validateWebhookUrl(env, callUrl);
  await accountWebhookSecret(env, accountId, 1);
  return url;
}
