/**
 * One attempt of a job webhook's delivery, by the queue message holding the row's current token
 * (redelivered messages do nothing): the body rebuilt from the job, signed with the mode's
 * secrets, posted without following redirects, logged; failures retried on the schedule.
 */
import type { Env } from "../../env";
import { randomToken } from "../../lib/ids";
import { UnsafeUrlError } from "../../lib/public-url";
import { eachMessage } from "../../lib/queue-batch";
import type { KeyMode } from "../accounts/accounts";
import { jobView, loadJob, type JobStatusView } from "../media-jobs/reads";
import {
  delaySecondsUntil,
  MAX_DELAY_SECONDS,
  WebhookMessageSchema,
  type WebhookEvent,
  type WebhookMessage,
} from "./outbox";
import { accountWebhookRow, assertWebhookUrl, ROTATION_OVERLAP_MS, webhookPolicy } from "./settings";
import { accountWebhookSecret, signWebhook } from "./signing";

/** 30 s, 2 min, 10 min, 1 h, 3 h, 6 h, 6 h, 8 h: 9 attempts over a little more than 24 h (queue delays cap at 12 h). */
export const DEFAULT_RETRY_SCHEDULE = [30, 120, 600, 3600, 10800, 21600, 21600, 28800];
export const ATTEMPT_TIMEOUT_MS = 10_000;
/** An attempt in flight is not taken again before this; a consumer that died frees it after. */
const LEASE_MS = 60_000;

/** The secrets that sign now: the current one, and the previous one within 24 h of a rotation. */
async function signingSecrets(env: Env, accountId: string, mode: KeyMode, now: number): Promise<string[]> {
  const row = await accountWebhookRow(env.DB, accountId, mode);
  const secrets = [await accountWebhookSecret(env, accountId, row.version, mode)];
  if (row.version > 1 && row.rotatedAt !== null && now - row.rotatedAt < ROTATION_OVERLAP_MS) {
    secrets.push(await accountWebhookSecret(env, accountId, row.version - 1, mode));
  }
  return secrets;
}

export function retrySchedule(env: Env): number[] {
  if (!env.WEBHOOK_RETRY_SCHEDULE) return DEFAULT_RETRY_SCHEDULE;
  const values = env.WEBHOOK_RETRY_SCHEDULE.split(",").map((v) => Number(v.trim()));
  return values.every((v) => Number.isFinite(v) && v >= 0)
    ? values.map((v) => Math.min(MAX_DELAY_SECONDS, v))
    : DEFAULT_RETRY_SCHEDULE;
}

interface DeliveryRow {
  id: string;
  job_id: string;
  account_id: string;
  event: WebhookEvent;
  url: string;
  payload: string | null;
  attempts: number;
}

/**
 * The body every attempt of a delivery sends: the job as GET /api/v1/jobs/{id} shows it, made
 * again from the job row at each attempt (the same bytes each time) rather than stored, since
 * it carries the result's download capability, which D1 keeps only hashed. A body stored by an
 * older version is still sent as it is.
 */
async function payloadOf(env: Env, delivery: DeliveryRow): Promise<{ body: string; mode: KeyMode } | null> {
  const job = await loadJob(env.DB, delivery.job_id);
  if (delivery.payload)
    return {
      body: delivery.payload,
      mode: job?.mode ?? (JSON.parse(delivery.payload).livemode === false ? "test" : "live"),
    };
  if (!job) return null;
  const data: JobStatusView = await jobView(env, job);
  // livemode says which settings sent it: a test key's job goes to the test URL, signed with the test secret.
  return {
    body: JSON.stringify({
      type: delivery.event,
      timestamp: new Date(job.finishedAt ?? Date.now()).toISOString(),
      livemode: job.mode !== "test",
      data,
    }),
    mode: job.mode,
  };
}

interface AttemptOutcome {
  ok: boolean;
  status: number | null;
  error: string | null;
}

