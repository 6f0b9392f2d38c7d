/**
 * The stages of a job, as the job's MediaRunner Durable Object drives them. A tool's
 * definition (src/tools/) says what to do; this module does it: load the inputs, build the
 * ffmpeg command, route it, run it on ffmpeg.wasm or hand it to the backend with signed URLs,
 * plan speech stages (with a voice-profile stage first for an unanalysed cloned voice), and
 * turn a transcript into the result. Errors meant for the caller are JobFailure.
 */
import { eq, inArray } from "drizzle-orm";
import { orm, type Job } from "../db/client";
import { clonedVoices, uploads } from "../db/schema";
import type { Env } from "../env";
import { JobFailure } from "../errors";
import { backendConfigured, ffmpegJobFields, startBackendJob } from "../backend-client/client";
import { backendJobId, workId, type SpeechKind } from "../backend-client/stage-ids";
import { loadFont } from "./font-data";
import { runCommandOnWasm } from "./wasm-command";
import { chooseEngine, defaultRoutingConfig, type RoutingConfig, type RoutingDecision } from "./routing";
import { FONTS_DIR, type MediaCommand, type MediaInput } from "../media/commands/command";
import { boundInputs, withProgress } from "@media-credits/wire/billed-duration";
import { withDecodeLimits } from "@media-credits/wire/decode-limits";
import { testMarkFinish, withTestMark } from "../media/commands/test-mark";
import type { FinishPass } from "@media-credits/wire/protocol";
import type { AudioReport } from "@media-credits/wire/audio-report";
import type { Transcript } from "../media/transcript";
import type { ProbeResult } from "../media/types";
import { toolDefinition } from "../tools";
import type { ResultFile, SpeechPlan } from "../tools/definition";

export interface JobResult extends ResultFile {
  key: string;
  /** What the result's report measured (clean-audio): loudness before and after, pauses cut. */
  report?: AudioReport;
}

/**
 * What the stages work on: a job, or one step of a pipeline job, which carries its tool and
 * parameters in place of the job's and reads the inputs given here (the previous step's output).
 */
export type WorkUnit = Job & { step?: { position: number; last: boolean; inputs: StoredInput[] } };

/** The unit's id on the backend and in its work objects. */
export const workIdOf = (unit: WorkUnit) => workId(unit.id, unit.step?.position);

/** Where a unit's result goes: the job's result, or a step's output that only the next step reads. */
const resultKeyOf = (unit: WorkUnit, filename: string) =>
  unit.step && !unit.step.last
    ? `work/${unit.id}/s${unit.step.position}/${filename}`
    : `results/${unit.id}/${filename}`;

/**
 * A test key's result is marked (src/media/commands/test-mark.ts); a pipeline marks its last
 * step's only, so no step works on marks (transcribing beeps) and marks do not pile up.
 */
const marksTest = (unit: WorkUnit) => unit.mode === "test" && (!unit.step || unit.step.last);

/** An intermediate object of the unit (a transcript, a voice profile). */
const workKeyOf = (unit: WorkUnit, name: string) =>
  unit.step ? `work/${unit.id}/s${unit.step.position}/${name}` : `work/${unit.id}/${name}`;

export interface StoredInput extends MediaInput {
  objectKey: string;
}

export interface PreparedJob {
  command: MediaCommand;
  inputs: StoredInput[];
  resultKey: string;
}

/** A speech stage ready to send: what the backend reads and writes. */
export interface SpeechStage {
  kind: SpeechKind;
  inputs: StoredInput[];
  fields: {
    text?: string;
    voice?: string;
    language?: string;
    cloneProfile?: unknown;
    finish?: FinishPass;
    billedMs?: number;
  };
  outputKey: string;
  outputName: string;
  contentType: string;
  /** The job's result when this stage writes it directly. */
  result?: JobResult;
}

/** The unit's tool; a pipeline job itself has none (it runs as its steps' units). */
function definitionOf(unit: Job) {
  if (unit.tool === "pipeline") throw new Error("A pipeline job runs step by step, as its steps' units.");
  return toolDefinition(unit.tool);
}

