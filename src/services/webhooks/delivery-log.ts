/** The log of a job's webhook deliveries and their attempts, as the API and the pages show it. */
import { quotedId } from "../../lib/ids";
import { notFound } from "../../errors";
import type { Caller } from "../accounts/accounts";
import type { WebhookEvent } from "./outbox";

export interface WebhookDeliveryView {
  id: string;
  event: WebhookEvent;
  url: string;
  status: "pending" | "delivered" | "failed";
  nextAttemptAt: string | null;
  attempts: { attempt: number; at: string; durationMs: number; responseStatus: number | null; error: string | null }[];
}

/**
 * A job's delivery log for the key that created it (404 for any other key or an unknown job,
 * as GET /api/v1/jobs/{id}). Readable as long as the job row exists, past the 3 hours of the
 * job record, since retries go on for about a day.
 */
export async function webhookLogForKey(
  db: D1Database,
  caller: Caller,
  jobId: string,
): Promise<{ jobId: string; deliveries: WebhookDeliveryView[] }> {
  const job = await db
    .prepare("SELECT id FROM jobs WHERE id = ? AND key_id = ?")
    .bind(jobId, caller.keyId)
    .first<{ id: string }>();
  if (!job) throw notFound(`Job ${quotedId(jobId)} not found.`);
  return { jobId: job.id, deliveries: await webhookLog(db, job.id) };
}

/** The deliveries of a job and every attempt, oldest first. */
export async function webhookLog(db: D1Database, jobId: string): Promise<WebhookDeliveryView[]> {
  const deliveries = await db
    .prepare("SELECT id, event, url, status, next_attempt_at FROM job_webhooks WHERE job_id = ? ORDER BY created_at")
    .bind(jobId)
    .all<{
      id: string;
      event: WebhookEvent;
      url: string;
      status: WebhookDeliveryView["status"];
      next_attempt_at: number;
    }>();
  const views: WebhookDeliveryView[] = [];
  for (const d of deliveries.results) {
    const attempts = await db
      .prepare(
        "SELECT attempt, started_at, duration_ms, response_status, error FROM job_webhook_attempts WHERE delivery_id = ? ORDER BY attempt",
      )
      .bind(d.id)
      .all<{
        attempt: number;
        started_at: number;
        duration_ms: number;
        response_status: number | null;
        error: string | null;
      }>();
    views.push({
      id: d.id,
      event: d.event,
      url: d.url,
      status: d.status,
      nextAttemptAt: d.status === "pending" ? new Date(d.next_attempt_at).toISOString() : null,
      attempts: attempts.results.map((a) => ({
        attempt: a.attempt,
        at: new Date(a.started_at).toISOString(),
        durationMs: a.duration_ms,
        responseStatus: a.response_status,
        error: a.error,
      })),
    });
  }
  return views;
}
