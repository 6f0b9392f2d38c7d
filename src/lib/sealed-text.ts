/**
 * Secrets the Worker has to use again later (a brand's Mastodon access token), encrypted at
 * rest so that reading D1 does not give them away. AES-256-GCM with a random 96-bit IV per
 * value, under a key derived with HKDF-SHA256 from a Worker secret and a purpose label: the
 * Worker secret never keys the cipher itself, and each purpose has a key of its own. `context`
 * (e.g. the brand id) is authenticated with the value, so a value copied into another row does
 * not open there. Stored as `v1:<base64 IV>:<base64 ciphertext and tag>`; the version lets a
 * later scheme read values written under this one.
 */
import { fromBase64, toBase64 } from "./base64";

const VERSION = "v1";
const encoder = new TextEncoder();

async function keyFor(secret: string, purpose: string): Promise<CryptoKey> {
  const material = await crypto.subtle.importKey("raw", encoder.encode(secret), "HKDF", false, ["deriveKey"]);
  return crypto.subtle.deriveKey(
    // A zero salt (RFC 5869's default): the Worker secret is random already; the label separates keys.
    { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(32), info: encoder.encode(`media-credits-api/${purpose}`) },
    material,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
}

/** True for a value this module wrote; anything else was stored before encryption (plain text). */
export function isSealed(stored: string): boolean {
  return stored.startsWith(`${VERSION}:`);
}

export async function sealText(secret: string, purpose: string, plaintext: string, context: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const ciphertext = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: encoder.encode(context) },
    await keyFor(secret, purpose),
    encoder.encode(plaintext),
  );
  return `${VERSION}:${toBase64(iv)}:${toBase64(new Uint8Array(ciphertext))}`;
}

/**
 * The plaintext of a sealed value; a value without the `v1:` prefix is returned as it is (rows
 * written before encryption). Throws when the value was altered, belongs to another context,
 * or was sealed under another secret.
 */
export async function openText(secret: string, purpose: string, stored: string, context: string): Promise<string> {
  if (!isSealed(stored)) return stored;
  const [, iv, ciphertext, extra] = stored.split(":");
  if (!iv || !ciphertext || extra !== undefined) throw new Error("malformed sealed value");
  const plaintext = await crypto.subtle.decrypt(
    { name: "AES-GCM", iv: fromBase64(iv), additionalData: encoder.encode(context) },
    await keyFor(secret, purpose),
    fromBase64(ciphertext),
  );
  return new TextDecoder().decode(plaintext);
}
