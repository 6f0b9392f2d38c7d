/**
 * Creating a job: validation against the caller's stored uploads, the price for the account's
 * plan, and one atomic batch that debits the balance, appends the ledger entry and inserts the
 * queued job; an Idempotency-Key replays the first answer. Refusals come before any debit, 400
 * (inputs) before 402 (credits).
 */
import { AppError, InsufficientCreditsError, invalidRequest, notFound, QuotaExceededError } from "../../errors";
import type { Env } from "../../env";
import { sha256Hex } from "../../lib/hash";
import { newId } from "../../lib/ids";
import { estimateSeconds, tools, type ToolDefinitionOf, type ToolParams } from "../../tools";
import type { BillingQuantity, ToolContext } from "../../tools/definition";
import type { Caller } from "../accounts/accounts";
import { accountLimits, secondsToNextUtcDay, utcDay } from "../accounts/limits";
import { SPENDING_CAP_CONSTRAINT, spendingStatement, spentToday, type Connection } from "../accounts/connected-apps";
import { isOversizedVideo } from "@media-credits/wire/decode-limits";
import { balanceOf, debitStatements, failAndRefund, isConstraintError } from "../billing/credits";
import { costOf, type ToolName } from "../billing/pricing";
import { resolveUpload, type StoredUpload } from "./uploads";
import { speechCapabilities } from "./speech-capabilities";
import { checkCallWebhookUrl } from "../webhooks/settings";
import { dispatchJobWebhooks } from "../webhooks/outbox";
import { MAX_EXPECTED_WORK_MS, RESULT_TTL_MS } from "./lifecycle";
import { downloadIdOf } from "./downloads";

export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

export interface JobEnvelope {
  jobId: string;
  status: "queued";
  creditsUsed: number;
  creditsRemaining: number;
  estimatedSeconds: number;
}

const envelopeOf = (job: {
  id: string;
  cost: number;
  balance_after: number;
  estimated_seconds: number;
}): JobEnvelope => ({
  jobId: job.id,
  status: "queued",
  creditsUsed: job.cost,
  creditsRemaining: job.balance_after,
  estimatedSeconds: job.estimated_seconds,
});

/** Stable hash of a request body for Idempotency-Key comparison (key order does not matter). */
async function bodyHash(tool: string, body: unknown): Promise<string> {
  const canonical = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(canonical)
      : value && typeof value === "object"
        ? Object.fromEntries(
            Object.keys(value)
              .sort()
              .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
          )
        : value;
  return sha256Hex(`${tool}\n${JSON.stringify(canonical(body))}`);
}

async function replay(
  db: D1Database,
  caller: Caller,
  key: string,
  hash: string,
  now: number,
): Promise<JobEnvelope | undefined> {
  const row = await db
    .prepare(
      `SELECT i.request_hash, j.id, j.cost, j.balance_after, j.estimated_seconds FROM idempotency_keys i
       JOIN jobs j ON j.id = i.job_id WHERE i.account_id = ? AND i.key = ? AND i.created_at > ?`,
    )
    .bind(caller.accountId, key, now - IDEMPOTENCY_TTL_MS)
    .first<{ request_hash: string; id: string; cost: number; balance_after: number; estimated_seconds: number }>();
  if (!row) return undefined;
  if (row.request_hash !== hash) {
    throw invalidRequest("Idempotency-Key: this key was already used with a different request body.");
  }
  return envelopeOf(row);
}

async function hasClonedVoice(db: D1Database, accountId: string): Promise<boolean> {
  const row = await db.prepare("SELECT 1 AS present FROM cloned_voices WHERE account_id = ?").bind(accountId).first();
  return row !== null;
}

export interface CreateJobInput<K extends ToolName> {
  tool: K;
  params: ToolParams[K];
  idempotencyKey?: string;
  /** The call's own webhook URL (part of the body, so of the Idempotency-Key comparison). */
  webhookUrl?: string;
  /** A connected assistant's call: its owner's spending caps apply (src/services/accounts/connected-apps.ts). */
  assistant?: Connection;
  /** The most the caller agrees to pay for this call; a call that would cost more is refused (402). */
  maxCredits?: number;
}

