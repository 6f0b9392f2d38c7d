/**
 * Webhook secrets and signatures (Standard Webhooks, standardwebhooks.com): every secret is
 * derived from the WEBHOOK_SIGNING_KEY Worker secret, its owner's id and a version, so reading D1
 * is not enough to forge a signature.
 */
import { fromBase64, toBase64 } from "../../lib/base64";
import type { Env } from "../../env";
import { AppError } from "../../errors";
import type { KeyMode } from "../accounts/accounts";

const encoder = new TextEncoder();

async function hmac(key: Uint8Array, message: string): Promise<Uint8Array> {
  const imported = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", imported, encoder.encode(message)));
}

/**
 * `whsec_<base64 of 32 bytes>` = HMAC(WEBHOOK_SIGNING_KEY, "<owner>:<version>"). Owners are
 * accounts (`acct_`) and brands (`brd_`): their prefixed ids never collide, so neither can be
 * given the other's secret.
 */
async function derivedSecret(env: Pick<Env, "WEBHOOK_SIGNING_KEY">, ownerId: string, version: number): Promise<string> {
  if (!env.WEBHOOK_SIGNING_KEY)
    throw new AppError("internal_error", "Webhooks are not configured on this server (WEBHOOK_SIGNING_KEY).");
  return `whsec_${toBase64(await hmac(encoder.encode(env.WEBHOOK_SIGNING_KEY), `${ownerId}:${version}`))}`;
}

/**
 * The account's job-webhook secret at `version` (rotation bumps the version stored in D1). Test
 * mode has a secret of its own: a test key's jobs never carry a signature the live endpoint accepts.
 */
export async function accountWebhookSecret(
  env: Pick<Env, "WEBHOOK_SIGNING_KEY">,
  accountId: string,
  version: number,
  mode: KeyMode = "live",
): Promise<string> {
  return derivedSecret(env, mode === "test" ? `${accountId}/test` : accountId, version);
}

/**
 * A brand's secret: signs its events and posts (src/services/social/publishers.ts) and verifies the
 * engagement its integration reports (src/services/social/post-stats.ts). Derived, so reading D1 is
 * not enough to forge either. Version 1 always: brands have no rotation yet; a stored version
 * can add it later without changing the secrets given out today.
 */
export async function brandWebhookSecret(env: Pick<Env, "WEBHOOK_SIGNING_KEY">, brandId: string): Promise<string> {
  return derivedSecret(env, brandId, 1);
}

/**
 * The Standard Webhooks headers for one attempt: `v1,` + base64 HMAC of "{id}.{timestamp}.{body}",
 * one space-separated signature per secret (the current one first).
 */
export async function signWebhook(
  secrets: string | string[],
  id: string,
  timestampSeconds: number,
  body: string,
): Promise<Record<string, string>> {
  const signatures: string[] = [];
  for (const secret of Array.isArray(secrets) ? secrets : [secrets]) {
    const key = fromBase64(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret);
    signatures.push(`v1,${toBase64(await hmac(key, `${id}.${timestampSeconds}.${body}`))}`);
  }
  return { "webhook-id": id, "webhook-timestamp": String(timestampSeconds), "webhook-signature": signatures.join(" ") };
}
