/**
 * Read models of the developer area: where the credits went (ledger pages, CSV), spending
 * per day and tool, and recent jobs. Spending is net of refunds; a refund is attributed to
 * the tool of the debit it returns (same job id), since job rows expire after 3 hours; a
 * pipeline's one refund returns each step's debit to that step's tool.
 */
import { ledgerKinds } from "../../db/schema";
import { toolNames } from "./pricing";
import type { Env } from "../../env";
import { downloadTokenOf } from "../media-jobs/downloads";
import { stepsOfJob, stepViews } from "../media-jobs/pipeline-steps";
import type { JobStatus } from "../media-jobs/reads";
import type { JobStep } from "../../contract/jobs";

export type LedgerKind = (typeof ledgerKinds)[number];
export const isLedgerKind = (value: unknown): value is LedgerKind => ledgerKinds.includes(value as LedgerKind);

const DAY_MS = 24 * 3600 * 1000;

export interface DailyUsage {
  /** UTC days, oldest first, `YYYY-MM-DD`. */
  days: string[];
  /** Net credits spent per tool, one number per day. */
  byTool: Record<string, number[]>;
  total: number;
}

export async function dailyUsage(db: D1Database, accountId: string, now: number, dayCount = 30): Promise<DailyUsage> {
  const firstDay = Math.floor(now / DAY_MS) - (dayCount - 1);
  const rows = await db
    .prepare(
      `SELECT CAST(l.created_at / ${DAY_MS} AS INTEGER) AS day,
              COALESCE(d.reason, l.reason) AS tool,
              -SUM(CASE WHEN d.id IS NULL THEN l.amount ELSE -d.amount END) AS spent
       FROM ledger l
       LEFT JOIN ledger d ON l.kind = 'refund' AND d.job_id = l.job_id AND d.kind = 'debit'
       WHERE l.account_id = ?1 AND l.kind IN ('debit', 'refund') AND l.created_at >= ?2
       GROUP BY day, tool`,
    )
    .bind(accountId, firstDay * DAY_MS)
    .all<{ day: number; tool: string; spent: number }>();
  const days = Array.from({ length: dayCount }, (_, i) => new Date((firstDay + i) * DAY_MS).toISOString().slice(0, 10));
  const byTool: Record<string, number[]> = {};
  let total = 0;
  for (const row of rows.results) {
    const tool = (toolNames as readonly string[]).includes(row.tool) ? row.tool : "other";
    byTool[tool] ??= new Array(dayCount).fill(0);
    byTool[tool][row.day - firstDay] += row.spent;
    total += row.spent;
  }
  return { days, byTool, total };
}

export interface LedgerEntryView {
  id: string;
  kind: LedgerKind;
  amount: number;
  planDelta: number;
  purchasedDelta: number;
  jobId: string | null;
  reason: string | null;
  createdAt: number;
}

export const LEDGER_PAGE_SIZE = 50;

/** One page of the ledger, newest first; `before` is the last id of the previous page. */
export async function ledgerPage(
  db: D1Database,
  accountId: string,
  options: { kind?: LedgerKind; before?: string; limit?: number },
) {
  const limit = options.limit ?? LEDGER_PAGE_SIZE;
  const rows = await db
    .prepare(
      `SELECT id, kind, amount, plan_delta, purchased_delta, job_id, reason, created_at FROM ledger
       WHERE account_id = ?1 AND (?2 IS NULL OR kind = ?2) AND (?3 IS NULL OR id < ?3)
       ORDER BY id DESC LIMIT ?4`,
    )
    .bind(accountId, options.kind ?? null, options.before ?? null, limit + 1)
    .all<{
      id: string;
      kind: LedgerKind;
      amount: number;
      plan_delta: number;
      purchased_delta: number;
      job_id: string | null;
      reason: string | null;
      created_at: number;
    }>();
  const entries: LedgerEntryView[] = rows.results.slice(0, limit).map((r) => ({
    id: r.id,
    kind: r.kind,
    amount: r.amount,
    planDelta: r.plan_delta,
    purchasedDelta: r.purchased_delta,
    jobId: r.job_id,
    reason: r.reason,
    createdAt: r.created_at,
  }));
  return { entries, nextBefore: rows.results.length > limit ? entries[entries.length - 1].id : null };
}

const csvCell = (value: string | number | null) => {
  const text = value === null ? "" : String(value);
  // Quote always; a leading = + - @ would run as a formula in a spreadsheet.
  return `"${(/^[=+\-@\t\r]/.test(text) && typeof value === "string" ? `'${text}` : text).replace(/"/g, '""')}"`;
};

/** The whole ledger (optionally one kind) as CSV, oldest first. */
export async function ledgerCsv(db: D1Database, accountId: string, kind?: LedgerKind): Promise<string> {
  const lines = ["id,created_at,kind,amount,plan_delta,purchased_delta,job_id,reason"];
  let before: string | undefined;
  const pages: LedgerEntryView[][] = [];
  for (;;) {
    const page = await ledgerPage(db, accountId, { kind, before, limit: 500 });
    pages.push(page.entries);
    if (!page.nextBefore) break;
    before = page.nextBefore;
  }
  for (const entry of pages.flat().reverse()) {
    lines.push(
      [
        entry.id,
        new Date(entry.createdAt).toISOString(),
        entry.kind,
        entry.amount,
        entry.planDelta,
        entry.purchasedDelta,
        entry.jobId,
        entry.reason,
      ]
        .map(csvCell)
        .join(","),
    );
  }
  return lines.join("\r\n") + "\r\n";
}

export interface JobListItem {
  jobId: string;
  tool: string;
  status: string;
  cost: number;
  error: string | null;
  createdAt: number;
  /** Relative download path while the result is available. */
  downloadUrl: string | null;
  /** Made with a test key (free, marked TEST). */
  test: boolean;
  filename: string | null;
  /** A pipeline's steps in order, each with its state (as GET /api/v1/jobs/{id} shows them). */
  steps?: JobStep[];
}

/** Recent jobs still on record (job rows last 3 hours after they end). */
export async function recentJobs(env: Env, accountId: string, now: number, limit = 50): Promise<JobListItem[]> {
  const rows = await env.DB.prepare(
    `SELECT id, tool, status, cost, error, created_at, result_key, result_filename, expires_at, mode FROM jobs
       WHERE account_id = ? AND (expires_at IS NULL OR expires_at > ?) ORDER BY created_at DESC LIMIT ?`,
  )
    .bind(accountId, now, limit)
    .all<{
      id: string;
      tool: string;
      status: string;
      cost: number;
      error: string | null;
      created_at: number;
      result_key: string | null;
      result_filename: string | null;
      mode: string;
    }>();
  return Promise.all(
    rows.results.map(async (r) => ({
      jobId: r.id,
      tool: r.tool,
      status: r.status,
      cost: r.cost,
      error: r.error,
      createdAt: r.created_at,
      downloadUrl:
        r.status === "completed" && r.result_key ? `/api/download/${await downloadTokenOf(env, r.id)}` : null,
      filename: r.result_filename,
      test: r.mode === "test",
      // Read only for pipelines: a tool job has no steps, and most jobs are tool jobs.
      ...(r.tool === "pipeline"
        ? { steps: stepViews(await stepsOfJob(env.DB, r.id), { status: r.status as JobStatus, error: r.error }) }
        : {}),
    })),
  );
}
