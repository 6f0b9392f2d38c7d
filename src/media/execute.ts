/**
 * Runs one claimed job to its result object. Each tool reads its inputs from R2, runs its
 * argument builder on an engine and writes the result under `results/<job>/`. Errors thrown
 * here carry a message meant for the caller (it becomes the failed job's `error`).
 */
import type { Env } from "../env";
import type { JobRow } from "../services/jobs";
import type { ToolParams } from "../tools/schemas";
import { runFfmpegWasm } from "./ffmpeg-wasm";
import { extractAudioArgs, extractAudioContentType, extractAudioOutputName } from "./tools/extract-audio";

export class JobFailure extends Error {}

/** Largest input the in-Worker engine loads (input + output + wasm heap must fit 128 MB). */
export const WASM_MAX_INPUT_BYTES = 40 * 1024 * 1024;

export interface JobResult {
  key: string;
  filename: string;
  contentType: string;
}

interface UploadRow {
  id: string;
  object_key: string;
  filename: string;
  size_bytes: number;
  probe: string;
}

async function loadInputs(env: Env, job: JobRow): Promise<UploadRow[]> {
  const ids = JSON.parse(job.input_upload_ids) as string[];
  const rows: UploadRow[] = [];
  for (const id of ids) {
    const row = await env.DB.prepare("SELECT id, object_key, filename, size_bytes, probe FROM uploads WHERE id = ?").bind(id).first<UploadRow>();
    if (!row) throw new JobFailure("An input upload is no longer available.");
    rows.push(row);
  }
  return rows;
}

async function readObject(env: Env, key: string): Promise<Uint8Array> {
  const object = await env.MEDIA.get(key);
  if (!object) throw new JobFailure("An input file is no longer available.");
  return new Uint8Array(await object.arrayBuffer());
}

async function extractAudio(env: Env, job: JobRow): Promise<JobResult> {
  const params = JSON.parse(job.params) as ToolParams["extract-audio"];
  const [input] = await loadInputs(env, job);
  if (input.size_bytes > WASM_MAX_INPUT_BYTES) {
    throw new JobFailure(`The input is larger than ${WASM_MAX_INPUT_BYTES / 1024 / 1024} MiB, the limit of the in-Worker engine.`);
  }
  const probe = JSON.parse(input.probe) as { audioCodec?: string; container: string };
  const inputName = `input.${probe.container}`;
  const filename = extractAudioOutputName(input.filename, params.format);
  const outputName = `output.${params.format}`;
  const run = await runFfmpegWasm({
    args: extractAudioArgs({ input: inputName, output: outputName, format: params.format, sourceAudioCodec: probe.audioCodec }),
    inputs: { [inputName]: await readObject(env, input.object_key) },
    outputs: [outputName],
  });
  const key = `results/${job.id}/${filename}`;
  const contentType = extractAudioContentType[params.format];
  await env.MEDIA.put(key, run.outputs[outputName], { httpMetadata: { contentType } });
  return { key, filename, contentType };
}

export async function executeJob(env: Env, job: JobRow): Promise<JobResult> {
  switch (job.tool) {
    case "extract-audio":
      return extractAudio(env, job);
    default:
      throw new JobFailure(`The ${job.tool} tool is not available on this server yet; credits refunded.`);
  }
}
