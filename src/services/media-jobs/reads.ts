/**
 * Reading jobs: a job as its creating key sees it (any other key, an unknown id or an expired
 * job: 404), waiting for its end, and what the queue consumer needs of a batch of jobs.
 */
import { and, eq, gt, isNull, or } from "drizzle-orm";
import { orm, type Job } from "../../db/client";
import { jobs } from "../../db/schema";
import { notFound } from "../../errors";
import type { Env } from "../../env";
import { quotedId } from "../../lib/ids";
import type { Caller } from "../accounts/accounts";
import { downloadTokenOf } from "./downloads";
import { stepsOfJob, stepViews } from "./pipeline-steps";
import type { AudioResult, JobStep } from "../../contract/jobs";
import { AudioReportSchema } from "@media-credits/wire/protocol";

export type JobStatus = "queued" | "processing" | "completed" | "failed";

/** A job row, typed by the drizzle schema. */
export type JobRow = Job;

export interface JobStatusView {
  jobId: string;
  status: JobStatus;
  progress: null;
  result?: { url: string; filename: string; audio?: AudioResult };
  error?: string;
  /** A pipeline's steps. */
  steps?: JobStep[];
}

/** A job as its creating key sees it; another key, an unknown id or an expired job: 404. */
export async function getJobForKey(env: Env, caller: Caller, jobId: string, now: number): Promise<JobStatusView> {
  const job = await orm(env.DB)
    .select()
    .from(jobs)
    .where(and(eq(jobs.id, jobId), eq(jobs.keyId, caller.keyId), or(isNull(jobs.expiresAt), gt(jobs.expiresAt, now))))
    .get();
  if (!job) throw notFound(`Job ${quotedId(jobId)} not found.`);
  return jobView(env, job);
}

/**
 * The longest a status read waits for its job to end (REST `wait`, MCP `waitSeconds`): under the
 * 60 s after which common HTTP and MCP clients give up on an answer.
 */
export const MAX_JOB_WAIT_SECONDS = 50;

/** A completed or failed job: nothing will change it any more. */
export const isEnded = (status: JobStatus) => status === "completed" || status === "failed";

/**
 * getJobForKey after waiting up to `waitMs` for a queued or processing job to end. The job's
 * runner answers the moment it ends the job, so a client learns of the end at once, with one
 * request instead of a poll every few hundred milliseconds (each of which also takes CPU from the
 * jobs). When the time is up the job is shown as it is.
 */
export async function waitForJobForKey(
  env: Env,
  caller: Caller,
  jobId: string,
  waitMs: number,
): Promise<JobStatusView> {
  const view = await getJobForKey(env, caller, jobId, Date.now());
  if (waitMs <= 0 || isEnded(view.status)) return view;
  await jobEnd(env, jobId, Date.now() + waitMs);
  return getJobForKey(env, caller, jobId, Date.now());
}

/** Resolves when the job's runner ends it or at `until`; without a runner to ask, by reading the job every second. */
async function jobEnd(env: Env, jobId: string, until: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeUp = new Promise<void>((resolve) => (timer = setTimeout(resolve, until - Date.now())));
  try {
    await Promise.race([
      env.MEDIA_RUNNER.get(env.MEDIA_RUNNER.idFromName(jobId)).waitForEnd(jobId, until - Date.now()),
      timeUp,
    ]);
    return;
  } catch (error) {
    console.warn(
      "waiting on the runner failed; reading the job instead",
      jobId,
      error instanceof Error ? error.message : String(error),
    );
  } finally {
    clearTimeout(timer);
  }
  while (Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, Math.min(1000, until - Date.now())));
    const job = await loadJob(env.DB, jobId);
    if (!job || isEnded(job.status)) return;
  }
}

/**
 * The job as its status endpoint shows it; webhooks send the same object. Only for a job the
 * reader may see (getJobForKey checks the key and the expiry).
 */
export async function jobView(env: Pick<Env, "AUTH_SECRET" | "DB">, job: JobRow): Promise<JobStatusView> {
  const view: JobStatusView = { jobId: job.id, status: job.status, progress: null };
  if (job.status === "completed" && job.resultFilename) {
    view.result = { url: `/api/download/${await downloadTokenOf(env, job.id)}`, filename: job.resultFilename };
    const audio = audioResultOf(job.resultReport);
    if (audio) view.result.audio = audio;
  }
  if (job.status === "failed") view.error = job.error ?? "Processing failed.";
  if (job.tool === "pipeline") view.steps = stepViews(await stepsOfJob(env.DB, job.id), job);
  return view;
}

export interface JobDispatchState {
  status: JobStatus;
  /** The job has a webhook URL. */
  notifies: boolean;
}

/** What the job queue's consumer needs of a batch's jobs, in one read; unknown jobs are absent. */
export async function jobDispatchStates(db: D1Database, jobIds: string[]): Promise<Map<string, JobDispatchState>> {
  const unique = [...new Set(jobIds)];
  if (unique.length === 0) return new Map();
  const { results } = await db
    .prepare(
      `SELECT id, status, webhook_url IS NOT NULL AS notifies FROM jobs WHERE id IN (${unique.map(() => "?").join(", ")})`,
    )
    .bind(...unique)
    .all<{ id: string; status: JobStatus; notifies: number }>();
  return new Map(results.map((row) => [row.id, { status: row.status, notifies: row.notifies === 1 }]));
}

export async function loadJob(db: D1Database, jobId: string): Promise<JobRow | null> {
  return (await orm(db).select().from(jobs).where(eq(jobs.id, jobId)).get()) ?? null;
}

/** The report stored with a result (lifecycle.ts completeJob), as the status shows it; none when absent or unreadable. */
function audioResultOf(stored: string | null): AudioResult | undefined {
  if (!stored) return undefined;
  try {
    const parsed = AudioReportSchema.safeParse(JSON.parse(stored));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
