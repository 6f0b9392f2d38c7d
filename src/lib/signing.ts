/**
 * HMAC-SHA256 with the backend secret: short-lived capability tokens for the media URLs the
 * container backend reads and writes, and verification of the backend's signed callbacks.
 */
const encoder = new TextEncoder();

async function hmacKey(secret: string): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
}

const toBase64Url = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const fromBase64Url = (text: string) => Uint8Array.from(atob(text.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
const toHex = (bytes: Uint8Array) => [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");

export async function hmacHex(secret: string, message: string): Promise<string> {
  return toHex(new Uint8Array(await crypto.subtle.sign("HMAC", await hmacKey(secret), encoder.encode(message))));
}

/** Constant-time check of `sha256=<hex>` over `timestamp.body`, within `maxSkewMs`. */
export async function verifyBodySignature(secret: string, body: string, timestamp: string | undefined, signature: string | undefined, now: number, maxSkewMs = 10 * 60 * 1000): Promise<boolean> {
  if (!timestamp || !signature?.startsWith("sha256=")) return false;
  if (!/^\d+$/.test(timestamp) || Math.abs(now - Number(timestamp)) > maxSkewMs) return false;
  const hex = signature.slice("sha256=".length);
  if (!/^[0-9a-f]{64}$/.test(hex)) return false;
  const given = Uint8Array.from(hex.match(/../g)!.map((h) => parseInt(h, 16)));
  return crypto.subtle.verify("HMAC", await hmacKey(secret), given, encoder.encode(`${timestamp}.${body}`));
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

export async function verifyGrant<T extends { exp: number } = MediaGrant>(secret: string, token: string, now: number): Promise<T | null> {
  const [payload, signature, extra] = token.split(".");
  if (!payload || !signature || extra !== undefined) return null;
  let valid = false;
  try {
    valid = await crypto.subtle.verify("HMAC", await hmacKey(secret), fromBase64Url(signature), encoder.encode(payload));
  } catch {
    return null;
  }
  if (!valid) return null;
  const grant = JSON.parse(new TextDecoder().decode(fromBase64Url(payload))) as T;
  return grant.exp > now ? grant : null;
}