/** The job's parameters, validated again at this trust boundary (a JSON column). */
export function jobParams(job: Job): unknown {
  return definitionOf(job).params.parse(JSON.parse(job.params));
}

/** The unit's inputs, in order, placed as `in<i>.<container>`: a step's as given, a job's uploads. */
export async function loadJobInputs(db: D1Database, job: WorkUnit): Promise<StoredInput[]> {
  if (job.step) return job.step.inputs;
  return loadUploadInputs(db, JSON.parse(job.inputUploadIds) as string[]);
}

/** Uploads as inputs, in the order given, placed as `in<i>.<container>`. */
export async function loadUploadInputs(db: D1Database, uploadIds: string[]): Promise<StoredInput[]> {
  const ids = uploadIds;
  if (ids.length === 0) return [];
  const rows = await orm(db).select().from(uploads).where(inArray(uploads.id, ids)).all();
  return ids.map((id, index) => {
    const row = rows.find((r) => r.id === id);
    if (!row) throw new JobFailure("An input upload is no longer available.");
    const probe = JSON.parse(row.probe) as ProbeResult;
    return {
      name: `in${index}.${probe.container}`,
      filename: row.filename,
      sizeBytes: row.sizeBytes,
      probe,
      objectKey: row.objectKey,
    };
  });
}

/** The speech stage the job starts with, or undefined for a job that is one ffmpeg command. */
export function speechPlanOf(job: Job, inputs: StoredInput[]): SpeechPlan | undefined {
  return definitionOf(job).speech?.(jobParams(job), inputs[0]?.filename);
}

// --- Media stage ------------------------------------------------------------------------------

export async function prepareMediaStage(
  env: Env,
  job: WorkUnit,
  inputs: StoredInput[],
  transcript?: Transcript,
): Promise<PreparedJob> {
  const definition = definitionOf(job);
  if (!definition.build) throw new JobFailure(`The ${job.tool} tool has no media stage; credits refunded.`);
  const testMode = marksTest(job);
  const built = await definition.build(jobParams(job), inputs, { transcript, testMode });
  const command = guarded(testMode ? withTestMark(built) : built, inputs);
  return { command, inputs, resultKey: resultKeyOf(job, command.resultFilename) };
}

/**
 * The command as both engines run it, on every argv either may run: each media input read for at
 * most its billed duration (plus a tolerance) and the run's progress reported
 * (packages/wire/src/billed-duration.ts), so a header that understates a file's length buys no more
 * processing than it paid for; and every upload decoded within the pixel and allocation caps
 * (packages/wire/src/decode-limits.ts), so a header that understates a frame's size cannot make a decoder
 * allocate an 8K picture per frame. A run past either fails the job, refunded.
 */
function guarded(command: MediaCommand, inputs: MediaInput[]): MediaCommand {
  const billed = Object.fromEntries(
    inputs
      .filter((input) => input.probe.kind !== "image" && input.probe.durationMs > 0)
      .map((input) => [input.name, input.probe.durationMs]),
  );
  const kinds = Object.fromEntries(inputs.map((input) => [input.name, input.probe.kind]));
  const bound = (args: string[]) => withProgress(withDecodeLimits(boundInputs(args, billed), kinds));
  return {
    ...command,
    args: bound(command.args),
    backend: command.backend && {
      ...command.backend,
      args: bound(command.backend.args),
      measurePass: command.backend.measurePass && {
        ...command.backend.measurePass,
        args: bound(command.backend.measurePass.args),
      },
    },
    wasmLoudness: command.wasmLoudness && {
      ...command.wasmLoudness,
      measureArgs: bound(command.wasmLoudness.measureArgs),
      args: bound(command.wasmLoudness.args),
    },
    audioReport: command.audioReport && {
      ...command.audioReport,
      sourceMeterArgs: withDecodeLimits(boundInputs(command.audioReport.sourceMeterArgs, billed), kinds),
    },
    denoise: command.denoise && {
      ...command.denoise,
      args: withDecodeLimits(boundInputs(command.denoise.args, billed), kinds),
    },
    billedInputsMs: Object.values(billed),
  };
}

