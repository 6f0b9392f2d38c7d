/**
 * A pipeline step as the runner works on it: the job with the step's tool and parameters, reading
 * its uploads and the previous step's output. That output is probed for what it really is (codecs,
 * frame size and rate, which the next command needs); its duration is the one the step was priced
 * on when that is shorter, so the run is bounded by what was paid (packages/wire/src/billed-duration.ts).
 */
import type { Env } from "../env";
import { JobFailure } from "../errors";
import { probeR2Object } from "../media/probe";
import type { ProbeResult } from "../media/types";
import type { ProducedMedia } from "../tools/definition";
import { isStepRef, type PipelineStepRow } from "../services/media-jobs/pipeline-steps";
import type { JobRow } from "../services/media-jobs/reads";
import { loadUploadInputs, type StoredInput, type WorkUnit } from "./job-stages";

async function previousOutput(env: Env, row: PipelineStepRow, shape: ProducedMedia | null): Promise<StoredInput> {
  if (!row.outputKey || !row.outputFilename)
    throw new JobFailure(`Step ${row.position + 1} (${row.tool}) left no result for the next step; credits refunded.`);
  const head = await env.MEDIA.head(row.outputKey);
  if (!head) throw new JobFailure("An intermediate result went missing; credits refunded.");
  const priced = shape && shape.kind !== "text" ? shape : undefined;
  let probe: ProbeResult;
  try {
    probe = await probeR2Object(env.MEDIA, row.outputKey, head.size);
  } catch (error) {
    if (!priced) throw error;
    console.warn("probing a step's output failed; using its priced shape", row.jobId, row.position, String(error));
    probe = { ...priced, mimeType: row.outputContentType ?? "" };
  }
  if (priced && (probe.durationMs <= 0 || probe.durationMs > priced.durationMs))
    probe = { ...probe, durationMs: priced.durationMs };
  return { name: "", filename: row.outputFilename, sizeBytes: head.size, probe, objectKey: row.outputKey };
}

/** The unit of step `position`, its inputs in the tool's order (named in0, in1, ... as a job's). */
export async function stepUnit(env: Env, job: JobRow, rows: PipelineStepRow[], position: number): Promise<WorkUnit> {
  const row = rows[position];
  if (!row) throw new JobFailure("The pipeline's steps are missing; credits refunded.");
  const ids = JSON.parse(row.inputs) as string[];
  const uploads = await loadUploadInputs(
    env.DB,
    ids.filter((id) => !isStepRef(id)),
  );
  const shape = row.inputShape === null ? null : (JSON.parse(row.inputShape) as ProducedMedia);
  let nextUpload = 0;
  const inputs: StoredInput[] = [];
  for (const [index, id] of ids.entries()) {
    const input = isStepRef(id)
      ? await previousOutput(env, rows[Number(id.slice("step:".length))]!, shape)
      : uploads[nextUpload++]!;
    inputs.push({ ...input, name: `in${index}.${input.probe.container}` });
  }
  return {
    ...job,
    tool: row.tool,
    params: row.params,
    inputUploadIds: JSON.stringify(ids.filter((id) => !isStepRef(id))),
    step: { position, last: position === rows.length - 1, inputs },
  };
}
