/**
 * Job webhooks, signed as Standard Webhooks (standardwebhooks.com): when a job ends, a POST of
 * `{type: "job.completed" | "job.failed", timestamp, data: <the job status view>}` to the
 * call's `webhookUrl` or the account's default, with `webhook-id`, `webhook-timestamp` and
 * `webhook-signature: v1,<base64 HMAC-SHA256(secret, "{id}.{timestamp}.{body}")>`.
 *
 * Exactly once per job and terminal event: the delivery row is an outbox written in the same
 * D1 batch as the terminal state (`outboxStatement`, unique per job and event), whichever
 * Worker writes it (the media Worker has no queue binding). The API Worker then hands pending
 * rows to the queue (`dispatchWebhooks`: after the runner calls it makes, and from the cron as
 * the safety net). Each queue message carries a one-use token: only the message holding the
 * row's current token makes the next attempt, so redelivered messages do nothing. Failures are
 * retried on WEBHOOK_RETRY_SCHEDULE (default 24 h over 9 attempts); every attempt is
 * logged. Secrets are derived from the WEBHOOK_SIGNING_KEY Worker secret, the account id and a
 * version that rotation bumps: D1 holds no secret. Brands' secrets are derived the same way
 * (`brandWebhookSecret`).
 */
import * as z from "zod";
import ipaddr from "ipaddr.js";
import { fromBase64, toBase64 } from "../lib/base64";
import type { Env } from "../env";
import { AppError, invalidRequest, notFound } from "../errors";
import { newId, quotedId, randomToken } from "../lib/ids";
import { assertPublicUrl, UnsafeUrlError, type UrlPolicy } from "../lib/public-url";
import { eachMessage } from "../queues/batch";
import type { Caller, KeyMode } from "./accounts";
import { requireVerifiedEmail } from "./email-verification";
import { jobView, loadJob, type JobStatusView } from "./jobs";

export const WebhookMessageSchema = z.object({ deliveryId: z.string().min(1), token: z.string().min(1) });
export type WebhookMessage = z.infer<typeof WebhookMessageSchema>;

export type WebhookEvent = "job.completed" | "job.failed";

export const MAX_WEBHOOK_URL_LENGTH = 2048;
/** 30 s, 2 min, 10 min, 1 h, 3 h, 6 h, 6 h, 8 h: 9 attempts over a little more than 24 h (queue delays cap at 12 h). */
export const DEFAULT_RETRY_SCHEDULE = [30, 120, 600, 3600, 10800, 21600, 21600, 28800];
export const ATTEMPT_TIMEOUT_MS = 10_000;
/** An attempt in flight is not taken again before this; a consumer that died frees it after. */
const LEASE_MS = 60_000;
const MAX_DELAY_SECONDS = 43_200;
/** After a rotation, the previous secret also signs for this long, so receivers can switch without a gap. */
export const ROTATION_OVERLAP_MS = 24 * 3600 * 1000;
/** Delivery rows and their log are dropped this long after they were created. */
const LOG_RETENTION_MS = 48 * 3600 * 1000;

// --- URLs -------------------------------------------------------------------------------------

export function webhookPolicy(env: Env): UrlPolicy {
  return { allowPrivate: env.ALLOW_PRIVATE_URLS === "true", resolverUrl: env.DNS_RESOLVER_URL };
}

function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, "").toLowerCase();
  if (bare === "localhost" || bare.endsWith(".localhost")) return true;
  if (!ipaddr.isValid(bare)) return false;
  let address = ipaddr.parse(bare);
  if (address.kind() === "ipv6" && (address as ipaddr.IPv6).isIPv4MappedAddress()) address = (address as ipaddr.IPv6).toIPv4Address();
  return address.range() === "loopback";
}

/**
 * Throws UnsafeUrlError unless `raw` may receive webhooks: https to a public host (names are
 * resolved and every address must be public), as URL uploads are checked. With
 * ALLOW_PRIVATE_URLS=true (local development only) plain http is accepted on loopback.
 */