async function post(
  env: Env,
  delivery: DeliveryRow,
  { body, mode }: { body: string; mode: KeyMode },
  now: number,
): Promise<AttemptOutcome> {
  try {
    // Checked again at every attempt: what a name resolves to may have changed since the call.
    const url = await assertWebhookUrl(delivery.url, webhookPolicy(env));
    const headers = await signWebhook(
      await signingSecrets(env, delivery.account_id, mode, now),
      delivery.id,
      Math.floor(now / 1000),
      body,
    );
    const response = await fetch(url, {
      method: "POST",
      body,
      // A redirect is an answer, not an invitation: it is never followed (it could lead anywhere).
      redirect: "manual",
      headers: { ...headers, "content-type": "application/json", "user-agent": "media-credits-webhooks/1.0" },
      signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
    });
    await response.body?.cancel();
    const ok = response.status >= 200 && response.status < 300;
    return {
      ok,
      status: response.status,
      error: ok ? null : response.status >= 300 && response.status < 400 ? "redirect not followed" : null,
    };
  } catch (error) {
    if (error instanceof UnsafeUrlError) return { ok: false, status: null, error: `refused: ${error.message}` };
    if (error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError"))
      return { ok: false, status: null, error: `no answer within ${ATTEMPT_TIMEOUT_MS / 1000} s` };
    return { ok: false, status: null, error: (error instanceof Error ? error.message : String(error)).slice(0, 200) };
  }
}

/**
 * One attempt of a delivery, by the queue message holding its current token (any other
 * message is stale and does nothing). Logs the attempt; 2xx ends the delivery, anything else
 * schedules the next attempt or, after the last one, marks the delivery failed.
 */
export async function attemptDelivery(
  env: Env,
  message: WebhookMessage,
  now: number,
): Promise<"delivered" | "retrying" | "failed" | "stale"> {
  const delivery = await env.DB.prepare(
    `UPDATE job_webhooks SET token = NULL, attempts = attempts + 1, lease_until = ?1
     WHERE id = ?2 AND token = ?3 AND status = 'pending'
     RETURNING id, job_id, account_id, event, url, payload, attempts`,
  )
    .bind(now + LEASE_MS, message.deliveryId, message.token)
    .first<DeliveryRow>();
  if (!delivery) return "stale";

  const payload = await payloadOf(env, delivery);
  const outcome: AttemptOutcome =
    payload === null
      ? { ok: false, status: null, error: "the job no longer exists" }
      : await post(env, delivery, payload, now);
  const finished = Date.now();
  await env.DB.prepare(
    "INSERT OR REPLACE INTO job_webhook_attempts (delivery_id, attempt, started_at, duration_ms, response_status, error) VALUES (?, ?, ?, ?, ?, ?)",
  )
    .bind(delivery.id, delivery.attempts, now, Math.max(0, finished - now), outcome.status, outcome.error)
    .run();

  const delay = retrySchedule(env)[delivery.attempts - 1];
  if (outcome.ok || payload === null || delay === undefined) {
    const status = outcome.ok ? "delivered" : "failed";
    await env.DB.prepare("UPDATE job_webhooks SET status = ?, lease_until = NULL, finished_at = ? WHERE id = ?")
      .bind(status, finished, delivery.id)
      .run();
    return status;
  }
  const next = finished + delay * 1000;
  const token = randomToken(16);
  await env.DB.prepare("UPDATE job_webhooks SET token = ?, lease_until = NULL, next_attempt_at = ? WHERE id = ?")
    .bind(token, next, delivery.id)
    .run();
  try {
    await env.WEBHOOK_QUEUE?.send(
      { deliveryId: delivery.id, token },
      { delaySeconds: delaySecondsUntil(next, finished) },
    );
  } catch (error) {
    console.error("webhook retry enqueue failed", delivery.id, error instanceof Error ? error.message : String(error));
    await env.DB.prepare("UPDATE job_webhooks SET token = NULL WHERE id = ? AND token = ?")
      .bind(delivery.id, token)
      .run();
  }
  return "retrying";
}

/**
 * Queue consumer of WEBHOOK_QUEUE: one attempt per message; a crash is retried by the queue.
 * The batch's attempts run side by side: one after the other, a receiver that takes its full
 * timeout held back every other account's deliveries in the batch.
 */
export async function consumeWebhookBatch(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  await eachMessage(batch, WebhookMessageSchema, "webhook", async (delivery, message) => {
    try {
      await attemptDelivery(env, delivery, Date.now());
      message.ack();
    } catch (error) {
      console.error(
        "webhook attempt crashed",
        delivery.deliveryId,
        error instanceof Error ? error.message : String(error),
      );
      message.retry({ delaySeconds: 30 });
    }
  });
}
