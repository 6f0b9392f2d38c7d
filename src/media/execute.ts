/**
 * Runs one claimed job. The tool's builder turns the job's parameters and probed inputs into
 * one MediaCommand; the router picks the engine; the in-Worker engine runs it on ffmpeg.wasm
 * and stores the result, the backend engine receives signed URLs and reports back through a
 * signed callback. Errors thrown here carry a message meant for the caller (the job's `error`).
 */
import type { Env } from "../env";
import type { JobRow } from "../services/jobs";
import { toolDefinition } from "../tools";
import { JobFailure } from "../errors";
import { backendConfigured, startBackendJob } from "./backend-client";
import { runFfmpegWasm } from "./ffmpeg-wasm";
import { loadFont } from "./font-data";
import { chooseEngine, type RoutingDecision } from "./routing";
import type { ProbeResult } from "./types";
import { FONTS_DIR, type MediaCommand, type MediaInput } from "./tools/command";
import type { Transcript } from "./transcript";

export { JobFailure } from "../errors";

export interface JobResult {
  key: string;
  filename: string;
  contentType: string;
}

export interface StoredInput extends MediaInput {
  objectKey: string;
}

export interface PreparedJob {
  command: MediaCommand;
  inputs: StoredInput[];
  resultKey: string;
}

interface UploadRow {
  id: string;
  object_key: string;
  filename: string;
  size_bytes: number;
  probe: string;
}

export async function loadInputs(env: Env, job: JobRow): Promise<StoredInput[]> {
  const ids = JSON.parse(job.input_upload_ids) as string[];
  const inputs: StoredInput[] = [];
  for (const [index, id] of ids.entries()) {
    const row = await env.DB.prepare("SELECT id, object_key, filename, size_bytes, probe FROM uploads WHERE id = ?").bind(id).first<UploadRow>();
    if (!row) throw new JobFailure("An input upload is no longer available.");
    const probe = JSON.parse(row.probe) as ProbeResult;
    inputs.push({ name: `in${index}.${probe.container}`, filename: row.filename, sizeBytes: row.size_bytes, probe, objectKey: row.object_key });
  }
  return inputs;
}

/** The job's parameters, validated again at this trust boundary (a JSON column). */
export function jobParams(job: JobRow): unknown {
  return toolDefinition(job.tool).params.parse(JSON.parse(job.params));
}

/** Tools whose first stage is speech work on the backend (see speech-stages.ts). */
export function startsWithSpeech(job: JobRow): boolean {
  return toolDefinition(job.tool).startsWithSpeech(jobParams(job));
}

async function buildCommand(job: JobRow, inputs: MediaInput[], transcript?: Transcript): Promise<MediaCommand> {
  const definition = toolDefinition(job.tool);
  if (!definition.build) throw new JobFailure(`The ${job.tool} tool has no media stage; credits refunded.`);
  return definition.build(jobParams(job), inputs, { transcript });
}

export async function prepareJob(env: Env, job: JobRow, transcript?: Transcript): Promise<PreparedJob> {
  const inputs = await loadInputs(env, job);
  const command = await buildCommand(job, inputs, transcript);
  return { command, inputs, resultKey: `results/${job.id}/${command.resultFilename}` };
}

export function routeJob(env: Env, prepared: PreparedJob): RoutingDecision {
  return chooseEngine(env, prepared.command, prepared.inputs, backendConfigured(env));
}

async function readObject(env: Env, key: string): Promise<Uint8Array> {
  const object = await env.MEDIA.get(key);
  if (!object) throw new JobFailure("An input file is no longer available.");
  return new Uint8Array(await object.arrayBuffer());
}

/** Runs the command on ffmpeg.wasm in this isolate and stores the result. */
export async function runOnWasm(env: Env, prepared: PreparedJob): Promise<JobResult> {
  const { command } = prepared;
  const files: Record<string, Uint8Array> = { ...command.files };
  for (const input of prepared.inputs) files[input.name] = await readObject(env, input.objectKey);
  for (const font of command.fonts) files[`${FONTS_DIR}/${font}`] = await loadFont(font);
  const run = await runFfmpegWasm({ args: command.args, inputs: files, outputs: [command.outputName] });
  await env.MEDIA.put(prepared.resultKey, run.outputs[command.outputName], { httpMetadata: { contentType: command.contentType } });
  return { key: prepared.resultKey, filename: command.resultFilename, contentType: command.contentType };
}

const base64 = (bytes: Uint8Array) => {
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
};

/** Hands the command to the container backend; the result arrives later by callback. */
export async function dispatchToBackend(env: Env, jobId: string, prepared: PreparedJob, deadlineMs: number, reason = "too large for the in-Worker engine"): Promise<void> {
  if (!backendConfigured(env) || !env.PUBLIC_BASE_URL) {
    throw new JobFailure(`This job needs the processing backend (${reason}), which is not configured on this server; credits refunded.`);
  }
  const { command } = prepared;
  await startBackendJob(env, {
    jobId,
    kind: "ffmpeg",
    inputs: prepared.inputs,
    output: { name: command.outputName, key: prepared.resultKey, contentType: command.contentType },
    deadlineMs,
    fields: {
      args: command.args,
      files: Object.fromEntries(Object.entries(command.files).map(([name, bytes]) => [name, base64(bytes)])),
      fonts: command.fonts,
    },
  });
}