/**
 * Validates a tool call against the caller's uploads, prices it for the account's plan and,
 * in one atomic batch, debits the balance, appends the ledger entry and creates the queued
 * job; then dispatches it. Order of refusals: 400 (inputs) before 402 (credits).
 */
export async function createToolJob<K extends ToolName>(
  env: Env,
  caller: Caller,
  input: CreateJobInput<K>,
  now: number,
  waitUntil?: (task: Promise<unknown>) => void,
): Promise<JobEnvelope> {
  const { envelope } = await createJob(
    env,
    caller,
    { ...input, hashedTool: input.tool, hashedBody: input.params },
    async () => {
      const priced = await priceToolCall(env, caller, input.tool, input.params, now);
      return {
        tool: input.tool,
        params: JSON.stringify(input.params),
        uploadIds: priced.uploads.map((u) => u.id),
        cost: priced.cost,
        estimatedSeconds: priced.estimatedSeconds,
        debits: [{ tool: input.tool, cost: priced.cost }],
      };
    },
    now,
    waitUntil,
  );
  return envelope;
}

/** A job ready to be paid for: what the jobs row stores and what the ledger debits. */
export interface PricedJob {
  /** A tool's name, or `pipeline`. */
  tool: ToolName | "pipeline";
  /** Stored parameters (JSON). */
  params: string;
  /** Uploads the job reads (kept until it ends). */
  uploadIds: string[];
  cost: number;
  estimatedSeconds: number;
  /** One ledger entry each (a pipeline's steps); their costs add up to `cost`. */
  debits: { tool: ToolName; cost: number }[];
  /** Rows written in the same batch, after the job's (a pipeline's steps). */
  rows?: (db: D1Database, jobId: string) => D1PreparedStatement[];
}

export interface JobRequest {
  /** The call's name and body as sent, for the Idempotency-Key comparison. */
  hashedTool: string;
  hashedBody: unknown;
  idempotencyKey?: string;
  webhookUrl?: string;
  assistant?: Connection;
  maxCredits?: number;
}

/**
 * What every paid job goes through, a tool call or a pipeline: the Idempotency-Key's replay, the
 * price (`price` throws the call's 400s), the webhook URL, the caller's ceiling and the assistant's
 * caps, then one atomic batch (idempotency row, test-job count, assistant spending, the debits, the
 * job and its extra rows) and the dispatch. Refusals come before any debit, 400 before 402.
 */
