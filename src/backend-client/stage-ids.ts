/**
 * Names of a job's stages and their ids on the backend. Kept apart from job-stages.ts so the
 * API Worker (which routes the backend's callbacks) does not bundle ffmpeg.wasm: only the
 * media Worker imports the stages themselves.
 */
export type SpeechKind = "transcribe" | "tts" | "voice-change" | "voice-profile";
export type StageName = SpeechKind | "ffmpeg";

/** A stage's backend job id: `<jobId>` for ffmpeg, `<jobId>-<stage>` otherwise (distinct, idempotent). */
export const backendJobId = (jobId: string, stage: StageName) => (stage === "ffmpeg" ? jobId : `${jobId}-${stage}`);

export function parseBackendJobId(id: string): { jobId: string; stage: StageName } | null {
  const match = /^(job_[0-9A-Z]{26})(?:-(transcribe|tts|voice-change|voice-profile))?$/.exec(id);
  if (!match) return null;
  return { jobId: match[1], stage: (match[2] as SpeechKind | undefined) ?? "ffmpeg" };
}
