/**
 * Accounts and their API keys. A key is `mk_live_` + 192 random bits; only its SHA-256 is
 * stored, and it is shown once, when created. Revocation is read on every request.
 */
import { AppError, invalidRequest, unauthorized } from "../errors";
import { sha256Hex } from "../lib/hash";
import { newId, randomToken } from "../lib/ids";
import { firstPeriodEnd, isConstraintError } from "./credits";
import { planAllowance, restApiPlans, type Plan } from "./pricing";

export const API_KEY_PREFIX = "mk_live_";
const API_KEY_SHAPE = /^mk_live_[A-Za-z0-9_-]{32}$/;

export interface AccountView {
  accountId: string;
  email: string;
  balance: number;
  plan: Plan;
}

/**
 * Creates an account. `credits` are purchased credits (never expire); a monthly plan also
 * receives its allowance as plan credits for a first 30-day period. Both are ledger entries.
 */
export async function createAccount(
  db: D1Database,
  input: { email: string; credits?: number; plan?: Plan },
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
      .bind(newId("led", now), id, kind, planDelta + purchasedDelta, planDelta, purchasedDelta, key, "account opened", now);
  try {
    await db.batch([
      db
        .prepare(
          `INSERT INTO accounts (id, email, plan, plan_credits, purchased_credits, plan_period_end, created_at)
           VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)`,
        )
        .bind(id, email, plan, allowance, credits, periodEnd, now),
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

/** Creates a live key; the plain key is returned once and never stored. */
export async function createApiKey(db: D1Database, accountId: string, now: number) {
  await getAccount(db, accountId);
  const apiKey = API_KEY_PREFIX + randomToken(24);
  const keyId = newId("key", now);
  await db
    .prepare("INSERT INTO api_keys (id, account_id, key_hash, display_prefix, created_at) VALUES (?, ?, ?, ?, ?)")
    .bind(keyId, accountId, await sha256Hex(apiKey), apiKey.slice(0, 12), now)
    .run();
  return { keyId, apiKey };
}

export async function revokeApiKey(db: D1Database, keyId: string, now: number): Promise<void> {
  const result = await db
    .prepare("UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?")
    .bind(now, keyId)
    .run();
  if (result.meta.changes === 0) throw new AppError("not_found", `Key ${keyId} not found.`);
}

export interface Caller {
  accountId: string;
  keyId: string;
  email: string;
  plan: Plan;
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
      `SELECT k.id AS key_id, k.revoked_at, a.id AS account_id, a.email, a.plan
       FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.key_hash = ?`,
    )
    .bind(await sha256Hex(apiKey))
    .first<{ key_id: string; revoked_at: number | null; account_id: string; email: string; plan: Plan }>();
  if (!row) throw unauthorized("Invalid API key.");
  if (row.revoked_at !== null) throw unauthorized("This API key has been revoked.");
  if (!restApiPlans.includes(row.plan)) {
    throw unauthorized(`REST API access is not included in the ${row.plan} plan (only pay-as-you-go, Pro and Scale).`);
  }
  return { accountId: row.account_id, keyId: row.key_id, email: row.email, plan: row.plan };
}