export async function assertWebhookUrl(raw: string, policy: UrlPolicy): Promise<URL> {
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) throw new UnsafeUrlError(`at most ${MAX_WEBHOOK_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UnsafeUrlError("not a valid URL");
  }
  if (url.username || url.password) throw new UnsafeUrlError("credentials in the URL are not accepted");
  const httpAllowed = policy.allowPrivate && isLoopback(url.hostname);
  if (url.protocol !== "https:" && !(url.protocol === "http:" && httpAllowed)) throw new UnsafeUrlError("only https URLs are accepted");
  return await assertPublicUrl(url.toString(), policy);
}

/** The call-time check: a refused URL is a 400 naming the field, before anything is debited. */
export async function validateWebhookUrl(env: Env, raw: string, field = "webhookUrl"): Promise<string> {
  try {
    return (await assertWebhookUrl(raw, webhookPolicy(env))).toString();
  } catch (error) {
    if (error instanceof UnsafeUrlError) throw invalidRequest(`${field}: ${error.message}.`);
    throw error;
  }
}

// --- Secrets and signatures -------------------------------------------------------------------

const encoder = new TextEncoder();

async function hmac(key: Uint8Array, message: string): Promise<Uint8Array> {
  const imported = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", imported, encoder.encode(message)));
}

/**
 * `whsec_<base64 of 32 bytes>` = HMAC(WEBHOOK_SIGNING_KEY, "<owner>:<version>"). Owners are
 * accounts (`acct_`) and brands (`brd_`): their prefixed ids never collide, so neither can be
 * given the other's secret.
 */
async function derivedSecret(env: Pick<Env, "WEBHOOK_SIGNING_KEY">, ownerId: string, version: number): Promise<string> {
  if (!env.WEBHOOK_SIGNING_KEY) throw new AppError("internal_error", "Webhooks are not configured on this server (WEBHOOK_SIGNING_KEY).");
  return `whsec_${toBase64(await hmac(encoder.encode(env.WEBHOOK_SIGNING_KEY), `${ownerId}:${version}`))}`;
}

/**
 * The account's job-webhook secret at `version` (rotation bumps the version stored in D1). Test
 * mode has a secret of its own: a test key's jobs never carry a signature the live endpoint accepts.
 */
export async function accountWebhookSecret(env: Pick<Env, "WEBHOOK_SIGNING_KEY">, accountId: string, version: number, mode: KeyMode = "live"): Promise<string> {
  return derivedSecret(env, mode === "test" ? `${accountId}/test` : accountId, version);
}

/**
 * A brand's secret: signs its events and posts (src/services/publishers.ts) and verifies the
 * engagement its integration reports (src/services/post-stats.ts). Derived, so reading D1 is
 * not enough to forge either. Version 1 always: brands have no rotation yet; a stored version
 * can add it later without changing the secrets given out today.
 */
export async function brandWebhookSecret(env: Pick<Env, "WEBHOOK_SIGNING_KEY">, brandId: string): Promise<string> {
  return derivedSecret(env, brandId, 1);
}

/**
 * The Standard Webhooks headers for one attempt: `v1,` + base64 HMAC of "{id}.{timestamp}.{body}",
 * one space-separated signature per secret (the current one first).
 */
export async function signWebhook(secrets: string | string[], id: string, timestampSeconds: number, body: string): Promise<Record<string, string>> {
  const signatures: string[] = [];
  for (const secret of Array.isArray(secrets) ? secrets : [secrets]) {
    const key = fromBase64(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret);
    signatures.push(`v1,${toBase64(await hmac(key, `${id}.${timestampSeconds}.${body}`))}`);
  }
  return { "webhook-id": id, "webhook-timestamp": String(timestampSeconds), "webhook-signature": signatures.join(" ") };
}

/** The secrets that sign now: the current one, and the previous one within 24 h of a rotation. */
async function signingSecrets(env: Env, accountId: string, mode: KeyMode, now: number): Promise<string[]> {
  const row = await accountWebhookRow(env.DB, accountId, mode);
  const secrets = [await accountWebhookSecret(env, accountId, row.version, mode)];
  if (row.version > 1 && row.rotatedAt !== null && now - row.rotatedAt < ROTATION_OVERLAP_MS) {
    secrets.push(await accountWebhookSecret(env, accountId, row.version - 1, mode));
  }
  return secrets;
}

// --- Account settings -------------------------------------------------------------------------

export interface AccountWebhookView {
  url: string | null;
  secret: string;
  secretVersion: number;
}

/** The columns of each mode's settings: live keys' and test keys' are apart (a test key never reaches the live ones). */
const SETTINGS = {
  live: { url: "webhook_url", version: "webhook_secret_version", rotatedAt: "webhook_secret_rotated_at" },
  test: { url: "test_webhook_url", version: "test_webhook_secret_version", rotatedAt: "test_webhook_secret_rotated_at" },
} as const;

async function accountWebhookRow(db: D1Database, accountId: string, mode: KeyMode) {
  const column = SETTINGS[mode];
  const row = await db
    .prepare(`SELECT ${column.url} AS url, ${column.version} AS version, ${column.rotatedAt} AS rotatedAt FROM accounts WHERE id = ?`)
    .bind(accountId)
    .first<{ url: string | null; version: number; rotatedAt: number | null }>();
  if (!row) throw new AppError("not_found", "Account not found.");
  return row;
}

/** The webhook settings of a mode: live keys see the live ones, test keys the test ones. */
export async function getAccountWebhook(env: Env, accountId: string, mode: KeyMode = "live"): Promise<AccountWebhookView> {
  const row = await accountWebhookRow(env.DB, accountId, mode);
  return { url: row.url, secret: await accountWebhookSecret(env, accountId, row.version, mode), secretVersion: row.version };
}

/**
 * Sets (after the same checks as a call's webhookUrl, and once the account's email is confirmed)
 * or clears the mode's default URL.
 */
export async function setAccountWebhookUrl(env: Env, accountId: string, raw: string | null, mode: KeyMode = "live"): Promise<AccountWebhookView> {
  if (raw !== null) await requireVerifiedEmail(env.DB, accountId, "set a webhook URL");
  const url = raw === null ? null : await validateWebhookUrl(env, raw, "url");
  await accountWebhookSecret(env, accountId, 1);
  await env.DB.prepare(`UPDATE accounts SET ${SETTINGS[mode].url} = ? WHERE id = ?`).bind(url, accountId).run();
  return getAccountWebhook(env, accountId, mode);
}

/**
 * A new secret at once. For 24 h deliveries carry two signatures (new and previous secret), so
 * a receiver can switch to the new secret without missing events; then the previous one stops.
 */
export async function rotateAccountWebhookSecret(env: Env, accountId: string, now: number, mode: KeyMode = "live"): Promise<AccountWebhookView> {
  await accountWebhookSecret(env, accountId, 1);
  const column = SETTINGS[mode];
  await env.DB.prepare(`UPDATE accounts SET ${column.version} = ${column.version} + 1, ${column.rotatedAt} = ? WHERE id = ?`).bind(now, accountId).run();
  return getAccountWebhook(env, accountId, mode);
}

/**
 * A call's own webhook URL, checked now (400 if refused). A call without one notifies the
 * default of its key's mode, which the job's insert reads (src/services/jobs.ts).
 */
export async function checkCallWebhookUrl(env: Env, accountId: string, callUrl: string): Promise<string> {
  await requireVerifiedEmail(env.DB, accountId, "use a webhook URL");
  const url = await validateWebhookUrl(env, callUrl);
  await accountWebhookSecret(env, accountId, 1);
  return url;
}

// --- Outbox and dispatch ----------------------------------------------------------------------

/**
 * The statement that records a job's webhook, for the batch that writes its terminal state:
 * it inserts only when the job has reached `status` and has a URL, and at most once per job
 * and event (unique index), whatever retries or redeliveries happen.
 */
export function outboxStatement(db: D1Database, jobId: string, status: "completed" | "failed", now: number): D1PreparedStatement {
  return db
    .prepare(
      `INSERT OR IGNORE INTO job_webhooks (id, job_id, account_id, event, url, status, attempts, next_attempt_at, created_at)
       SELECT ?1, id, account_id, ?2, webhook_url, 'pending', 0, ?3, ?3 FROM jobs
       WHERE id = ?4 AND status = ?5 AND webhook_url IS NOT NULL`,
    )
    .bind(newId("msg", now), `job.${status}`, now, jobId, status);
}

const delaySecondsUntil = (at: number, now: number) => Math.min(MAX_DELAY_SECONDS, Math.max(0, Math.ceil((at - now) / 1000)));

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
    const pending = await env.DB.prepare("SELECT 1 FROM job_webhooks WHERE job_id = ? AND status = 'pending' AND token IS NULL LIMIT 1").bind(jobId).first();
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
      await env.WEBHOOK_QUEUE.send({ deliveryId: row.id, token }, { delaySeconds: delaySecondsUntil(row.next_attempt_at, now) });
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
    env.DB.prepare("DELETE FROM job_webhook_attempts WHERE delivery_id IN (SELECT id FROM job_webhooks WHERE created_at <= ?)").bind(now - LOG_RETENTION_MS),
    env.DB.prepare("DELETE FROM job_webhooks WHERE created_at <= ?").bind(now - LOG_RETENTION_MS),
  ]);
  return { dispatched, purged: purged.meta.changes };
}

// --- Delivery ---------------------------------------------------------------------------------

export function retrySchedule(env: Env): number[] {
  if (!env.WEBHOOK_RETRY_SCHEDULE) return DEFAULT_RETRY_SCHEDULE;
  const values = env.WEBHOOK_RETRY_SCHEDULE.split(",").map((v) => Number(v.trim()));
  return values.every((v) => Number.isFinite(v) && v >= 0) ? values.map((v) => Math.min(MAX_DELAY_SECONDS, v)) : DEFAULT_RETRY_SCHEDULE;
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
  if (delivery.payload) return { body: delivery.payload, mode: job?.mode ?? (JSON.parse(delivery.payload).livemode === false ? "test" : "live") };
  if (!job) return null;
  const data: JobStatusView = await jobView(env, job);
  // livemode says which settings sent it: a test key's job goes to the test URL, signed with the test secret.
  return { body: JSON.stringify({ type: delivery.event, timestamp: new Date(job.finishedAt ?? Date.now()).toISOString(), livemode: job.mode !== "test", data }), mode: job.mode };
}

interface AttemptOutcome {
  ok: boolean;
  status: number | null;
  error: string | null;
}

async function post(env: Env, delivery: DeliveryRow, { body, mode }: { body: string; mode: KeyMode }, now: number): Promise<AttemptOutcome> {
  try {
    // Checked again at every attempt: what a name resolves to may have changed since the call.
    const url = await assertWebhookUrl(delivery.url, webhookPolicy(env));
    const headers = await signWebhook(await signingSecrets(env, delivery.account_id, mode, now), delivery.id, Math.floor(now / 1000), body);
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
    return { ok, status: response.status, error: ok ? null : response.status >= 300 && response.status < 400 ? "redirect not followed" : null };
  } catch (error) {
    if (error instanceof UnsafeUrlError) return { ok: false, status: null, error: `refused: ${error.message}` };
    if (error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError")) return { ok: false, status: null, error: `no answer within ${ATTEMPT_TIMEOUT_MS / 1000} s` };
    return { ok: false, status: null, error: (error instanceof Error ? error.message : String(error)).slice(0, 200) };
  }
}

/**
 * One attempt of a delivery, by the queue message holding its current token (any other
 * message is stale and does nothing). Logs the attempt; 2xx ends the delivery, anything else
 * schedules the next attempt or, after the last one, marks the delivery failed.
 */
export async function attemptDelivery(env: Env, message: WebhookMessage, now: number): Promise<"delivered" | "retrying" | "failed" | "stale"> {
  const delivery = await env.DB.prepare(
    `UPDATE job_webhooks SET token = NULL, attempts = attempts + 1, lease_until = ?1
     WHERE id = ?2 AND token = ?3 AND status = 'pending'
     RETURNING id, job_id, account_id, event, url, payload, attempts`,
  )
    .bind(now + LEASE_MS, message.deliveryId, message.token)
    .first<DeliveryRow>();
  if (!delivery) return "stale";

  const payload = await payloadOf(env, delivery);
  const outcome: AttemptOutcome = payload === null ? { ok: false, status: null, error: "the job no longer exists" } : await post(env, delivery, payload, now);
  const finished = Date.now();
  await env.DB.prepare("INSERT OR REPLACE INTO job_webhook_attempts (delivery_id, attempt, started_at, duration_ms, response_status, error) VALUES (?, ?, ?, ?, ?, ?)")
    .bind(delivery.id, delivery.attempts, now, Math.max(0, finished - now), outcome.status, outcome.error)
    .run();

  const delay = retrySchedule(env)[delivery.attempts - 1];
  if (outcome.ok || payload === null || delay === undefined) {
    const status = outcome.ok ? "delivered" : "failed";
    await env.DB.prepare("UPDATE job_webhooks SET status = ?, lease_until = NULL, finished_at = ? WHERE id = ?").bind(status, finished, delivery.id).run();
    return status;
  }
  const next = finished + delay * 1000;
  const token = randomToken(16);
  await env.DB.prepare("UPDATE job_webhooks SET token = ?, lease_until = NULL, next_attempt_at = ? WHERE id = ?").bind(token, next, delivery.id).run();
  try {
    await env.WEBHOOK_QUEUE?.send({ deliveryId: delivery.id, token }, { delaySeconds: delaySecondsUntil(next, finished) });
  } catch (error) {
    console.error("webhook retry enqueue failed", delivery.id, error instanceof Error ? error.message : String(error));
    await env.DB.prepare("UPDATE job_webhooks SET token = NULL WHERE id = ? AND token = ?").bind(delivery.id, token).run();
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
      console.error("webhook attempt crashed", delivery.deliveryId, error instanceof Error ? error.message : String(error));
      message.retry({ delaySeconds: 30 });
    }
  });
}

// --- Delivery log -----------------------------------------------------------------------------

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
export async function webhookLogForKey(db: D1Database, caller: Caller, jobId: string): Promise<{ jobId: string; deliveries: WebhookDeliveryView[] }> {
  const job = await db.prepare("SELECT id FROM jobs WHERE id = ? AND key_id = ?").bind(jobId, caller.keyId).first<{ id: string }>();
  if (!job) throw notFound(`Job ${quotedId(jobId)} not found.`);
  return { jobId: job.id, deliveries: await webhookLog(db, job.id) };
}

/** The deliveries of a job and every attempt, oldest first. */
export async function webhookLog(db: D1Database, jobId: string): Promise<WebhookDeliveryView[]> {
  const deliveries = await db
    .prepare("SELECT id, event, url, status, next_attempt_at FROM job_webhooks WHERE job_id = ? ORDER BY created_at")
    .bind(jobId)
    .all<{ id: string; event: WebhookEvent; url: string; status: WebhookDeliveryView["status"]; next_attempt_at: number }>();
  const views: WebhookDeliveryView[] = [];
  for (const d of deliveries.results) {
    const attempts = await db
      .prepare("SELECT attempt, started_at, duration_ms, response_status, error FROM job_webhook_attempts WHERE delivery_id = ? ORDER BY attempt")
      .bind(d.id)
      .all<{ attempt: number; started_at: number; duration_ms: number; response_status: number | null; error: string | null }>();
    views.push({
      id: d.id,
      event: d.event,
      url: d.url,
      status: d.status,
      nextAttemptAt: d.status === "pending" ? new Date(d.next_attempt_at).toISOString() : null,
      attempts: attempts.results.map((a) => ({ attempt: a.attempt, at: new Date(a.started_at).toISOString(), durationMs: a.duration_ms, responseStatus: a.response_status, error: a.error })),
    });
  }
  return views;
}
