/**
 * Accounts and their API keys. A key is `mk_live_` (or `mk_test_`: test mode, no credits spent,
 * results marked TEST, data apart) + 192 random bits; only its SHA-256 is stored, and it is
 * shown once, when created. Revocation is read on every request.
 */
import { AppError, invalidRequest, unauthorized } from "../../errors";
import { sha256Hex } from "../../lib/hash";
import { characterCount, displayName } from "../../lib/display-name";
import { newId, randomToken } from "../../lib/ids";
import { firstPeriodEnd, isConstraintError } from "../billing/credits";
import { planAllowance, restApiPlans, type Plan } from "../billing/pricing";
import type { PaidPlan } from "../billing/catalog";
import { accountLimits } from "./limits";
import { requireVerifiedEmail } from "./email-verification";

export const API_KEY_PREFIX = "mk_live_";
export const TEST_KEY_PREFIX = "mk_test_";
export const keyModes = ["live", "test"] as const;
export type KeyMode = (typeof keyModes)[number];
const isKeyMode = (value: unknown): value is KeyMode => keyModes.includes(value as KeyMode);
/** "Last used" is precise to a minute, so a busy key writes at most once a minute. */
const LAST_USED_RESOLUTION_MS = 60_000;
const API_KEY_SHAPE = /^mk_(live|test)_[A-Za-z0-9_-]{32}$/;

export interface AccountView {
  accountId: string;
  email: string;
  balance: number;
  plan: Plan;
}

/**
 * Creates an account. `credits` are purchased credits (never expire); a monthly plan also
 * receives its allowance as plan credits for a first 30-day period. Both are ledger entries.
 * The email counts as verified unless `emailVerified` is false (self-service sign-up): an
 * operator who creates an account vouches for its address.
 */
export async function createAccount(
  db: D1Database,
  input: { email: string; credits?: number; plan?: Plan; passwordHash?: string; emailVerified?: boolean },
  now: number,
): Promise<AccountView> {
  const id = newId("acct", now);
  const plan = input.plan ?? "payg";
  const credits = input.credits ?? 0;
  const allowance = plan === "payg" ? 0 : planAllowance[plan];
  const periodEnd = plan === "payg" ? null : firstPeriodEnd(now);
  const email = input.email.trim().toLowerCase();
  const entry = (kind: string, planDelta: number, purchasedDelta: number, key: string) =>
    db
      .prepare(
        `INSERT INTO ledger (id, account_id, kind, amount, plan_delta, purchased_delta, idempotency_key, reason, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)`,
      )
      .bind(
        newId("led", now),
        id,
        kind,
        planDelta + purchasedDelta,
        planDelta,
        purchasedDelta,
        key,
        "account opened",
        now,
      );
  try {
    await db.batch([
      db
        .prepare(
          `INSERT INTO accounts (id, email, plan, plan_credits, plan_period_granted, purchased_credits, plan_period_end, password_hash, created_at, email_verified_at)
           VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6, ?7, ?8, ?9)`,
        )
        .bind(
          id,
          email,
          plan,
          allowance,
          credits,
          periodEnd,
          input.passwordHash ?? null,
          now,
          input.emailVerified === false ? null : now,
        ),
      ...(credits > 0 ? [entry("grant", 0, credits, `open:${id}:grant`)] : []),
      ...(allowance > 0 ? [entry("plan_grant", allowance, 0, `plan_grant:${id}:${now}`)] : []),
    ]);
  } catch (error) {
    if (isConstraintError(error, "UNIQUE")) throw invalidRequest(`email: an account with ${email} already exists.`);
    throw error;
  }
  return { accountId: id, email, balance: allowance + credits, plan };
}

export async function getAccount(db: D1Database, accountId: string): Promise<AccountView> {
  const row = await db
    .prepare("SELECT id, email, plan, plan_credits + purchased_credits AS balance FROM accounts WHERE id = ?")
    .bind(accountId)
    .first<{ id: string; email: string; plan: Plan; balance: number }>();
  if (!row) throw new AppError("not_found", `Account ${accountId} not found.`);
  return { accountId: row.id, email: row.email, balance: row.balance, plan: row.plan };
}

/** Everything the developer area shows about an account's credits and plan. */
export interface AccountDetails extends AccountView {
  planCredits: number;
  purchasedCredits: number;
  planPeriodEnd: number | null;
  planCancelAtPeriodEnd: boolean;
  /** The smaller paid plan the next period moves to (a downgrade waits for the period's end), or null. */
  planNext: PaidPlan | null;
  stripeCustomerId: string | null;
  stripeSubscriptionId: string | null;
  /** Whether the owner confirmed the email (src/services/accounts/email-verification.ts). */
  emailVerified: boolean;
}

