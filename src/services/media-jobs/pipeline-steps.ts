/**
 * A pipeline job's steps as stored (pipeline_steps): read in order, moved along by the job's
 * MediaRunner (processing, completed with the output the next step reads, failed), and shown in
 * the job's status. A step's state after its pipeline ended is read with the job's: a step still
 * processing in a failed job failed with it, one still queued was skipped.
 */
import { and, asc, eq } from "drizzle-orm";
import { orm } from "../../db/client";
import { pipelineSteps } from "../../db/schema";
import type { JobStep } from "../../contract/jobs";
import type { JobStatus } from "./reads";
import { invalidRequest } from "../../errors";

/** What the previous step hands on: `step:<position>` in a step's inputs. */
export const stepRef = (position: number) => `step:${position}`;
export const isStepRef = (id: string) => id.startsWith("step:");

/**
 * A pipeline's steps are stored in one row (and a template's), which D1 bounds at 2 MB: their
 * parameters together are bounded below that, with room for what validation adds (defaults).
 */
export const MAX_STEPS_CHARACTERS = 1_500_000;

export function checkStepsSize(steps: unknown): void {
  const size = JSON.stringify(steps).length;
  if (size > MAX_STEPS_CHARACTERS)
    throw invalidRequest(
      `steps: the steps' parameters take ${size} characters in all, over the ${MAX_STEPS_CHARACTERS} a pipeline or template may hold (an SRT of a 4-hour video takes about 400,000).`,
    );
}

export type PipelineStepRow = typeof pipelineSteps.$inferSelect;

export async function stepsOfJob(db: D1Database, jobId: string): Promise<PipelineStepRow[]> {
  return orm(db)
    .select()
    .from(pipelineSteps)
    .where(eq(pipelineSteps.jobId, jobId))
    .orderBy(asc(pipelineSteps.position))
    .all();
}

export async function stepOfJob(db: D1Database, jobId: string, position: number): Promise<PipelineStepRow | null> {
  return (
    (await orm(db)
      .select()
      .from(pipelineSteps)
      .where(and(eq(pipelineSteps.jobId, jobId), eq(pipelineSteps.position, position)))
      .get()) ?? null
  );
}

const stepWhere = (jobId: string, position: number) =>
  and(eq(pipelineSteps.jobId, jobId), eq(pipelineSteps.position, position));

export async function startStep(db: D1Database, jobId: string, position: number, now: number): Promise<void> {
  await orm(db)
    .update(pipelineSteps)
    .set({ status: "processing", startedAt: now, error: null })
    .where(stepWhere(jobId, position))
    .run();
}

export async function recordStepEngine(db: D1Database, jobId: string, position: number, engine: "wasm" | "backend") {
  await orm(db).update(pipelineSteps).set({ engine }).where(stepWhere(jobId, position)).run();
}

export async function completeStep(
  db: D1Database,
  jobId: string,
  position: number,
  output: { key: string; filename: string; contentType: string },
  now: number,
): Promise<void> {
  await orm(db)
    .update(pipelineSteps)
    .set({
      status: "completed",
      finishedAt: now,
      outputKey: output.key,
      outputFilename: output.filename,
      outputContentType: output.contentType,
    })
    .where(stepWhere(jobId, position))
    .run();
}

export async function failStep(db: D1Database, jobId: string, position: number, error: string, now: number) {
  await orm(db)
    .update(pipelineSteps)
    .set({ status: "failed", finishedAt: now, error })
    .where(and(stepWhere(jobId, position), eq(pipelineSteps.status, "processing")))
    .run();
}

const iso = (ms: number | null) => (ms === null ? undefined : new Date(ms).toISOString());

/** The steps as a job's status shows them. */
export function stepViews(rows: PipelineStepRow[], job: { status: JobStatus; error: string | null }): JobStep[] {
  return rows.map((row) => {
    const ended = job.status === "failed" && (row.status === "queued" || row.status === "processing");
    const status = !ended ? row.status : row.status === "queued" ? "skipped" : "failed";
    return {
      tool: row.tool,
      status,
      creditsUsed: row.cost,
      ...(row.engine ? { engine: row.engine } : {}),
      ...(row.startedAt !== null ? { startedAt: iso(row.startedAt) } : {}),
      ...(row.finishedAt !== null ? { finishedAt: iso(row.finishedAt) } : {}),
      ...(status === "failed" ? { error: row.error ?? job.error ?? "The step failed." } : {}),
    };
  });
}
