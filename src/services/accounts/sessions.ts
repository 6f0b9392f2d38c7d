/**
 * Developer-area sessions. The cookie holds 192 random bits; D1 holds only their SHA-256.
 * Expiry slides with use (idle timeout) inside an absolute lifetime; sign-in rotates the
 * token and sign-out or a password reset deletes it.
 */
import { sha256Hex } from "../../lib/hash";
import { randomToken } from "../../lib/ids";

export const SESSION_COOKIE = "__Host-session";
export const SESSION_IDLE_MS = 7 * 24 * 3600 * 1000;
export const SESSION_MAX_MS = 30 * 24 * 3600 * 1000;
/** Expiry is pushed forward at most this often, so most page views write nothing. */
const SLIDE_EVERY_MS = 5 * 60 * 1000;

export interface Session {
  accountId: string;
  tokenHash: string;
  expiresAt: number;
  /** True when this use pushed the expiry forward (the cookie is re-issued to match). */
  slid: boolean;
}

export async function createSession(
  db: D1Database,
  accountId: string,
  now: number,
): Promise<{ token: string; expiresAt: number }> {
  const token = randomToken(24);
  const expiresAt = now + SESSION_IDLE_MS;
  await db
    .prepare(
      "INSERT INTO sessions (token_hash, account_id, created_at, last_seen_at, expires_at) VALUES (?, ?, ?, ?, ?)",
    )
    .bind(await sha256Hex(token), accountId, now, now, expiresAt)
    .run();
  return { token, expiresAt };
}

/** The live session of a cookie token, its expiry slid forward; null when unknown or expired. */
export async function resolveSession(db: D1Database, token: string | undefined, now: number): Promise<Session | null> {
  if (!token || token.length > 64) return null;
  const tokenHash = await sha256Hex(token);
  const row = await db
    .prepare("SELECT account_id, created_at, last_seen_at, expires_at FROM sessions WHERE token_hash = ?")
    .bind(tokenHash)
    .first<{ account_id: string; created_at: number; last_seen_at: number; expires_at: number }>();
  if (!row || row.expires_at <= now) return null;
  if (now - row.last_seen_at < SLIDE_EVERY_MS)
    return { accountId: row.account_id, tokenHash, expiresAt: row.expires_at, slid: false };
  const expiresAt = Math.min(now + SESSION_IDLE_MS, row.created_at + SESSION_MAX_MS);
  await db
    .prepare("UPDATE sessions SET last_seen_at = ?, expires_at = ? WHERE token_hash = ?")
    .bind(now, expiresAt, tokenHash)
    .run();
  return { accountId: row.account_id, tokenHash, expiresAt, slid: true };
}

export async function deleteSession(db: D1Database, token: string | undefined): Promise<void> {
  if (!token || token.length > 64) return;
  await db
    .prepare("DELETE FROM sessions WHERE token_hash = ?")
    .bind(await sha256Hex(token))
    .run();
}

export async function deleteAccountSessions(db: D1Database, accountId: string): Promise<void> {
  await db.prepare("DELETE FROM sessions WHERE account_id = ?").bind(accountId).run();
}

export async function deleteExpiredSessions(db: D1Database, now: number): Promise<number> {
  const result = await db.prepare("DELETE FROM sessions WHERE expires_at <= ?").bind(now).run();
  return result.meta.changes;
}
