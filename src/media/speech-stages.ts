/**
 * Speech work runs on the container backend in stages, each one a backend job that writes one
 * object and calls back: `transcribe` (timed words as JSON), `tts` (a WAV), `voice-change`
 * (the video with the new voice) and `voice-profile` (what the CPU engines can match of a
 * cloned voice sample). A stage's backend job id is `<jobId>-<stage>`, so every stage of one
 * job is a distinct, idempotent backend job.
 */
import type { Env } from "../env";
import type { JobRow } from "../services/jobs";
import type { ToolParams } from "../tools";
import { backendConfigured, startBackendJob } from "./backend-client";
import { JobFailure, jobParams, loadInputs, type JobResult, type StoredInput } from "./execute";
import { resultName } from "./tools/command";

export type SpeechKind = "transcribe" | "tts" | "voice-change" | "voice-profile";
export type StageName = SpeechKind | "ffmpeg";

export interface SpeechStage {
  kind: SpeechKind;
  inputs: StoredInput[];
  text?: string;
  voice?: string;
  language?: string;
  cloneProfile?: unknown;
  outputKey: string;
  outputName: string;
  contentType: string;
  /** The job's result when this stage writes it directly. */
  result?: JobResult;
}

export const backendJobId = (jobId: string, stage: StageName) => (stage === "ffmpeg" ? jobId : `${jobId}-${stage}`);

export function parseBackendJobId(id: string): { jobId: string; stage: StageName } | null {
  const match = /^(job_[0-9A-Z]{26})(?:-(transcribe|tts|voice-change|voice-profile))?$/.exec(id);
  if (!match) return null;
  return { jobId: match[1], stage: (match[2] as SpeechKind | undefined) ?? "ffmpeg" };
}

/**
 * The language of a text to speak, French first: the contract's text-to-speech takes no
 * language, so it is guessed from accents and common words; English when the text reads as English.
 */
export function guessTextLanguage(text: string): "fr" | "en" {
  const sample = text.slice(0, 2000).toLowerCase();
  if (/[àâçéèêëîïôûùüÿœæ]/.test(sample)) return "fr";
  const words = sample.split(/[^a-z']+/);
  const count = (list: string[]) => words.filter((w) => list.includes(w)).length;
  const french = count(["le", "la", "les", "des", "une", "un", "est", "et", "pour", "dans", "que", "qui", "pas", "vous", "nous", "je", "avec", "sur", "ce", "bonjour"]);
  const english = count(["the", "and", "is", "are", "to", "of", "you", "we", "with", "this", "that", "for", "in", "it", "hello", "on", "be", "was"]);
  return english > french ? "en" : "fr";
}

interface ClonedVoiceRow {
  object_key: string;
  profile: string | null;
}

async function clonedVoice(env: Env, accountId: string): Promise<ClonedVoiceRow> {
  const row = await env.DB.prepare("SELECT object_key, profile FROM cloned_voices WHERE account_id = ?").bind(accountId).first<ClonedVoiceRow>();
  if (!row) throw new JobFailure("The cloned voice of this account was removed; credits refunded.");
  return row;
}

/** The profile stage for a cloned voice whose sample has not been analysed yet. */
async function profileStage(env: Env, job: JobRow, voice: ClonedVoiceRow): Promise<SpeechStage> {
  const head = await env.MEDIA.head(voice.object_key);
  if (!head) throw new JobFailure("The cloned voice sample is no longer available; credits refunded.");
  const container = voice.object_key.split(".").pop() ?? "wav";
  return {
    kind: "voice-profile",
    inputs: [{ name: `sample.${container}`, filename: "sample", sizeBytes: head.size, objectKey: voice.object_key, probe: { kind: "audio", container, mimeType: "", durationMs: 0, hasAudio: true, hasVideo: false } }],
    outputKey: `work/${job.id}/profile.json`,
    outputName: "profile.json",
    contentType: "application/json",
  };
}

/** The first (or, after a profile stage, the next) speech stage of a job. */
export async function planSpeechStage(env: Env, job: JobRow): Promise<SpeechStage> {
  switch (job.tool) {
    case "transcribe":
    case "subtitles": {
      const params = jobParams(job) as { language?: string };
      return {
        kind: "transcribe",
        inputs: await loadInputs(env, job),
        language: params.language ?? "auto",
        outputKey: `work/${job.id}/transcript.json`,
        outputName: "transcript.json",
        contentType: "application/json",
      };
    }
    case "text-to-speech": {
      const params = jobParams(job) as ToolParams["text-to-speech"];
      let cloneProfile: unknown;
      if (params.voice === "clone") {
        const voice = await clonedVoice(env, job.account_id);
        if (!voice.profile) return profileStage(env, job, voice);
        cloneProfile = JSON.parse(voice.profile);
      }
      const result = { key: `results/${job.id}/speech.wav`, filename: "speech.wav", contentType: "audio/wav" };
      return { kind: "tts", inputs: [], text: params.text, voice: params.voice, language: guessTextLanguage(params.text), cloneProfile, outputKey: result.key, outputName: "out.wav", contentType: result.contentType, result };
    }
    case "voice-change": {
      const params = jobParams(job) as ToolParams["voice-change"];
      let cloneProfile: unknown;
      if (params.voice === "clone") {
        const voice = await clonedVoice(env, job.account_id);
        if (!voice.profile) return profileStage(env, job, voice);
        cloneProfile = JSON.parse(voice.profile);
      }
      const inputs = await loadInputs(env, job);
      const filename = resultName(inputs[0].filename, "mp4", `-${params.voice}`, "video");
      const result = { key: `results/${job.id}/${filename}`, filename, contentType: "video/mp4" };
      return { kind: "voice-change", inputs, voice: params.voice, language: params.language, cloneProfile, outputKey: result.key, outputName: "out.mp4", contentType: result.contentType, result };
    }
    default:
      throw new Error(`${job.tool} has no speech stage`);
  }
}

export async function dispatchSpeechStage(env: Env, jobId: string, stage: SpeechStage, deadlineMs: number): Promise<void> {
  if (!backendConfigured(env) || !env.PUBLIC_BASE_URL) {
    throw new JobFailure("Speech processing needs the processing backend, which is not configured on this server; credits refunded.");
  }
  await startBackendJob(env, {
    jobId: backendJobId(jobId, stage.kind),
    kind: stage.kind,
    inputs: stage.inputs,
    output: { name: stage.outputName, key: stage.outputKey, contentType: stage.contentType },
    deadlineMs,
    fields: {
      ...(stage.text !== undefined ? { text: stage.text } : {}),
      ...(stage.voice !== undefined ? { voice: stage.voice } : {}),
      ...(stage.language !== undefined ? { language: stage.language } : {}),
      ...(stage.cloneProfile !== undefined ? { cloneProfile: stage.cloneProfile } : {}),
    },
  });
}
