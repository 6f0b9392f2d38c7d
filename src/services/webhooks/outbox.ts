/**
 * The outbox of job webhooks, signed as Standard Webhooks: the delivery row is written in the same
 * D1 batch as the job's terminal state (unique per job and event), so a job notifies exactly once
 * whichever Worker ends it; the API Worker hands pending rows to the queue, where only the
 * message holding the row's current token may attempt. Secrets are derived, never stored.
 * Why: docs/decisions/0011-webhook-outbox.md.
 */
import * as z from "zod";
import type { Env } from "../../env";
import { newId, randomToken } from "../../lib/ids";

export const WebhookMessageSchema = z.object({ deliveryId: z.string().min(1), token: z.string().min(1) });
export type WebhookMessage = z.infer<typeof WebhookMessageSchema>;

export type WebhookEvent = "job.completed" | "job.failed";

/** Queue delays cap at 12 h. */
export const MAX_DELAY_SECONDS = 43_200;
/** Delivery rows and their log are dropped this long after they were created. */
const LOG_RETENTION_MS = 48 * 3600 * 1000;

/**
 * The statement that records a job's webhook, for the batch that writes its terminal state:
 * it inserts only when the job has reached `status` and has a URL, and at most once per job
 * and event (unique index), whatever retries or redeliveries happen.
 */
export function outboxStatement(
  db: D1Database,
  jobId: string,
  status: "completed" | "failed",
  now: number,
): D1PreparedStatement {
  return db
    .prepare(
      `INSERT OR IGNORE INTO job_webhooks (id, job_id, account_id, event, url, status, attempts, next_attempt_at, created_at)
       SELECT ?1, id, account_id, ?2, webhook_url, 'pending', 0, ?3, ?3 FROM jobs
       WHERE id = ?4 AND status = ?5 AND webhook_url IS NOT NULL`,
    )
    .bind(newId("msg", now), `job.${status}`, now, jobId, status);
}

export const delaySecondsUntil = (at: number, now: number) =>
  Math.min(MAX_DELAY_SECONDS, Math.max(0, Math.ceil((at - now) / 1000)));

/**
 * Hands pending deliveries with no message in flight to the queue (one job's, or up to 100 of
 * any job for the cron sweep). A row is taken by setting its token, so two dispatchers never
 * send the same row; a failed send clears the token for the next sweep.
 */
export async function dispatchWebhooks(env: Env, now: number, jobId?: string): Promise<number> {
  if (!env.WEBHOOK_QUEUE) return 0;
  // Most jobs notify nobody: a read (by the job's index) spares them the write below, which
  // locks the database even when it changes nothing, once per job end.
  if (jobId !== undefined) {
    const pending = await env.DB.prepare(
      "SELECT 1 FROM job_webhooks WHERE job_id = ? AND status = 'pending' AND token IS NULL LIMIT 1",
    )
      .bind(jobId)
      .first();
    if (!pending) return 0;
  }
  const token = randomToken(16);
  const taken = await env.DB.prepare(
    `UPDATE job_webhooks SET token = ?1, lease_until = NULL WHERE id IN (
       SELECT id FROM job_webhooks WHERE status = 'pending' AND token IS NULL AND (lease_until IS NULL OR lease_until < ?2)
         AND (?3 IS NULL OR job_id = ?3) LIMIT 100)
     RETURNING id, next_attempt_at`,
  )
    .bind(token, now, jobId ?? null)
    .all<{ id: string; next_attempt_at: number }>();
  for (const row of taken.results) {
    try {
      await env.WEBHOOK_QUEUE.send(
        { deliveryId: row.id, token },
        { delaySeconds: delaySecondsUntil(row.next_attempt_at, now) },
      );
    } catch (error) {
      console.error("webhook enqueue failed", row.id, error instanceof Error ? error.message : String(error));
      await env.DB.prepare("UPDATE job_webhooks SET token = NULL WHERE id = ? AND token = ?").bind(row.id, token).run();
    }
  }
  return taken.results.length;
}

/** Dispatches a job's webhooks without letting a failure reach the caller (the cron retries). */
export async function dispatchJobWebhooks(env: Env, jobId: string): Promise<void> {
  try {
    await dispatchWebhooks(env, Date.now(), jobId);
  } catch (error) {
    console.error("webhook dispatch failed", jobId, error instanceof Error ? error.message : String(error));
  }
}

/** Cron: dispatch what nobody dispatched (the watchdog's failures, crashed consumers), drop old logs. */
export async function sweepWebhooks(env: Env, now: number): Promise<{ dispatched: number; purged: number }> {
  const dispatched = await dispatchWebhooks(env, now);
  const [, purged] = await env.DB.batch([
    env.DB.prepare(
      "DELETE FROM job_webhook_attempts WHERE delivery_id IN (SELECT id FROM job_webhooks WHERE created_at <= ?)",
    ).bind(now - LOG_RETENTION_MS),
    env.DB.prepare("DELETE FROM job_webhooks WHERE created_at <= ?").bind(now - LOG_RETENTION_MS),
  ]);
  return { dispatched, purged: purged.meta.changes };
}
