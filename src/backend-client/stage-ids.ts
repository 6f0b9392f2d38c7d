/**
 * Names of a job's stages and their ids on the backend. Kept apart from job-stages.ts so the
 * API Worker (which routes the backend's callbacks) does not bundle ffmpeg.wasm: only the
 * media Worker imports the stages themselves.
 */
export type SpeechKind = "transcribe" | "tts" | "voice-change" | "voice-profile";
export type StageName = SpeechKind | "ffmpeg";

/** What a job's stages work on: the job, or one step of a pipeline job (`<jobId>-s<position>`). */
export const workId = (jobId: string, step?: number) => (step === undefined ? jobId : `${jobId}-s${step}`);

/** A stage's backend job id: `<work>` for ffmpeg, `<work>-<stage>` otherwise (distinct, idempotent). */
export const backendJobId = (work: string, stage: StageName) => (stage === "ffmpeg" ? work : `${work}-${stage}`);

export function parseBackendJobId(id: string): { jobId: string; step?: number; stage: StageName } | null {
  const match = /^(job_[0-9A-Z]{26})(?:-s(\d{1,2}))?(?:-(transcribe|tts|voice-change|voice-profile))?$/.exec(id);
  if (!match) return null;
  return {
    jobId: match[1]!,
    ...(match[2] === undefined ? {} : { step: Number(match[2]) }),
    stage: (match[3] as SpeechKind | undefined) ?? "ffmpeg",
  };
}
