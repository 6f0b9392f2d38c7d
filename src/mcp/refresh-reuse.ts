/**
 * Refresh-token reuse detection (OAuth 2.1 section 4.3.1) around the library's token endpoint.
 *
 * The library rotates refresh tokens but keeps accepting the one before the current one until
 * the current one is used (a retry after a lost answer), so a stolen token went on working as
 * long as its thief refreshed before the client did, and the client was the one refused. Here
 * every refresh token the endpoint issues is remembered by its hash (never the token); when one
 * of them comes back after the library stopped accepting it, two parties hold the grant: the
 * grant is revoked, so neither the thief's tokens nor the client's work any more, and the person
 * connects again.
 *
 * A 400 alone says nothing of reuse: the current token with a wrong `resource` or `scope`, or
 * from another client, is refused too, and the grant must keep working then. So a refusal is
 * read against the grant the library stores (`grant:<userId>:<grantId>` in OAUTH_KV, holding the
 * hashes of the current and previous refresh tokens): a token it still holds keeps the library's
 * own error; a grant that is gone (disconnected, revoked, expired) says to connect again.
 */
import { z } from "zod";
import type { Env } from "../env";
import { sha256Hex } from "../lib/hash";

export const TOKEN_ENDPOINT = "/oauth/token";

const issuedKey = (grantId: string, tokenHash: string) => `refresh-issued:${grantId}:${tokenHash}`;

/** `userId:grantId:secret`, the library's token format. */
function grantOf(token: string): { userId: string; grantId: string } | null {
  const [userId, grantId, secret] = token.split(":");
  return userId && grantId && secret ? { userId, grantId } : null;
}

async function rememberIssued(env: Env, response: Response, lifetimeSeconds: number): Promise<void> {
  const body = (await response
    .clone()
    .json()
    .catch(() => null)) as { refresh_token?: unknown } | null;
  const token = typeof body?.refresh_token === "string" ? body.refresh_token : undefined;
  const grant = token && grantOf(token);
  if (!token || !grant) return;
  await env.OAUTH_KV.put(issuedKey(grant.grantId, await sha256Hex(token)), "1", { expirationTtl: lifetimeSeconds });
}

/** The part of the library's stored grant this module reads: which refresh tokens it accepts. */
const storedGrant = z.object({ refreshTokenId: z.string().optional(), previousRefreshTokenId: z.string().optional() });

type Refusal = "reuse" | "ended" | "other";

/**
 * Why a refresh token this server issued was refused: `reuse` when the grant lives on but no
 * longer holds the token (it was rotated away), `ended` when the grant is gone, `other` when the
 * library still accepts the token and refused the request for something else.
 */
async function refusalOf(env: Env, grant: { userId: string; grantId: string }, tokenHash: string): Promise<Refusal> {
  const raw = await env.OAUTH_KV.get(`grant:${grant.userId}:${grant.grantId}`, "json");
  if (raw === null) return "ended";
  const stored = storedGrant.safeParse(raw);
  // A record this module cannot read is no proof of reuse: the library's answer stands.
  if (!stored.success) return "other";
  const held = [stored.data.refreshTokenId, stored.data.previousRefreshTokenId];
  return held.includes(tokenHash) ? "other" : "reuse";
}

const descriptions: Record<Exclude<Refusal, "other">, string> = {
  reuse:
    "This refresh token was replaced by a newer one and has been used again: the connection is revoked for safety. Connect again.",
  ended: "This connection has ended (the app was disconnected, revoked or expired): connect again.",
};

export async function tokenEndpointWithReuseDetection(
  request: Request,
  env: Env,
  serve: (request: Request) => Promise<Response>,
  revokeGrant: (grantId: string, userId: string) => Promise<void>,
  refreshLifetimeSeconds: number,
): Promise<Response> {
  const form = await request
    .clone()
    .formData()
    .catch(() => null);
  const presented = form?.get("grant_type") === "refresh_token" ? form.get("refresh_token") : null;
  const response = await serve(request);
  if (response.status === 200) {
    await rememberIssued(env, response, refreshLifetimeSeconds);
    return response;
  }
  const grant = typeof presented === "string" ? grantOf(presented) : null;
  if (!grant || response.status !== 400) return response;
  const tokenHash = await sha256Hex(presented as string);
  const issued = await env.OAUTH_KV.get(issuedKey(grant.grantId, tokenHash));
  if (issued === null) return response;
  const refusal = await refusalOf(env, grant, tokenHash);
  if (refusal === "other") return response;
  if (refusal === "reuse") await revokeGrant(grant.grantId, grant.userId);
  const body = { error: "invalid_grant", error_description: descriptions[refusal] };
  // The library's headers stay (JSON, no-store, CORS for browser clients); only the reason changes.
  const headers = new Headers(response.headers);
  headers.delete("content-length");
  return new Response(JSON.stringify(body), { status: 400, headers });
}