/** The routing limits from the Worker's settings (WASM_MEMORY_BUDGET_BYTES, WASM_MAX_CPU_SECONDS, MEDIA_ENGINE). */
export function routingConfig(env: Env): RoutingConfig {
  const number = (value: string | undefined, fallback: number) =>
    value !== undefined && Number.isFinite(Number(value)) ? Number(value) : fallback;
  return {
    memoryBudgetBytes: number(env.WASM_MEMORY_BUDGET_BYTES, defaultRoutingConfig.memoryBudgetBytes),
    maxCpuSeconds: number(env.WASM_MAX_CPU_SECONDS, defaultRoutingConfig.maxCpuSeconds),
    forced: env.MEDIA_ENGINE === "wasm" || env.MEDIA_ENGINE === "backend" ? env.MEDIA_ENGINE : undefined,
  };
}

export function routeMediaStage(env: Env, prepared: PreparedJob): RoutingDecision {
  return chooseEngine(routingConfig(env), prepared.command, prepared.inputs, backendConfigured(env));
}

export const mediaResultOf = (prepared: PreparedJob): JobResult => ({
  key: prepared.resultKey,
  filename: prepared.command.resultFilename,
  contentType: prepared.command.contentType,
});

async function readObject(env: Env, key: string): Promise<Uint8Array> {
  const object = await env.MEDIA.get(key);
  if (!object) throw new JobFailure("An input file is no longer available.");
  return new Uint8Array(await object.arrayBuffer());
}

/** Runs the command on ffmpeg.wasm in this isolate and stores the result. */
export async function runMediaOnWasm(env: Env, prepared: PreparedJob): Promise<JobResult> {
  const { command } = prepared;
  const files: Record<string, Uint8Array> = { ...command.files };
  for (const input of prepared.inputs) files[input.name] = await readObject(env, input.objectKey);
  for (const font of command.fonts) files[`${FONTS_DIR}/${font}`] = await loadFont(env.FONTS, font);
  const run = await runCommandOnWasm(command, files);
  await env.MEDIA.put(prepared.resultKey, run.outputs[command.outputName], {
    httpMetadata: { contentType: command.contentType },
  });
  return { ...mediaResultOf(prepared), ...(run.report ? { report: run.report } : {}) };
}

function requireBackend(env: Env, why: string) {
  if (!backendConfigured(env) || !env.PUBLIC_BASE_URL)
    throw new JobFailure(`${why}, which is not configured on this server; credits refunded.`);
}

/** Hands the command to the container backend; the result arrives later by callback. `jobId`: the unit's workIdOf. */
export async function dispatchMediaToBackend(
  env: Env,
  jobId: string,
  prepared: PreparedJob,
  deadlineMs: number,
  reason = "too large for the in-Worker engine",
): Promise<void> {
  requireBackend(env, `This job needs the processing backend (${reason})`);
  const { command } = prepared;
  await startBackendJob(env, {
    jobId,
    kind: "ffmpeg",
    inputs: prepared.inputs,
    output: { name: command.outputName, key: prepared.resultKey, contentType: command.contentType },
    deadlineMs,
    fields: ffmpegJobFields(command, prepared.inputs),
  });
}

// --- Speech stages ----------------------------------------------------------------------------

async function clonedVoiceOf(db: D1Database, accountId: string) {
  const voice = await orm(db).select().from(clonedVoices).where(eq(clonedVoices.accountId, accountId)).get();
  if (!voice) throw new JobFailure("The cloned voice of this account was removed; credits refunded.");
  return voice;
}

/** The stage that analyses the account's cloned voice sample before it is first used. */
async function voiceProfileStage(env: Env, job: WorkUnit, objectKey: string): Promise<SpeechStage> {
  const head = await env.MEDIA.head(objectKey);
  if (!head) throw new JobFailure("The cloned voice sample is no longer available; credits refunded.");
  const container = objectKey.split(".").pop() ?? "wav";
  const probe: ProbeResult = { kind: "audio", container, mimeType: "", durationMs: 0, hasAudio: true, hasVideo: false };
  return {
    kind: "voice-profile",
    inputs: [{ name: `sample.${container}`, filename: "sample", sizeBytes: head.size, objectKey, probe }],
    fields: {},
    outputKey: workKeyOf(job, "profile.json"),
    outputName: "profile.json",
    contentType: "application/json",
  };
}

