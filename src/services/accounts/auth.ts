/**
 * Self-service sign-up, sign-in and password reset for the developer area. Messages never say
 * which of email and password was wrong; unknown emails cost the same hashing time as known
 * ones. Reset links are signed (AUTH_SECRET), expire in an hour and are single-use: they are
 * bound to the current password hash, which the reset replaces.
 */
import { z } from "@hono/zod-openapi";
import type { Env } from "../../env";
import { AppError, invalidRequest } from "../../errors";
import { sha256Hex } from "../../lib/hash";
import { decoyHash, hashPassword, verifyPassword } from "../../lib/password";
import { authSecret, signGrant, verifyGrant } from "../../lib/signing";
import { createAccount, type AccountView } from "./accounts";
import { revokeAllConnectedApps } from "./connected-apps";
import { mailerFor, mailLinkOrigin } from "../platform/mailer";
import { deleteAccountSessions } from "./sessions";

export const MIN_PASSWORD_LENGTH = 10;
const MAX_PASSWORD_LENGTH = 200;
export const RESET_TTL_MS = 3600 * 1000;

const emailSchema = z.email().max(254);

export function normalizeEmail(raw: unknown): string {
  const email = typeof raw === "string" ? raw.trim().toLowerCase() : "";
  if (!emailSchema.safeParse(email).success) throw invalidRequest("Enter a valid email address.");
  return email;
}

function checkNewPassword(password: unknown): string {
  if (typeof password !== "string" || [...password].length < MIN_PASSWORD_LENGTH) {
    throw invalidRequest(`Choose a password of at least ${MIN_PASSWORD_LENGTH} characters.`);
  }
  if (password.length > MAX_PASSWORD_LENGTH)
    throw invalidRequest(`Choose a password of at most ${MAX_PASSWORD_LENGTH} characters.`);
  return password;
}

/**
 * Counts one attempt and throws rate_limited past a limit. A stranger must not be able to lock an
 * owner out by failing to sign in as them from elsewhere, so the tight limit (AUTH_LIMITER) counts
 * per client address and per address and email pair; the email alone is counted only under a much
 * higher bound (AUTH_EMAIL_LIMITER), which slows a guessing campaign spread over many addresses
 * without letting one address lock anybody out.
 */
export async function limitAttempts(env: Env, action: string, address: string, email?: string): Promise<void> {
  const counts: [RateLimit | undefined, string][] = [
    [env.AUTH_LIMITER, `${action}:ip:${address}`],
    ...(email
      ? ([
          [env.AUTH_LIMITER, `${action}:pair:${address}:${email}`],
          [env.AUTH_EMAIL_LIMITER, `${action}:email:${email}`],
        ] as [RateLimit | undefined, string][])
      : []),
  ];
  const outcomes = await Promise.all(counts.map(([limiter, key]) => limiter?.limit({ key })));
  if (outcomes.some((o) => o && !o.success))
    throw new AppError("rate_limited", "Too many attempts. Wait a minute and try again.");
}

/** Creates a self-service account; its email is unverified until the link of sendVerificationMail is opened. */
export async function signUp(
  env: Env,
  input: { email: unknown; password: unknown },
  now: number,
): Promise<AccountView> {
  const email = normalizeEmail(input.email);
  const password = checkNewPassword(input.password);
  const credits = Math.max(0, Math.floor(Number(env.SIGNUP_CREDITS ?? "0")) || 0);
  try {
    return await createAccount(
      env.DB,
      { email, credits, passwordHash: await hashPassword(password), emailVerified: false },
      now,
    );
  } catch (error) {
    if (error instanceof AppError && error.code === "invalid_request") {
      throw invalidRequest("This email cannot be used to sign up. If it is yours, sign in or reset the password.");
    }
    throw error;
  }
}

const wrongCredentials = () => invalidRequest("Email or password is incorrect.");

/** The account id for a correct email and password; one generic error otherwise. */
export async function signIn(db: D1Database, input: { email: unknown; password: unknown }): Promise<string> {
  const email = typeof input.email === "string" ? input.email.trim().toLowerCase().slice(0, 254) : "";
  const password = typeof input.password === "string" ? input.password.slice(0, MAX_PASSWORD_LENGTH) : "";
  const row = email
    ? await db
        .prepare("SELECT id, password_hash FROM accounts WHERE email = ?")
        .bind(email)
        .first<{ id: string; password_hash: string | null }>()
    : null;
  const ok = await verifyPassword(password, row?.password_hash ?? (await decoyHash()));
  if (!row?.password_hash || !ok) throw wrongCredentials();
  return row.id;
}

interface ResetGrant {
  purpose: "password-reset";
  accountId: string;
  /** Fingerprint of the password hash the link was issued for: a reset changes it. */
  pw: string;
  exp: number;
}

const fingerprint = async (passwordHash: string | null) => (await sha256Hex(passwordHash ?? "none")).slice(0, 32);

const resetSecret = (env: Env) => authSecret(env, "Password reset is not configured");

/**
 * Mails a reset link when the email has an account; the caller answers the same either way. The
 * link is built on mailLinkOrigin, never on the asker's Host header outside local development.
 */
