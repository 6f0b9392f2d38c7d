/**
 * Money movements. Each one is a single D1 batch (atomic: D1 has no interactive transactions)
 * whose ledger entry carries a unique idempotency key, and whose balance update is guarded by
 * the accounts' CHECK constraints: an overdraft or a replay makes the whole batch fail and
 * changes nothing. The balance is plan_credits + purchased_credits and always equals the sum
 * of the account's ledger.
 */
import { AppError, invalidRequest } from "../../errors";
import { newId } from "../../lib/ids";
import { planAllowance, type Plan } from "./pricing";
import { outboxStatement } from "../webhooks/outbox";

export const isConstraintError = (error: unknown, kind: "CHECK" | "UNIQUE") =>
  error instanceof Error && error.message.includes(`${kind} constraint failed`);

export async function balanceOf(db: D1Database, accountId: string): Promise<number> {
  const row = await db
    .prepare("SELECT plan_credits + purchased_credits AS balance FROM accounts WHERE id = ?")
    .bind(accountId)
    .first<{ balance: number }>();
  if (!row) throw new AppError("not_found", `Account ${accountId} not found.`);
  return row.balance;
}

/**
 * Adds (or, when negative, removes) purchased credits. Credits given by an operator are
 * purchased credits: they never expire. Removing more than the purchased bucket holds is refused.
 */
export async function adjustPurchasedCredits(
  db: D1Database,
  accountId: string,
  amount: number,
  reason: string,
  now: number,
): Promise<number> {
  const entryId = newId("led", now);
  try {
    const [, update] = await db.batch([
      db
        .prepare(
          `INSERT INTO ledger (id, account_id, kind, amount, plan_delta, purchased_delta, idempotency_key, reason, created_at)
           SELECT ?1, id, ?2, ?3, 0, ?3, ?1, ?4, ?5 FROM accounts WHERE id = ?6`,
        )
        .bind(entryId, "grant", amount, reason, now, accountId),
      db
        .prepare("UPDATE accounts SET purchased_credits = purchased_credits + ?1 WHERE id = ?2")
        .bind(amount, accountId),
    ]);
    if (update.meta.changes === 0) throw new AppError("not_found", `Account ${accountId} not found.`);
  } catch (error) {
    if (isConstraintError(error, "CHECK")) {
      const purchased = await db
        .prepare("SELECT purchased_credits FROM accounts WHERE id = ?")
        .bind(accountId)
        .first<{ purchased_credits: number }>();
      throw invalidRequest(
        `amount: only purchased credits can be removed, and the account has ${purchased?.purchased_credits ?? 0} (plan credits are not adjusted).`,
      );
    }
    throw error;
  }
  return balanceOf(db, accountId);
}

/**
 * Statements that debit `cost` for a job: plan credits first, then purchased credits. The
 * ledger entry is written before the update so it can read the pre-debit split. Must run
 * in the same batch as the job insert (see jobs service).
 */
export function debitStatements(
  db: D1Database,
  p: { accountId: string; jobId: string; cost: number; tool: string; now: number; step?: number },
) {
  // A pipeline debits once per step: `debit:<job>` for the first, `debit:<job>:<position>` after.
  const key = p.step ? `debit:${p.jobId}:${p.step}` : `debit:${p.jobId}`;
  return [
    db
      .prepare(
        `INSERT INTO ledger (id, account_id, kind, amount, plan_delta, purchased_delta, job_id, idempotency_key, reason, created_at)
         SELECT ?1, id, 'debit', -?2, -MIN(plan_credits, ?2), -MAX(?2 - plan_credits, 0), ?3, ?7, ?4, ?5
         FROM accounts WHERE id = ?6`,
      )
      .bind(newId("led", p.now), p.cost, p.jobId, p.tool, p.now, p.accountId, key),
    db
      .prepare(
        `UPDATE accounts SET plan_credits = MAX(plan_credits - ?1, 0),
           purchased_credits = purchased_credits - MAX(?1 - plan_credits, 0)
         WHERE id = ?2`,
      )
      .bind(p.cost, p.accountId),
  ];
}

