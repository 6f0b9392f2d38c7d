/**
 * Periodic work (cron): the watchdog fails jobs stuck past their deadline (refunding them),
 * expired uploads and results are deleted from R2 and D1, old Idempotency-Keys are dropped
 * and monthly plans are renewed. `now` is a parameter so tests can move time forward.
 */
import { deleteExpiredSessions } from "../accounts/sessions";
import { renewDuePlans } from "../billing/credits";
import { failJob } from "../media-jobs/lifecycle";
import { IDEMPOTENCY_TTL_MS } from "../media-jobs/creation";
import { abortExpiredSessions } from "../media-jobs/resumable-uploads";

/**
 * A job still queued this long after its call was never started: its message was lost (a send
 * that failed together with its own refund, a queue outage). Nothing else would end it.
 */
export const QUEUED_LIMIT_MS = 3600 * 1000;

/**
 * `stopRunner` is told of each processing job failed here, so its runner stops the backend's work
 * (nobody will read its result) instead of waiting for its own alarm.
 */
export async function failStuckJobs(
  db: D1Database,
  now: number,
  stopRunner?: (jobId: string) => Promise<void>,
): Promise<number> {
  const stuck = await db
    .prepare(
      "SELECT id, status FROM jobs WHERE (status = 'processing' AND deadline_at <= ?1) OR (status = 'queued' AND created_at <= ?2) LIMIT 200",
    )
    .bind(now, now - QUEUED_LIMIT_MS)
    .all<{ id: string; status: string }>();
  let failed = 0;
  const stopped: string[] = [];
  for (const { id, status } of stuck.results) {
    const why =
      status === "queued"
        ? "The job was never started; credits refunded."
        : "Processing did not finish in time; credits refunded.";
    if (!(await failJob(db, id, why, now))) continue;
    failed++;
    if (status === "processing") stopped.push(id);
  }
  // Side by side and never failing the sweep: a hung backend (often why jobs are stuck) must not
  // hold up the renewals and expiries that follow (each stop's backend call has its own timeout).
  if (stopRunner) await Promise.allSettled(stopped.map((id) => stopRunner(id)));
  return failed;
}

export async function deleteExpired(db: D1Database, bucket: R2Bucket, now: number) {
  // An upload read by a job that has not ended is kept until that job ends.
  const uploads = await db
    .prepare(
      `SELECT id, object_key FROM uploads u WHERE expires_at <= ?1 AND NOT EXISTS (
         SELECT 1 FROM jobs j, json_each(j.input_upload_ids) e
         WHERE j.status IN ('queued', 'processing') AND e.value = u.id) LIMIT 500`,
    )
    .bind(now)
    .all<{ id: string; object_key: string }>();
  if (uploads.results.length > 0) {
    await bucket.delete(uploads.results.map((u) => u.object_key));
    await db.batch(uploads.results.map((u) => db.prepare("DELETE FROM uploads WHERE id = ?").bind(u.id)));
  }
  // Results go at expiry; the job row stays (invisible: reads check expires_at) as long as
  // an Idempotency-Key may still replay it, then goes too.
  const results = await db
    .prepare("SELECT id, result_key FROM jobs WHERE expires_at <= ? AND result_key IS NOT NULL LIMIT 500")
    .bind(now)
    .all<{ id: string; result_key: string }>();
  if (results.results.length > 0) {
    await bucket.delete(results.results.map((j) => j.result_key));
    await db.batch(results.results.map((j) => db.prepare("UPDATE jobs SET result_key = NULL WHERE id = ?").bind(j.id)));
  }
  const purged = await db.batch([
    db
      .prepare("DELETE FROM idempotency_keys WHERE job_id IN (SELECT id FROM jobs WHERE expires_at <= ?)")
      .bind(now - IDEMPOTENCY_TTL_MS),
    // A pipeline's steps go with their job (they reference it).
    db
      .prepare("DELETE FROM pipeline_steps WHERE job_id IN (SELECT id FROM jobs WHERE expires_at <= ?)")
      .bind(now - IDEMPOTENCY_TTL_MS),
    db.prepare("DELETE FROM jobs WHERE expires_at <= ?").bind(now - IDEMPOTENCY_TTL_MS),
  ]);
  await db
    .prepare("DELETE FROM idempotency_keys WHERE created_at <= ?")
    .bind(now - IDEMPOTENCY_TTL_MS)
    .run();
  return { uploads: uploads.results.length, results: results.results.length, jobRows: purged[2].meta.changes };
}

export async function runMaintenance(
  db: D1Database,
  bucket: R2Bucket,
  now: number,
  stopRunner?: (jobId: string) => Promise<void>,
) {
  const stuck = await failStuckJobs(db, now, stopRunner);
  const expired = await deleteExpired(db, bucket, now);
  const renewed = await renewDuePlans(db, now);
  const sessions = await deleteExpiredSessions(db, now);
  const resumableUploads = await abortExpiredSessions(db, bucket, now);
  return { stuck, ...expired, renewed, sessions, resumableUploads };
}
