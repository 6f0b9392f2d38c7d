/**
 * Checks an operator (and the soak campaign) runs: an account's balance against its ledger and
 * its jobs (every failed job refunded once, no refund without a failure, every paid job debited
 * once), and the media store against D1 (objects no row refers to: orphans).
 */
import type { Env } from "../../env";
import { stopJobRunner } from "../media-jobs/lifecycle";
import { runMaintenance } from "../platform/maintenance";
import { sealLegacyTokens } from "../social/channel-config";

export interface AccountAudit {
  accountId: string;
  balance: number;
  ledgerTotal: number;
  jobs: Record<"queued" | "processing" | "completed" | "failed", number>;
  /** Credits of the completed jobs (what the account really paid for). */
  completedCost: number;
  failedNotRefunded: number;
  refundedNotFailed: number;
  paidNotDebited: number;
  consistent: boolean;
}

export async function auditAccount(db: D1Database, accountId: string): Promise<AccountAudit | null> {
  const row = await db
    .prepare(
      `SELECT a.plan_credits + a.purchased_credits AS balance,
         (SELECT COALESCE(SUM(amount), 0) FROM ledger WHERE account_id = a.id) AS ledger_total,
         (SELECT COALESCE(SUM(cost), 0) FROM jobs WHERE account_id = a.id AND status = 'completed') AS completed_cost,
         (SELECT COUNT(*) FROM jobs j WHERE j.account_id = a.id AND j.status = 'failed' AND j.cost > 0
            AND NOT EXISTS (SELECT 1 FROM ledger l WHERE l.idempotency_key = 'refund:' || j.id)) AS failed_not_refunded,
         (SELECT COUNT(*) FROM jobs j WHERE j.account_id = a.id AND j.status <> 'failed'
            AND EXISTS (SELECT 1 FROM ledger l WHERE l.idempotency_key = 'refund:' || j.id)) AS refunded_not_failed,
         (SELECT COUNT(*) FROM jobs j WHERE j.account_id = a.id AND j.cost > 0
            AND NOT EXISTS (SELECT 1 FROM ledger l WHERE l.idempotency_key = 'debit:' || j.id)) AS paid_not_debited
       FROM accounts a WHERE a.id = ?`,
    )
    .bind(accountId)
    .first<Record<string, number>>();
  if (!row) return null;
  const counts = await db
    .prepare("SELECT status, COUNT(*) AS n FROM jobs WHERE account_id = ? GROUP BY status")
    .bind(accountId)
    .all<{ status: string; n: number }>();
  const jobs = { queued: 0, processing: 0, completed: 0, failed: 0 };
  for (const { status, n } of counts.results) if (status in jobs) jobs[status as keyof typeof jobs] = n;
  const audit = {
    accountId,
    balance: row.balance!,
    ledgerTotal: row.ledger_total!,
    jobs,
    completedCost: row.completed_cost!,
    failedNotRefunded: row.failed_not_refunded!,
    refundedNotFailed: row.refunded_not_failed!,
    paidNotDebited: row.paid_not_debited!,
  };
  return {
    ...audit,
    consistent:
      audit.balance === audit.ledgerTotal &&
      audit.failedNotRefunded === 0 &&
      audit.refundedNotFailed === 0 &&
      audit.paidNotDebited === 0,
  };
}

/** Objects younger than this may belong to a write whose row is not inserted yet. */
const ORPHAN_GRACE_MS = 10 * 60 * 1000;

export interface OrphanReport {
  scanned: number;
  orphans: string[];
  deleted: number;
}

/**
 * Objects of the media store no D1 row refers to: an upload without its row, a result of a job
 * that failed or no longer exists, a work file of a job that is not processing. With `remove`,
 * they are deleted (the maintenance run does it).
 */
export async function findOrphans(
  db: D1Database,
  bucket: R2Bucket,
  now: number,
  options: { remove?: boolean; limit?: number; graceMs?: number } = {},
): Promise<OrphanReport> {
  const limit = options.limit ?? 5_000;
  const olderThan = now - (options.graceMs ?? ORPHAN_GRACE_MS);
  const report: OrphanReport = { scanned: 0, orphans: [], deleted: 0 };
  for (const prefix of ["uploads/", "results/", "work/"]) {
    let cursor: string | undefined;
    do {
      const listed = await bucket.list({ prefix, cursor, limit: 500 });
      const keys = listed.objects.filter((o) => o.uploaded.getTime() <= olderThan).map((o) => o.key);
      report.scanned += listed.objects.length;
      report.orphans.push(...(await unreferenced(db, prefix, keys)));
      cursor = listed.truncated && report.scanned < limit ? listed.cursor : undefined;
    } while (cursor);
  }
  if (options.remove) {
    for (let i = 0; i < report.orphans.length; i += 1000) await bucket.delete(report.orphans.slice(i, i + 1000));
    report.deleted = report.orphans.length;
  }
  return report;
}

async function unreferenced(db: D1Database, prefix: string, keys: string[]): Promise<string[]> {
  const orphans: string[] = [];
  for (let i = 0; i < keys.length; i += 50) {
    const chunk = keys.slice(i, i + 50);
    const marks = chunk.map((_, n) => `?${n + 1}`).join(", ");
    if (prefix === "uploads/") {
      // A resumable session's object is referenced by the session until its upload row exists:
      // R2 may date an assembled object from the start of its multipart upload, past the grace.
      const rows = await db
        .prepare(
          `SELECT object_key AS key FROM uploads WHERE object_key IN (${marks}) UNION SELECT object_key FROM upload_sessions WHERE object_key IN (${marks})`,
        )
        .bind(...chunk)
        .all<{ key: string }>();
      const known = new Set(rows.results.map((r) => r.key));
      orphans.push(...chunk.filter((key) => !known.has(key)));
      continue;
    }
    // results/<job>/<file> and work/<job>/<file>
    const ids = chunk.map((key) => key.split("/")[1] ?? "");
    const rows = await db
      .prepare(`SELECT id, status, result_key FROM jobs WHERE id IN (${marks})`)
      .bind(...ids)
      .all<{ id: string; status: string; result_key: string | null }>();
    const jobs = new Map(rows.results.map((r) => [r.id, r]));
    chunk.forEach((key, n) => {
      const job = jobs.get(ids[n]!);
      const live = job && (job.status === "queued" || job.status === "processing");
      const kept = prefix === "results/" ? live || (job?.status === "completed" && job.result_key === key) : live;
      if (!kept) orphans.push(key);
    });
  }
  return orphans;
}

/** The cron's maintenance, plus the orphan sweep, run now (operator API). */
export async function maintainNow(
  db: D1Database,
  bucket: R2Bucket,
  now: number,
  env: Pick<Env, "MEDIA_RUNNER" | "AUTH_SECRET">,
  orphanGraceMs?: number,
) {
  const summary = await runMaintenance(db, bucket, now, (jobId) => stopJobRunner(env, jobId));
  const orphans = await findOrphans(db, bucket, now, { remove: true, graceMs: orphanGraceMs });
  // Channel access tokens stored before their encryption (plain text) are sealed.
  const tokensSealed = await sealLegacyTokens({ DB: db, AUTH_SECRET: env.AUTH_SECRET });
  return { ...summary, orphansDeleted: orphans.deleted, tokensSealed };
}