const ACTIVE = "('queued', 'processing')";

/** Whether the plan period that paid for the job `j` is still its account `a`'s current one (SQL). */
const PAID_PERIOD_CURRENT = `(a.plan != 'payg' AND j.paid_period_end IS NOT NULL AND a.plan_period_end = j.paid_period_end)`;

/**
 * Fails a job that is still queued or processing and refunds its cost exactly once: every
 * statement is conditioned on the job still being active, and the ledger key `refund:<job>` is
 * unique. Returns false when the job had already ended.
 *
 * Money follows time: plan credits go back to the plan bucket only while the plan period that paid
 * for the job is still current; otherwise, for a failure, to purchased credits (refunding them into
 * a later period would grow its allowance). A job the caller cancels after its paying period ended
 * gets its plan credits back and expired at once, as they would have at the renewal had the job not
 * run: otherwise jobs started before a renewal and cancelled after it would carry unused plan
 * credits over as credits that never expire.
 */
export async function failAndRefund(
  db: D1Database,
  jobId: string,
  error: string,
  now: number,
  retentionMs: number,
  options: { cancelled?: boolean } = {},
) {
  const toPlan = `CASE WHEN ${PAID_PERIOD_CURRENT} OR ?4 THEN j.plan_debit ELSE 0 END`;
  const refunds = "idempotency_key IN ('refund:' || ?1, 'refund_expiry:' || ?1)";
  // The ledger entries record the split first (the expiry before the refund, whose absence guards
  // both); the balance update then applies them, and the job's state changes last: each statement
  // is guarded by the state the previous ones left.
  const [, , , , update] = await db.batch([
    db
      .prepare(
        `INSERT INTO ledger (id, account_id, kind, amount, plan_delta, purchased_delta, job_id, idempotency_key, reason, created_at)
         SELECT ?1, j.account_id, 'plan_expiry', -j.plan_debit, -j.plan_debit, 0, j.id, 'refund_expiry:' || j.id, 'refunded plan credits of an ended period', ?2
         FROM jobs j JOIN accounts a ON a.id = j.account_id WHERE j.id = ?3 AND j.status IN ${ACTIVE} AND ?4 AND j.plan_debit > 0 AND NOT ${PAID_PERIOD_CURRENT}
           AND NOT EXISTS (SELECT 1 FROM ledger WHERE idempotency_key = 'refund:' || ?3)`,
      )
      .bind(newId("led", now), now, jobId, options.cancelled ? 1 : 0),
    db
      .prepare(
        `INSERT INTO ledger (id, account_id, kind, amount, plan_delta, purchased_delta, job_id, idempotency_key, reason, created_at)
         SELECT ?1, j.account_id, 'refund', j.cost, ${toPlan}, j.cost - ${toPlan}, j.id, 'refund:' || j.id, 'job failed', ?2
         FROM jobs j JOIN accounts a ON a.id = j.account_id WHERE j.id = ?3 AND j.status IN ${ACTIVE}
           AND NOT EXISTS (SELECT 1 FROM ledger WHERE idempotency_key = 'refund:' || ?3)`,
      )
      .bind(newId("led", now), now, jobId, options.cancelled ? 1 : 0),
    db
      .prepare(
        `UPDATE accounts SET
           plan_credits = plan_credits + (SELECT SUM(plan_delta) FROM ledger WHERE ${refunds}),
           purchased_credits = purchased_credits + (SELECT SUM(purchased_delta) FROM ledger WHERE ${refunds})
         WHERE id = (SELECT account_id FROM jobs WHERE id = ?1 AND status IN ${ACTIVE})
           AND EXISTS (SELECT 1 FROM ledger WHERE idempotency_key = 'refund:' || ?1)`,
      )
      .bind(jobId),
    // What an assistant spent today goes back with the refund (its daily cap counts net spending).
    db
      .prepare(
        `UPDATE assistant_spending SET credits = MAX(0, credits - (SELECT cost FROM jobs WHERE id = ?1))
         WHERE connection_id = (SELECT key_id FROM jobs WHERE id = ?1 AND status IN ${ACTIVE}) AND day = (SELECT created_at / 86400000 FROM jobs WHERE id = ?1)`,
      )
      .bind(jobId),
    db
      .prepare(
        `UPDATE jobs SET status = 'failed', error = ?1, finished_at = ?2, expires_at = ?3, deadline_at = NULL
         WHERE id = ?4 AND status IN ${ACTIVE}`,
      )
      .bind(error, now, now + retentionMs, jobId),
    // The job's webhook, recorded with the state it reports (src/services/webhooks/outbox.ts).
    outboxStatement(db, jobId, "failed", now),
  ]);
  return update.meta.changes > 0;
}