export async function getAccountDetails(db: D1Database, accountId: string): Promise<AccountDetails> {
  const row = await db
    .prepare(
      `SELECT id, email, plan, plan_credits, purchased_credits, plan_period_end, plan_cancel_at_period_end, plan_next,
         stripe_customer_id, stripe_subscription_id, email_verified_at FROM accounts WHERE id = ?`,
    )
    .bind(accountId)
    .first<{
      id: string;
      email: string;
      plan: Plan;
      plan_credits: number;
      purchased_credits: number;
      plan_period_end: number | null;
      plan_cancel_at_period_end: number;
      plan_next: PaidPlan | null;
      stripe_customer_id: string | null;
      stripe_subscription_id: string | null;
      email_verified_at: number | null;
    }>();
  if (!row) throw new AppError("not_found", `Account ${accountId} not found.`);
  return {
    accountId: row.id,
    email: row.email,
    plan: row.plan,
    balance: row.plan_credits + row.purchased_credits,
    planCredits: row.plan_credits,
    purchasedCredits: row.purchased_credits,
    // Pay as you go has no period; the column still remembers the last Solo period (billing.ts).
    planPeriodEnd: row.plan === "payg" ? null : row.plan_period_end,
    planCancelAtPeriodEnd: row.plan_cancel_at_period_end === 1,
    planNext: row.plan_next,
    stripeCustomerId: row.stripe_customer_id,
    stripeSubscriptionId: row.stripe_subscription_id,
    emailVerified: row.email_verified_at !== null,
  };
}

/** Why a plan's keys cannot call the REST API, or null when they can. */
export function restAccessRefusal(plan: Plan): string | null {
  return restApiPlans.includes(plan)
    ? null
    : `REST API access is not included in the ${plan} plan (only pay-as-you-go, Pro and Scale).`;
}

const MAX_KEY_NAME = 60;

/** Creates a key (live unless `mode` says test); the plain key is returned once and never stored. */
export async function createApiKey(db: D1Database, accountId: string, now: number, name = "", mode: KeyMode = "live") {
  await getAccount(db, accountId);
  return (await insertApiKey(db, accountId, now, name, mode, null))!;
}

const tooManyKeys = () =>
  invalidRequest(
    `An account has at most ${accountLimits.activeKeys} unrevoked API keys (live and test together); revoke one it no longer uses to create another.`,
  );

/**
 * Null when `formNonce` already made a key of this account (ON CONFLICT: a form sent twice makes
 * one key). The count of unrevoked keys is checked in the insert itself, so concurrent requests
 * cannot pass the limit together.
 */
async function insertApiKey(
  db: D1Database,
  accountId: string,
  now: number,
  name: string,
  mode: KeyMode,
  formNonce: string | null,
) {
  const apiKey = (mode === "test" ? TEST_KEY_PREFIX : API_KEY_PREFIX) + randomToken(24);
  const keyId = newId("key", now);
  const inserted = await db
    .prepare(
      `INSERT INTO api_keys (id, account_id, key_hash, display_prefix, name, created_at, mode, form_nonce)
       SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8
       WHERE (SELECT COUNT(*) FROM api_keys WHERE account_id = ?2 AND revoked_at IS NULL) < ?9
       ON CONFLICT (account_id, form_nonce) DO NOTHING`,
    )
    .bind(
      keyId,
      accountId,
      await sha256Hex(apiKey),
      apiKey.slice(0, 12),
      Array.from(name.trim()).slice(0, MAX_KEY_NAME).join(""),
      now,
      mode,
      formNonce,
      accountLimits.activeKeys,
    )
    .run();
  if (inserted.meta.changes > 0) return { keyId, apiKey, mode };
  if (
    formNonce !== null &&
    (await db
      .prepare("SELECT 1 FROM api_keys WHERE account_id = ? AND form_nonce = ?")
      .bind(accountId, formNonce)
      .first())
  )
    return null;
  throw tooManyKeys();
}

const FORM_NONCE = /^[A-Za-z0-9_-]{16,64}$/;

/**
 * A key made by the account owner: refused, with the reason, on plans without REST access.
 * `formNonce` is the form's one-time token; null comes back when that form already made its key.
 */