export async function createJob(
  env: Env,
  caller: Caller,
  input: JobRequest,
  price: () => Promise<PricedJob>,
  now: number,
  waitUntil?: (task: Promise<unknown>) => void,
): Promise<{ envelope: JobEnvelope; replayed: boolean }> {
  const db = env.DB;
  if (
    input.idempotencyKey !== undefined &&
    (input.idempotencyKey.length === 0 ||
      input.idempotencyKey.length > 255 ||
      /[\u0000-\u001f\u007f]/.test(input.idempotencyKey))
  ) {
    throw invalidRequest("Idempotency-Key: must be 1 to 255 characters, without control characters.");
  }
  // Scoped to the API key that sent it (a key has one mode, so test calls never replay live
  // jobs): another key of the account gets a job of its own, never one it could not read. The
  // separator is a control character, which an Idempotency-Key may not contain.
  const key = input.idempotencyKey === undefined ? undefined : `${caller.keyId}\n${input.idempotencyKey}`;
  // Compared after validation: a body that spells out a default is the same request.
  // The hash of the body as sent: without webhookUrl and maxCredits it is the hash of the tool's parameters.
  const hashed = {
    ...(input.hashedBody as object),
    ...(input.webhookUrl === undefined ? {} : { webhookUrl: input.webhookUrl }),
    ...(input.maxCredits === undefined ? {} : { maxCredits: input.maxCredits }),
  };
  const hash = key ? await bodyHash(input.hashedTool, hashed) : "";
  if (key) {
    const previous = await replay(db, caller, key, hash, now);
    if (previous) return { envelope: previous, replayed: true };
  }

  const priced = await price();
  const { cost, estimatedSeconds: estimated } = priced;
  // A refused webhookUrl is a 400 like any other field: nothing debited, no job. Without one
  // (null), the insert below takes the account's default.
  const webhookUrl =
    input.webhookUrl === undefined ? null : await checkCallWebhookUrl(env, caller.accountId, input.webhookUrl);
  // The caller's ceiling: a call that would cost more is refused before any debit (a 402 that
  // says what it would cost), so a client never pays more than it agreed to.
  if (input.maxCredits !== undefined && cost > input.maxCredits) throw overCeiling(cost, input.maxCredits);
  if (input.assistant?.perCallCreditCap != null && cost > input.assistant.perCallCreditCap) {
    throw new AppError(
      "invalid_request",
      `This call costs ${cost} credits, over the ${input.assistant.perCallCreditCap} credits a call the account's owner allows this assistant; nothing was spent. The owner can change the cap in Connected apps.`,
      { required: cost, perCallCap: input.assistant.perCallCreditCap },
    );
  }
  const jobId = newId("job", now);
  const downloadId = await downloadIdOf(env, jobId);

  const extraRows = priced.rows?.(db, jobId) ?? [];
  const statements = [
    ...(key
      ? [
          db
            .prepare("DELETE FROM idempotency_keys WHERE account_id = ? AND key = ? AND created_at <= ?")
            .bind(caller.accountId, key, now - IDEMPOTENCY_TTL_MS),
          db
            .prepare(
              "INSERT INTO idempotency_keys (account_id, key, request_hash, job_id, created_at) VALUES (?, ?, ?, ?, ?)",
            )
            .bind(caller.accountId, key, hash, jobId, now),
        ]
      : []),
    // A test key's job counts toward the account's test jobs of the day, an assistant's cost toward
    // its daily cap: each CHECK refuses the whole batch past its limit.
    ...(caller.mode === "test" ? [testJobCountStatement(db, caller.accountId, now)] : []),
    ...(input.assistant ? [spendingStatement(db, input.assistant, cost, now)] : []),
    ...priced.debits.flatMap((debit, step) =>
      debitStatements(db, { accountId: caller.accountId, jobId, cost: debit.cost, tool: debit.tool, now, step }),
    ),
    // plan_debit and purchased_debit add up the job's debits (a pipeline has one per step).
    db
      .prepare(
        `INSERT INTO jobs (id, account_id, key_id, tool, params, input_upload_ids, status, cost, plan_debit, purchased_debit,
           balance_after, estimated_seconds, download_id, created_at, webhook_url, mode, paid_period_end)
         SELECT ?1, a.id, ?2, ?3, ?4, ?5, 'queued', ?6, -l.plan_delta, -l.purchased_delta,
           a.plan_credits + a.purchased_credits, ?7, ?8, ?9,
           COALESCE(?11, CASE WHEN ?12 = 'test' THEN a.test_webhook_url ELSE a.webhook_url END), ?12,
           CASE WHEN a.plan = 'payg' THEN NULL ELSE a.plan_period_end END
         FROM accounts a JOIN (SELECT SUM(plan_delta) AS plan_delta, SUM(purchased_delta) AS purchased_delta
           FROM ledger WHERE job_id = ?1 AND kind = 'debit' GROUP BY job_id) l WHERE a.id = ?10
         RETURNING balance_after, webhook_url`,
      )
      .bind(
        jobId,
        caller.keyId,
        priced.tool,
        priced.params,
        JSON.stringify(priced.uploadIds),
        cost,
        estimated,
        downloadId,
        now,
        caller.accountId,
        webhookUrl,
        caller.mode,
      ),
    ...extraRows,
  ];
  const jobInsert = statements.length - 1 - extraRows.length;
  let created: { balance_after: number; webhook_url: string | null } | undefined;
  try {
    const results = await db.batch<{ balance_after: number; webhook_url: string | null }>(statements);
    created = results[jobInsert]?.results[0];
  } catch (error) {
    if (isConstraintError(error, "CHECK") && error instanceof Error && error.message.includes("test_jobs_within_limit"))
      throw testJobsExhausted(now);
    if (
      isConstraintError(error, "CHECK") &&
      error instanceof Error &&
      error.message.includes(SPENDING_CAP_CONSTRAINT) &&
      input.assistant
    ) {
      const spent = await spentToday(db, input.assistant.connectionId, now);
      throw new AppError(
        "invalid_request",
        `This call costs ${cost} credits; this assistant has spent ${spent} of the ${input.assistant.dailyCreditCap} credits a day the account's owner allows it, so nothing was spent. The cap starts again at midnight UTC, or the owner can raise it in Connected apps.`,
        { required: cost, dailyCap: input.assistant.dailyCreditCap ?? 0, spentToday: spent },
      );
    }
    if (isConstraintError(error, "CHECK"))
      throw new InsufficientCreditsError(await balanceOf(db, caller.accountId), cost);
    if (key && isConstraintError(error, "UNIQUE")) {
      // A concurrent request with the same key committed first: answer what it answered.
      const previous = await replay(db, caller, key, hash, now);
      if (previous) return { envelope: previous, replayed: true };
    }
    throw error;
  }
  // No account row to select from: nothing was debited or created.
  if (!created) throw notFound("Account not found.");

  try {
    await env.JOBS_QUEUE.send({ jobId });
  } catch (error) {
    console.error("queue send failed", jobId, error instanceof Error ? error.message : String(error));
    await failAndRefund(db, jobId, "The job could not be dispatched; credits refunded.", Date.now(), RESULT_TTL_MS);
    // The caller is told to retry: the same Idempotency-Key must then start a job, not replay this one.
    if (key)
      await db
        .prepare("DELETE FROM idempotency_keys WHERE account_id = ? AND key = ? AND job_id = ?")
        .bind(caller.accountId, key, jobId)
        .run();
    throw new AppError("internal_error", "The job could not be dispatched; nothing was charged. Please retry.");
  }
  // Start at once rather than after the queue's batching delay (up to max_batch_timeout). The
  // queued message stays the durable path: it finds the job claimed and skips it, or runs it
  // if this call never reached the runner.
  waitUntil?.(startJobNow(env, jobId, created.webhook_url !== null));
  return {
    envelope: {
      jobId,
      status: "queued",
      creditsUsed: cost,
      creditsRemaining: created.balance_after,
      estimatedSeconds: estimated,
    },
    replayed: false,
  };
}

