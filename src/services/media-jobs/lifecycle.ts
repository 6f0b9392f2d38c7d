/**
 * The transitions of a job after its creation: queued -> processing (claimed once, with its
 * watchdog deadline), -> completed, or -> failed and refunded exactly once (failure, cancel,
 * watchdog). Each terminal write records the job's webhook in the same batch. Job records and
 * results stay readable for 3 hours after they end.
 */
import { and, eq, sql } from "drizzle-orm";
import { orm } from "../../db/client";
import { jobs } from "../../db/schema";
import { invalidRequest } from "../../errors";
import type { Env } from "../../env";
import { MAX_DEADLINE_MS } from "@media-credits/wire/protocol";
import type { AudioReport } from "@media-credits/wire/audio-report";
import type { Caller } from "../accounts/accounts";
import { failAndRefund } from "../billing/credits";
import { dispatchJobWebhooks, outboxStatement } from "../webhooks/outbox";
import { getJobForKey, isEnded, type JobRow, type JobStatusView } from "./reads";

export const RESULT_TTL_MS = 3 * 3600 * 1000;
/**
 * A processing job is failed by the watchdog after max(15 min, 10 x its estimate), at most the
 * backend protocol's cap on a job's deadline (24 h): a deadline past that cap made the backend
 * refuse every stage of a long job, which was charged and then always failed.
 */
export const MIN_DEADLINE_MS = 15 * 60 * 1000;
export const MAX_JOB_DEADLINE_MS = MAX_DEADLINE_MS;
/** The work a job may be expected to take: half its longest deadline, so the watchdog still has slack. */
export const MAX_EXPECTED_WORK_MS = MAX_JOB_DEADLINE_MS / 2;

/** queued -> processing, only once; returns the job when this caller took it. */
export async function claimJob(
  db: D1Database,
  jobId: string,
  now: number,
  minDeadlineMs = MIN_DEADLINE_MS,
): Promise<JobRow | null> {
  const claimed = await orm(db)
    .update(jobs)
    .set({
      status: "processing",
      startedAt: now,
      deadlineAt: sql`${now} + MIN(${MAX_JOB_DEADLINE_MS}, MAX(${minDeadlineMs}, ${jobs.estimatedSeconds} * 10000))`,
    })
    .where(and(eq(jobs.id, jobId), eq(jobs.status, "queued")))
    .returning()
    .get();
  return claimed ?? null;
}

/** processing -> completed with its result object; false when the job was already ended. */
export async function completeJob(
  db: D1Database,
  jobId: string,
  result: { key: string; filename: string; contentType: string; report?: AudioReport },
  now: number,
): Promise<boolean> {
  const report = result.report ? JSON.stringify(result.report) : null;
  const [update] = await db.batch([
    db
      .prepare(
        `UPDATE jobs SET status = 'completed', result_key = ?, result_filename = ?, result_content_type = ?,
           result_report = ?, finished_at = ?, expires_at = ?, deadline_at = NULL
         WHERE id = ? AND status = 'processing'`,
      )
      .bind(result.key, result.filename, result.contentType, report, now, now + RESULT_TTL_MS, jobId),
    // The job's webhook, recorded with the state it reports (src/services/webhooks/outbox.ts).
    outboxStatement(db, jobId, "completed", now),
  ]);
  return update.meta.changes > 0;
}

/**
 * The caller cancels a queued or processing job: it fails with a clear error and is refunded
 * exactly once (the same guarded refund as any failure), and its runner stops the pending
 * stage (the backend is told to stop). A job that already ended answers 400 naming its state.
 */
export async function cancelJob(env: Env, caller: Caller, jobId: string, now: number): Promise<JobStatusView> {
  const current = await getJobForKey(env, caller, jobId, now);
  const ended = (status: string) =>
    invalidRequest(`Job ${current.jobId} is already ${status}; only a queued or processing job can be cancelled.`);
  if (isEnded(current.status)) throw ended(current.status);
  if (
    !(await failAndRefund(env.DB, jobId, "Cancelled at the caller's request; credits refunded.", now, RESULT_TTL_MS, {
      cancelled: true,
    }))
  ) {
    throw ended((await getJobForKey(env, caller, jobId, now)).status);
  }
  await stopJobRunner(env, jobId);
  await dispatchJobWebhooks(env, jobId);
  return getJobForKey(env, caller, jobId, now);
}

/**
 * Tells an ended job's runner to stop its pending stage: the backend is asked to stop, the stage's
 * output is deleted, the watchdog alarm goes. Best effort: the job is failed and refunded already,
 * and a stage that still reports later finds the job ended and changes nothing.
 */
export async function stopJobRunner(env: Pick<Env, "MEDIA_RUNNER">, jobId: string): Promise<void> {
  try {
    await env.MEDIA_RUNNER.get(env.MEDIA_RUNNER.idFromName(jobId)).cancel(jobId);
  } catch (error) {
    console.warn("runner stop failed", jobId, error instanceof Error ? error.message : String(error));
  }
}

/** Fails an active job and refunds it, exactly once whatever the retries. */
export function failJob(db: D1Database, jobId: string, error: string, now: number): Promise<boolean> {
  return failAndRefund(db, jobId, error, now, RESULT_TTL_MS);
}