export const MONTH_MS = 30 * 24 * 3600 * 1000;

/** Next period end strictly after `now`, stepping whole 30-day periods from `periodEnd`. */
export function nextPeriodEnd(periodEnd: number, now: number): number {
  const periods = Math.floor((now - periodEnd) / MONTH_MS) + 1;
  return periodEnd + Math.max(1, periods) * MONTH_MS;
}

export function firstPeriodEnd(now: number): number {
  return now + MONTH_MS;
}

/**
 * Monthly renewal of plan credits: the unused plan credits expire and the allowance is granted
 * (two ledger entries, so the balance still equals the ledger sum); purchased credits stay.
 */
export async function renewDuePlans(db: D1Database, now: number): Promise<number> {
  const due = await db
    // Plans paid through Stripe renew on the subscription's invoice.paid, not here.
    .prepare(
      "SELECT id, plan, plan_period_end FROM accounts WHERE plan != 'payg' AND plan_period_end <= ? AND stripe_subscription_id IS NULL LIMIT 100",
    )
    .bind(now)
    .all<{ id: string; plan: Exclude<Plan, "payg">; plan_period_end: number }>();
  let renewed = 0;
  for (const account of due.results) {
    const allowance = planAllowance[account.plan];
    const newEnd = nextPeriodEnd(account.plan_period_end, now);
    const period = `${account.id}:${account.plan_period_end}`;
    // Still the plan and period selected above: a switch in between (to pay as you go, which keeps
    // the Solo period's end) must not be renewed.
    const same = "id = ?1 AND plan_period_end = ?2 AND plan = ?3 AND stripe_subscription_id IS NULL";
    try {
      await db.batch([
        db
          .prepare(
            `INSERT INTO ledger (id, account_id, kind, amount, plan_delta, purchased_delta, idempotency_key, reason, created_at)
             SELECT ?4, id, 'plan_expiry', -plan_credits, -plan_credits, 0, 'plan_expiry:' || ?5, 'plan period ended', ?6
             FROM accounts WHERE ${same}`,
          )
          .bind(account.id, account.plan_period_end, account.plan, newId("led", now), period, now),
        db
          .prepare(
            `INSERT INTO ledger (id, account_id, kind, amount, plan_delta, purchased_delta, idempotency_key, reason, created_at)
             SELECT ?4, id, 'plan_grant', ?5, ?5, 0, 'plan_grant:' || ?6, 'monthly plan credits', ?7
             FROM accounts WHERE ${same}`,
          )
          .bind(account.id, account.plan_period_end, account.plan, newId("led", now), allowance, period, now),
        db
          .prepare(
            `UPDATE accounts SET plan_credits = ?4, plan_period_granted = ?4, plan_period_end = ?5 WHERE ${same}`,
          )
          .bind(account.id, account.plan_period_end, account.plan, allowance, newEnd),
      ]);
      renewed++;
    } catch (error) {
      // A concurrent run renewed this period already (unique ledger keys): nothing to do.
      if (!isConstraintError(error, "UNIQUE")) throw error;
    }
  }
  return renewed;
}