export async function createOwnApiKey(
  db: D1Database,
  accountId: string,
  name: unknown,
  now: number,
  mode: unknown,
  formNonce: unknown,
) {
  const account = await getAccount(db, accountId);
  const refusal = restAccessRefusal(account.plan);
  if (refusal) throw invalidRequest(`${refusal} Choose a plan with API access in Billing to create keys.`);
  await requireVerifiedEmail(db, accountId, "create API keys");
  const label = typeof name === "string" ? displayName(name) : "";
  if (!label) throw invalidRequest("Give the key a name, for instance where it is used.");
  if (characterCount(label) > MAX_KEY_NAME) throw invalidRequest(`Key names have at most ${MAX_KEY_NAME} characters.`);
  if (!isKeyMode(mode)) throw invalidRequest("A key is live or test.");
  if (typeof formNonce !== "string" || !FORM_NONCE.test(formNonce))
    throw invalidRequest("The form is out of date: reload the page and create the key again.");
  const created = await insertApiKey(db, accountId, now, label, mode, formNonce);
  return created && { ...created, name: label };
}

export interface ApiKeyView {
  keyId: string;
  name: string;
  prefix: string;
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
  mode: KeyMode;
}

export async function listApiKeys(db: D1Database, accountId: string): Promise<ApiKeyView[]> {
  const rows = await db
    .prepare(
      "SELECT id, name, display_prefix, created_at, last_used_at, revoked_at, mode FROM api_keys WHERE account_id = ? ORDER BY created_at DESC",
    )
    .bind(accountId)
    .all<{
      id: string;
      name: string;
      display_prefix: string;
      created_at: number;
      last_used_at: number | null;
      revoked_at: number | null;
      mode: KeyMode;
    }>();
  return rows.results.map((r) => ({
    keyId: r.id,
    name: r.name,
    prefix: r.display_prefix,
    createdAt: r.created_at,
    lastUsedAt: r.last_used_at,
    revokedAt: r.revoked_at,
    mode: r.mode,
  }));
}

/** Revokes a key; with `accountId`, only a key of that account (others look unknown). */
export async function revokeApiKey(db: D1Database, keyId: string, now: number, accountId?: string): Promise<void> {
  const result = await db
    .prepare(
      "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ? AND (?3 IS NULL OR account_id = ?3)",
    )
    .bind(now, keyId, accountId ?? null)
    .run();
  if (result.meta.changes === 0) throw new AppError("not_found", `Key ${keyId} not found.`);
}

export interface Caller {
  accountId: string;
  keyId: string;
  email: string;
  plan: Plan;
  /** A test key's calls spend nothing, see only test data and get results marked TEST. */
  mode: KeyMode;
}

/** Live account data (the cloned voice, brands and posts) is out of a test key's reach: 400 saying `why`. */
export function requireLiveKey(caller: Partial<Pick<Caller, "mode">>, why: string): void {
  if (caller.mode === "test") throw invalidRequest(why);
}

/** Resolves an `Authorization` header to the calling key, or throws 401. */
export async function authenticate(db: D1Database, authorization: string | undefined): Promise<Caller> {
  if (!authorization) throw unauthorized("Missing API key: send Authorization: Bearer <API_KEY>.");
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  if (!match) throw unauthorized("Malformed Authorization header: expected Bearer <API_KEY>.");
  const apiKey = match[1];
  if (!API_KEY_SHAPE.test(apiKey)) throw unauthorized("Invalid API key.");
  const row = await db
    .prepare(
      `SELECT k.id AS key_id, k.revoked_at, k.last_used_at, k.mode, a.id AS account_id, a.email, a.plan
       FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.key_hash = ?`,
    )
    .bind(await sha256Hex(apiKey))
    .first<{
      key_id: string;
      revoked_at: number | null;
      last_used_at: number | null;
      mode: KeyMode;
      account_id: string;
      email: string;
      plan: Plan;
    }>();
  if (!row) throw unauthorized("Invalid API key.");
  if (row.revoked_at !== null) throw unauthorized("This API key has been revoked.");
  const refusal = restAccessRefusal(row.plan);
  if (refusal) throw unauthorized(refusal);
  const now = Date.now();
  if (row.last_used_at === null || now - row.last_used_at >= LAST_USED_RESOLUTION_MS) {
    await db.prepare("UPDATE api_keys SET last_used_at = ? WHERE id = ?").bind(now, row.key_id).run();
  }
  return { accountId: row.account_id, keyId: row.key_id, email: row.email, plan: row.plan, mode: row.mode };
}
