/**
 * Email verification: an email belongs to whoever can read it. A self-service account gets a
 * signed link by mail (valid 24 hours, for that address only); until it is opened, or a password
 * reset proves the same thing, the account cannot create API keys, set webhooks, buy or connect
 * an assistant, since anyone could have typed someone else's address.
 */
import type { Env } from "../../env";
import { invalidRequest } from "../../errors";
import { authSecret, signGrant, verifyGrant } from "../../lib/signing";
import { mailerFor, mailLinkOrigin } from "../platform/mailer";

export const VERIFY_TTL_MS = 24 * 3600 * 1000;

interface VerifyGrant {
  purpose: "verify-email";
  accountId: string;
  /** The address the link was mailed to: a link is good for that address only. */
  email: string;
  exp: number;
}

/** Mails the link that proves the owner reads this email (at sign-up, and again on request). */
export async function sendVerificationMail(
  env: Env,
  accountId: string,
  requestOrigin: string,
  now: number,
): Promise<void> {
  const row = await env.DB.prepare("SELECT email, email_verified_at FROM accounts WHERE id = ?")
    .bind(accountId)
    .first<{ email: string; email_verified_at: number | null }>();
  if (!row || row.email_verified_at !== null) return;
  const grant: VerifyGrant = { purpose: "verify-email", accountId, email: row.email, exp: now + VERIFY_TTL_MS };
  const link = `${mailLinkOrigin(env, requestOrigin)}/app/verify/${await signGrant(authSecret(env, "Email verification is not configured"), grant)}`;
  await mailerFor(env).send({
    to: row.email,
    subject: "Confirm your email",
    text: `Welcome. Confirm that this address is yours to create API keys, set webhooks and buy credits:\n${link}\n\nThe link works for 24 hours. If you did not create an account, ignore this mail: nothing more happens.`,
  });
}

/** Marks the email of a valid link as verified; the account id, or null for a bad, expired or stale link. */
export async function verifyEmail(env: Env, token: string, now: number): Promise<string | null> {
  if (token.length > 2048 || !env.AUTH_SECRET) return null;
  const grant = await verifyGrant<VerifyGrant>(env.AUTH_SECRET, token, now).catch(() => null);
  if (!grant || grant.purpose !== "verify-email") return null;
  await env.DB.prepare(
    "UPDATE accounts SET email_verified_at = COALESCE(email_verified_at, ?) WHERE id = ? AND email = ?",
  )
    .bind(now, grant.accountId, grant.email)
    .run();
  const row = await env.DB.prepare("SELECT email_verified_at FROM accounts WHERE id = ? AND email = ?")
    .bind(grant.accountId, grant.email)
    .first<{ email_verified_at: number | null }>();
  return row?.email_verified_at ? grant.accountId : null;
}

export async function isEmailVerified(db: D1Database, accountId: string): Promise<boolean> {
  const row = await db
    .prepare("SELECT email_verified_at FROM accounts WHERE id = ?")
    .bind(accountId)
    .first<{ email_verified_at: number | null }>();
  return row?.email_verified_at != null;
}

/**
 * Refuses `action` (a 400 saying why) until the owner has confirmed the email: until then anyone
 * could have typed someone else's address, and keys, webhooks and payments would be theirs.
 */
export async function requireVerifiedEmail(db: D1Database, accountId: string, action: string): Promise<void> {
  if (!(await isEmailVerified(db, accountId))) {
    throw invalidRequest(
      `Confirm the account's email first (the link mailed at sign-up; the overview sends it again) to ${action}.`,
    );
  }
}