/** What a valid call costs and how long it should take, for the caller's plan and key mode. */
export interface PricedCall {
  uploads: StoredUpload[];
  quantity: BillingQuantity;
  /** Credits the call debits (0 for a test key). */
  cost: number;
  estimatedSeconds: number;
}

/**
 * Everything a tool call is checked against before money moves, and its price: the caller's
 * uploads (kind, audio, size), the tool's own checks, a test key's bounds, the longest work a job
 * may take. A call and its quote both go through here, so a quote refuses what the call would
 * refuse, with the same error, and prices exactly what the call then debits.
 */
export async function priceToolCall<K extends ToolName>(
  env: Env,
  caller: Caller,
  tool: K,
  params: ToolParams[K],
  now: number,
): Promise<PricedCall> {
  const db = env.DB;
  const spec = tools[tool] as unknown as ToolDefinitionOf<K>;
  const refs = spec.inputs(params);
  // Looked up side by side (one round trip's wait, not one per input); refused in field order.
  const lookups = await Promise.allSettled(
    refs.map((ref) => resolveUpload(db, caller.accountId, ref.uploadId, ref.field, now, caller.mode)),
  );
  const uploads: StoredUpload[] = [];
  for (const [index, ref] of refs.entries()) {
    const lookup = lookups[index]!;
    if (lookup.status === "rejected") throw lookup.reason;
    const upload = lookup.value;
    if (!ref.accepts.includes(upload.kind)) {
      throw invalidRequest(
        `${ref.field}: this tool needs ${ref.accepts.join(" or ")}, the upload is ${upload.kind === "image" ? "an image" : upload.kind}.`,
      );
    }
    if (ref.needsAudio && !upload.probe.hasAudio) throw invalidRequest(`${ref.field}: the upload has no audio track.`);
    if (upload.kind === "video" && isOversizedVideo(upload.probe.width, upload.probe.height)) {
      throw invalidRequest(
        `${ref.field}: the video is ${upload.probe.width}x${upload.probe.height}; frames larger than 8192x4320 (8K) are not processed. Scale it down and upload it again.`,
      );
    }
    uploads.push(upload);
  }
  await spec.check?.(params, uploads, toolContext(env, caller));

  const quantity = spec.quantity(params, uploads);
  if (caller.mode === "test") checkTestModeBounds(quantity);
  // A test key spends nothing: the job's debit (and any refund) is of 0 credits.
  const cost = caller.mode === "test" ? 0 : costOf(caller.plan, tool, quantity);
  const estimated = estimateSeconds(tool, quantity);
  // Refused before any debit: a job that cannot finish within the limits is never sold.
  if (estimated > MAX_WORK_SECONDS) {
    throw invalidRequest(
      `This call would need about ${Math.ceil(estimated / 3600)} hours of processing; a job may take at most ${MAX_WORK_SECONDS / 3600} hours. Split the media into shorter parts.`,
    );
  }
  return { uploads, quantity, cost, estimatedSeconds: estimated };
}