export async function requestPasswordReset(
  env: Env,
  rawEmail: unknown,
  requestOrigin: string,
  now: number,
): Promise<void> {
  const email = normalizeEmail(rawEmail);
  const row = await env.DB.prepare("SELECT id, password_hash FROM accounts WHERE email = ?")
    .bind(email)
    .first<{ id: string; password_hash: string | null }>();
  if (!row) return;
  const grant: ResetGrant = {
    purpose: "password-reset",
    accountId: row.id,
    pw: await fingerprint(row.password_hash),
    exp: now + RESET_TTL_MS,
  };
  const link = `${mailLinkOrigin(env, requestOrigin)}/app/reset/${await signGrant(resetSecret(env), grant)}`;
  await mailerFor(env).send({
    to: email,
    subject: "Reset your password",
    text: `Someone asked to reset the password of your account.\n\nChoose a new password within one hour:\n${link}\n\nIf it was not you, ignore this mail: nothing changes.`,
  });
}

/** The account a reset link is valid for, with its current hash, or null (bad signature, expired, already used). */
async function resetTarget(
  env: Env,
  token: string,
  now: number,
): Promise<{ accountId: string; passwordHash: string | null } | null> {
  if (token.length > 1024) return null;
  const grant = await verifyGrant<ResetGrant>(resetSecret(env), token, now).catch(() => null);
  if (!grant || grant.purpose !== "password-reset") return null;
  const row = await env.DB.prepare("SELECT password_hash FROM accounts WHERE id = ?")
    .bind(grant.accountId)
    .first<{ password_hash: string | null }>();
  if (!row || (await fingerprint(row.password_hash)) !== grant.pw) return null;
  return { accountId: grant.accountId, passwordHash: row.password_hash };
}

/** The account a reset link is valid for, or null (bad signature, expired, already used). */
export async function checkResetToken(env: Env, token: string, now: number): Promise<string | null> {
  return (await resetTarget(env, token, now))?.accountId ?? null;
}

/**
 * Sets the new password and signs every session out; the link cannot be used again. Whoever knew
 * the old password may have connected an assistant: its grants are revoked once the link and the
 * password are valid, before the change, so a failure there spends nothing. Opening the link
 * proves the email is the owner's, so it counts as verified. With `secure` (the reset page's box,
 * checked by default) whatever someone else may have set up while they held the account goes too:
 * every API key is revoked, the account's and its brands' webhook URLs are cleared, both webhook
 * signing secrets are replaced (the old ones stop at once) and the brands' publishing channels go.
 */
export async function resetPassword(
  env: Env,
  token: string,
  password: unknown,
  now: number,
  options: { secure?: boolean } = {},
): Promise<string> {
  const used = () => invalidRequest("This reset link is invalid, expired or already used. Ask for a new one.");
  const target = await resetTarget(env, token, now);
  if (!target) throw used();
  const hash = await hashPassword(checkNewPassword(password));
  if (env.OAUTH_PROVIDER) await revokeAllConnectedApps(env.OAUTH_PROVIDER, target.accountId);
  const db = env.DB;
  // Only over the hash the link was issued for: of two concurrent uses of one link, one wins
  // (the statements after it are conditioned on the hash it wrote).
  const changedBy = "id = ?1 AND password_hash = ?2";
  const [changed] = await db.batch([
    db
      .prepare(
        "UPDATE accounts SET password_hash = ?1, email_verified_at = COALESCE(email_verified_at, ?3) WHERE id = ?2 AND password_hash IS ?4",
      )
      .bind(hash, target.accountId, now, target.passwordHash),
    ...(options.secure
      ? [
          db
            .prepare(
              `UPDATE api_keys SET revoked_at = ?3 WHERE revoked_at IS NULL AND account_id = (SELECT id FROM accounts WHERE ${changedBy})`,
            )
            .bind(target.accountId, hash, now),
          // A new signing secret in both modes, the previous one dropped at once (no rotation overlap):
          // whoever read it while holding the account cannot sign as us.
          db
            .prepare(
              "UPDATE accounts SET webhook_url = NULL, test_webhook_url = NULL, webhook_secret_version = webhook_secret_version + 1, webhook_secret_rotated_at = NULL, " +
                `test_webhook_secret_version = test_webhook_secret_version + 1, test_webhook_secret_rotated_at = NULL WHERE ${changedBy}`,
            )
            .bind(target.accountId, hash),
          db
            .prepare(
              `UPDATE brands SET webhook_url = NULL WHERE account_id = (SELECT id FROM accounts WHERE ${changedBy})`,
            )
            .bind(target.accountId, hash),
          // Publishing channels send posts wherever they were pointed (a webhook URL, a Mastodon instance).
          db
            .prepare(
              `DELETE FROM brand_channels WHERE brand_id IN (SELECT id FROM brands WHERE account_id = (SELECT id FROM accounts WHERE ${changedBy}))`,
            )
            .bind(target.accountId, hash),
        ]
      : []),
  ]);
  if (changed!.meta.changes === 0) throw used();
  await deleteAccountSessions(env.DB, target.accountId);
  return target.accountId;
}