/** The job's speech stage (or, for an unanalysed cloned voice, the profile stage before it). */
export async function planSpeechStage(
  env: Env,
  job: WorkUnit,
  inputs: StoredInput[],
  plan: SpeechPlan,
): Promise<SpeechStage> {
  // What the speech engines may read of the input: its billed duration (packages/wire/src/billed-duration.ts).
  const billedMs = inputs[0]?.probe.durationMs || undefined;
  if (plan.kind === "transcribe") {
    return {
      kind: "transcribe",
      inputs,
      fields: { language: plan.language, billedMs },
      outputKey: workKeyOf(job, "transcript.json"),
      outputName: "transcript.json",
      contentType: "application/json",
    };
  }
  let cloneProfile: unknown;
  if (plan.voice === "clone") {
    const voice = await clonedVoiceOf(env.DB, job.accountId);
    if (!voice.profile) return voiceProfileStage(env, job, voice.objectKey);
    cloneProfile = JSON.parse(voice.profile);
  }
  const result: JobResult = { ...plan.result, key: resultKeyOf(job, plan.result.filename) };
  const extension = plan.result.filename.split(".").pop();
  const outputName = `out.${extension}`;
  // A test key's result is marked like every other tool's, by an ffmpeg pass on the backend.
  const finish = marksTest(job) ? testMarkFinish(`speech.${extension}`, outputName, result.contentType) : undefined;
  const fields = {
    voice: plan.voice,
    language: plan.language,
    cloneProfile,
    finish,
    ...(plan.kind === "tts" ? { text: plan.text } : { billedMs }),
  };
  return {
    kind: plan.kind,
    inputs,
    fields,
    outputKey: result.key,
    outputName,
    contentType: result.contentType,
    result,
  };
}

export async function dispatchSpeechStage(
  env: Env,
  jobId: string,
  stage: SpeechStage,
  deadlineMs: number,
): Promise<void> {
  requireBackend(env, "Speech processing needs the processing backend");
  const fields = Object.fromEntries(Object.entries(stage.fields).filter(([, value]) => value !== undefined));
  await startBackendJob(env, {
    jobId: backendJobId(jobId, stage.kind),
    kind: stage.kind,
    inputs: stage.inputs,
    output: { name: stage.outputName, key: stage.outputKey, contentType: stage.contentType },
    deadlineMs,
    fields,
  });
}

/** Records what the profile stage learnt of the account's cloned voice. */
export async function saveVoiceProfile(db: D1Database, accountId: string, profile: string): Promise<void> {
  await orm(db)
    .update(clonedVoices)
    .set({ profile, status: "ready" })
    .where(eq(clonedVoices.accountId, accountId))
    .run();
}

/** Whether the tool's result is its transcript (transcribe), rather than media built from it (subtitles). */
export const resultIsTranscript = (job: Job) => definitionOf(job).fromTranscript !== undefined;

/** Writes the result of a tool whose result is the transcript itself (txt or SRT). */
export async function storeTranscriptResult(
  env: Env,
  job: WorkUnit,
  inputs: StoredInput[],
  transcript: Transcript,
): Promise<JobResult> {
  const definition = definitionOf(job);
  if (!definition.fromTranscript)
    throw new JobFailure(`The ${job.tool} tool does not produce a transcript; credits refunded.`);
  const file = definition.fromTranscript(jobParams(job), transcript, inputs[0]?.filename, {
    testMode: marksTest(job),
  });
  const key = resultKeyOf(job, file.filename);
  await env.MEDIA.put(key, file.content, { httpMetadata: { contentType: file.contentType } });
  return { key, filename: file.filename, contentType: file.contentType };
}
