/**
 * A pipeline step as the runner works on it: the job with the step's tool and parameters, reading
 * its uploads and the previous step's output. That output is described by what the step was priced
 * on (its kind, streams, size, rate and duration, so the run is bounded by what was paid:
 * packages/wire/src/billed-duration.ts) and its container; its codecs are left unknown, so a next
 * step re-encodes rather than copies. A probe here would bring the probing libraries into the
 * media Worker, whose script must stay under 512 KiB beside ffmpeg.wasm (test/e2e/deploy-size.test.ts).
 */
import type { Env } from "../env";
import { JobFailure } from "../errors";
import type { ProbeResult } from "../media/types";
import type { ProducedMedia } from "../tools/definition";
import { isStepRef, type PipelineStepRow } from "../services/media-jobs/pipeline-steps";
import type { JobRow } from "../services/media-jobs/reads";
import { loadUploadInputs, type StoredInput, type WorkUnit } from "./job-stages";

async function previousOutput(env: Env, row: PipelineStepRow, shape: ProducedMedia | null): Promise<StoredInput> {
  if (!row.outputKey || !row.outputFilename || !shape || shape.kind === "text")
    throw new JobFailure(`Step ${row.position + 1} (${row.tool}) left no result for the next step; credits refunded.`);
  const head = await env.MEDIA.head(row.outputKey);
  if (!head) throw new JobFailure("An intermediate result went missing; credits refunded.");
  const container = row.outputFilename.split(".").pop()?.toLowerCase() ?? shape.container;
  const probe: ProbeResult = {
    kind: shape.kind,
    container,
    mimeType: row.outputContentType ?? "",
    durationMs: shape.durationMs,
    hasAudio: shape.hasAudio,
    hasVideo: shape.hasVideo,
    width: shape.width,
    height: shape.height,
    frameRate: shape.frameRate,
    audioChannels: shape.audioChannels,
  };
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
