/**
 * Password hashing with scrypt (node:crypto under nodejs_compat), memory-hard and within
 * workerd's limits (N*r*p <= 2^20; production workerd refuses PBKDF2 above 100,000
 * iterations). The parameters are stored with the hash, `scrypt$15$8$1$<salt>$<hash>`, so
 * they can be raised later while old hashes still verify.
 */
import { randomBytes, scrypt, timingSafeEqual } from "node:crypto";

const LOG_N = 15;
const R = 8;
const P = 1;
const KEY_LENGTH = 32;

function derive(password: string, salt: Buffer, logN: number, r: number, p: number): Promise<Buffer> {
  const N = 2 ** logN;
  return new Promise((resolve, reject) =>
    // maxmem: scrypt needs 128 * N * r bytes (32 MiB here), above node's 32 MiB default.
    scrypt(password.normalize("NFC"), salt, KEY_LENGTH, { N, r, p, maxmem: 256 * N * r }, (error, key) =>
      error ? reject(error) : resolve(key),
    ),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, LOG_N, R, P);
  return ["scrypt", LOG_N, R, P, salt.toString("base64url"), key.toString("base64url")].join("$");
}

/** True when `password` matches `stored`; false for any malformed stored value. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split("$");
  if (parts.length !== 6 || parts[0] !== "scrypt") return false;
  const [logN, r, p] = parts.slice(1, 4).map(Number);
  if (![logN, r, p].every(Number.isInteger) || logN > 20 || 2 ** logN * r * p > 2 ** 20) return false;
  const expected = Buffer.from(parts[5], "base64url");
  const key = await derive(password, Buffer.from(parts[4], "base64url"), logN, r, p);
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/** A hash of a random password: lets sign-in spend the same time whether or not the email exists. */
let decoy: Promise<string> | undefined;
export function decoyHash(): Promise<string> {
  decoy ??= hashPassword(randomBytes(16).toString("hex"));
  return decoy;
}