/** The longest work a job may be expected to take, in seconds: a job that cannot finish within the limits is never sold. */
export const MAX_WORK_SECONDS = MAX_EXPECTED_WORK_MS / 1000;

/** What a tool's checks may look up about the caller (src/tools/definition.ts). */
export function toolContext(env: Env, caller: Caller): ToolContext {
  return {
    hasClonedVoice: () => hasClonedVoice(env.DB, caller.accountId),
    speech: () => speechCapabilities(env),
  };
}

/** The 402 of a call over its caller's `maxCredits`: the contract's error shape, with both figures. */
export function overCeiling(cost: number, maxCredits: number): AppError {
  return new AppError(
    "insufficient_credits",
    `This call costs ${cost} credit${cost === 1 ? "" : "s"}, over the maxCredits of ${maxCredits} it was sent with; nothing was spent.`,
    { required: cost, maxCredits },
  );
}

/** Test keys run real jobs for free, so what one call may process is bounded (src/services/accounts/limits.ts). */
export function checkTestModeBounds(quantity: BillingQuantity): void {
  const { testMediaSeconds, testCharacters } = accountLimits;
  if ("durationMs" in quantity && quantity.durationMs > testMediaSeconds * 1000) {
    throw invalidRequest(
      `Test keys process at most ${testMediaSeconds / 60} minutes of media per call; this call bills ${quantity.durationMs / 1000} s. Use a live key.`,
    );
  }
  if ("characters" in quantity && quantity.characters > testCharacters) {
    throw invalidRequest(
      `Test keys speak at most ${testCharacters} characters per call; this text has ${quantity.characters}. Use a live key.`,
    );
  }
}

/** Counts a test job toward the account's day (test_job_days: the limit travels with the count, the CHECK enforces it). */
function testJobCountStatement(db: D1Database, accountId: string, now: number): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO test_job_days (account_id, day, jobs, max_jobs) VALUES (?1, ?2, 1, ?3)
       ON CONFLICT (account_id, day) DO UPDATE SET jobs = jobs + 1, max_jobs = excluded.max_jobs`,
    )
    .bind(accountId, utcDay(now), accountLimits.testJobsPerDay);
}

const testJobsExhausted = (now: number) =>
  new QuotaExceededError(
    `Test keys of an account start at most ${accountLimits.testJobsPerDay} jobs a day (UTC); the count starts again at midnight UTC. Use a live key for more.`,
    secondsToNextUtcDay(now),
  );

/**
 * Runs the job in its MediaRunner; `notifies`: the job has a webhook URL. Jobs without one
 * spend nothing more here: finished jobs come back in bunches (the media Worker interleaves
 * them), and a database read for each held up tool calls behind them.
 */
async function startJobNow(env: Env, jobId: string, notifies: boolean): Promise<void> {
  try {
    await env.MEDIA_RUNNER.get(env.MEDIA_RUNNER.idFromName(jobId)).run(jobId);
    if (notifies) await dispatchJobWebhooks(env, jobId);
  } catch (error) {
    console.warn(
      "immediate start failed; the queue will deliver",
      jobId,
      error instanceof Error ? error.message : String(error),
    );
  }
}
