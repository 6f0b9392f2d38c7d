/**
 * HMAC-SHA256 with the backend secret: short-lived capability tokens for the media URLs the
 * container backend reads and writes (and other expiring tokens). The backend's callbacks are
 * verified with packages/wire/src/protocol.ts (verifyCallbackSignature).
 */
import { AppError } from "../errors";
import { fromBase64Url, toBase64Url } from "./base64";

const encoder = new TextEncoder();

/**
 * AUTH_SECRET, which signs the capabilities handed to users (download ids, reset links, media
 * links); `unconfigured` is the error when it is not set, naming the feature that needs it.
 */
export function authSecret(env: { AUTH_SECRET?: string }, unconfigured: string): string {
  if (!env.AUTH_SECRET) throw new AppError("internal_error", `${unconfigured} (AUTH_SECRET).`);
  return env.AUTH_SECRET;
}

async function hmacKey(secret: string): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
    "verify",
  ]);
}

const toHex = (bytes: Uint8Array) => [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");

/** The first `bytes` bytes of HMAC-SHA256(secret, message), base64url: a token derived, not stored. */
export async function hmacToken(secret: string, message: string, bytes = 24): Promise<string> {
  return toBase64Url(
    new Uint8Array(await crypto.subtle.sign("HMAC", await hmacKey(secret), encoder.encode(message))).slice(0, bytes),
  );
}

export async function hmacHex(secret: string, message: string): Promise<string> {
  return toHex(new Uint8Array(await crypto.subtle.sign("HMAC", await hmacKey(secret), encoder.encode(message))));
}

export interface MediaGrant {
  /** R2 object key. */
  key: string;
  method: "GET" | "PUT";
  /** Unix ms after which the token is refused. */
  exp: number;
  contentType?: string;
}

/** `<payload>.<signature>`, both base64url; any JSON payload with an expiry (media grants, reset links). */
export async function signGrant<T extends { exp: number }>(secret: string, grant: T): Promise<string> {
  const payload = toBase64Url(encoder.encode(JSON.stringify(grant)));
  const signature = new Uint8Array(await crypto.subtle.sign("HMAC", await hmacKey(secret), encoder.encode(payload)));
  return `${payload}.${toBase64Url(signature)}`;
}

export async function verifyGrant<T extends { exp: number } = MediaGrant>(
  secret: string,
  token: string,
  now: number,
): Promise<T | null> {
  const [payload, signature, extra] = token.split(".");
  if (!payload || !signature || extra !== undefined) return null;
  let valid = false;
  try {
    valid = await crypto.subtle.verify(
      "HMAC",
      await hmacKey(secret),
      fromBase64Url(signature),
      encoder.encode(payload),
    );
  } catch {
    return null;
  }
  if (!valid) return null;
  const grant = JSON.parse(new TextDecoder().decode(fromBase64Url(payload))) as T;
  return grant.exp > now ? grant : null;
}
