/**
 * Client of the container backend: it accepts a job at once (202) and reports the outcome
 * later through a signed callback (src/routes/internal.ts). The request, the callback and their
 * rules are packages/wire/src/protocol.ts, shared with the backend; backend/README.md describes them.
 * Transient failures (network, 5xx) are retried; a 4xx means the request itself is wrong.
 */
import type { Env } from "../env";
import { parseJobRequest, type JobKind, type JobRequest, type JobRequestInput } from "@media-credits/wire/protocol";
import { progressiveInputs, type MediaCommand, type MediaInput } from "../media/commands/command";
import { mediaUrl } from "./transfer-urls";

export class BackendUnavailableError extends Error {}

/** A job request as sent to POST /v1/jobs. */
export type BackendJob = JobRequestInput;

type KindRequest<K extends JobKind> = Extract<JobRequestInput, { kind: K }>;

/**
 * The kind-specific fields of a request: args, files, fonts and loudnorm (ffmpeg); text, voice, language
 * and cloneProfile (speech kinds). Which ones a kind needs is checked with the protocol's schema
 * when the job is sent.
 */
export type BackendJobFields = Partial<
  Pick<
    KindRequest<"ffmpeg">,
    | "args"
    | "files"
    | "fonts"
    | "loudnorm"
    | "streamedInputs"
    | "progressiveInputs"
    | "measurePass"
    | "billedInputsMs"
    | "finish"
    | "audioReport"
    | "denoisePass"
  > &
    Pick<KindRequest<"tts">, "text" | "voice" | "language" | "cloneProfile" | "finish"> &
    Pick<KindRequest<"voice-change">, "billedMs">
>;

const base64 = (bytes: Uint8Array) => {
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
};

/**
 * The fields of an ffmpeg request for a media command: its args (the backend's own variant when it
 * has one, with its two-pass loudnorm target), its generated files in base64, its fonts, the
 * inputs ffmpeg reads over HTTP and those it reads while they download.
 */
export function ffmpegJobFields(
  command: Pick<
    MediaCommand,
    | "args"
    | "files"
    | "fonts"
    | "backend"
    | "backendStreaming"
    | "billedInputsMs"
    | "finish"
    | "audioReport"
    | "denoise"
  >,
  inputs: MediaInput[],
): BackendJobFields {
  const progressive = progressiveInputs(command, inputs);
  return {
    args: command.backend?.args ?? command.args,
    files: Object.fromEntries(Object.entries(command.files).map(([name, bytes]) => [name, base64(bytes)])),
    fonts: command.fonts,
    ...(command.backend ? { loudnorm: command.backend.loudnorm } : {}),
    ...(command.backend?.measurePass ? { measurePass: command.backend.measurePass } : {}),
    ...(command.backendStreaming ? { streamedInputs: command.backendStreaming.inputs } : {}),
    ...(Object.keys(progressive).length > 0 ? { progressiveInputs: progressive } : {}),
    ...(command.billedInputsMs ? { billedInputsMs: command.billedInputsMs } : {}),
    ...(command.finish ? { finish: command.finish } : {}),
    ...(command.audioReport ? { audioReport: command.audioReport } : {}),
    ...(command.denoise ? { denoisePass: command.denoise } : {}),
  };
}

/** A stop is best effort: a backend that does not answer within this is left to its own deadline. */
const CANCEL_TIMEOUT_MS = 5_000;

/** Asks the backend to stop a job the caller cancelled; best effort (the job is already refunded). */
export async function cancelBackendJob(env: Env, backendJobId: string): Promise<void> {
  if (!backendConfigured(env)) return;
  try {
    const response = await fetch(`${env.BACKEND_URL!.replace(/\/$/, "")}/v1/jobs/${encodeURIComponent(backendJobId)}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${env.BACKEND_SECRET}` },
      signal: AbortSignal.timeout(CANCEL_TIMEOUT_MS),
    });
    await response.body?.cancel();
  } catch (error) {
    console.warn("backend cancel failed", backendJobId, error instanceof Error ? error.message : String(error));
  }
}

/** What the backend says of a job it was sent: still working on it, finished, never heard of it, or nothing at all. */
export type BackendJobState =
  | { state: "working" }
  | { state: "finished"; status: "completed" | "failed"; error?: string }
  | { state: "unknown" }
  | { state: "unreachable"; why: string };

/** A heartbeat read of the backend's job table (GET /v1/jobs/:id), bounded by a short timeout. */
export async function backendJobState(env: Env, backendJobId: string, timeoutMs = 5_000): Promise<BackendJobState> {
  try {
    const response = await fetch(`${env.BACKEND_URL!.replace(/\/$/, "")}/v1/jobs/${encodeURIComponent(backendJobId)}`, {
      headers: { authorization: `Bearer ${env.BACKEND_SECRET}` },
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (response.status === 404) {
      await response.body?.cancel();
      return { state: "unknown" };
    }
    if (!response.ok) {
      await response.body?.cancel();
      return { state: "unreachable", why: `HTTP ${response.status}` };
    }
    const body = (await response.json()) as { status?: unknown; error?: unknown };
    if (body.status === "completed" || body.status === "failed") {
      return {
        state: "finished",
        status: body.status,
        ...(typeof body.error === "string" ? { error: body.error.slice(0, 4000) } : {}),
      };
    }
    return { state: "working" };
  } catch (error) {
    return { state: "unreachable", why: error instanceof Error ? error.message : String(error) };
  }
}

export function backendConfigured(env: Env): boolean {
  return Boolean(env.BACKEND_URL && env.BACKEND_SECRET);
}

export async function submitToBackend(env: Env, job: BackendJob, attempts = 3): Promise<void> {
  let lastError = "";
  for (let attempt = 0; attempt < attempts; attempt++) {
    if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 500 * 2 ** attempt));
    try {
      const response = await fetch(`${env.BACKEND_URL!.replace(/\/$/, "")}/v1/jobs`, {
        method: "POST",
        headers: { authorization: `Bearer ${env.BACKEND_SECRET}`, "content-type": "application/json" },
        body: JSON.stringify(job),
      });
      if (response.status === 202 || response.ok) return;
      lastError = `HTTP ${response.status}: ${(await response.text()).slice(0, 300)}`;
      if (response.status < 500)
        throw new BackendUnavailableError(`the processing backend refused the job (${lastError})`);
    } catch (error) {
      if (error instanceof BackendUnavailableError) throw error;
      lastError = error instanceof Error ? error.message : String(error);
    }
  }
  throw new BackendUnavailableError(`the processing backend is unreachable (${lastError})`);
}

/** What a backend job reads and writes, as R2 keys; URLs are signed when it is sent. */
export interface BackendTransfer {
  /** The backend's job id (a job's stages have ids of their own). */
  jobId: string;
  kind: JobKind;
  inputs: { name: string; objectKey: string }[];
  output: { name: string; key: string; contentType: string };
  deadlineMs: number;
  fields: BackendJobFields;
}

/**
 * The request for `transfer`, with the media URLs signed (valid past the deadline, the upload
 * of the result comes last) and the callback URL, checked as the backend checks it
 * (parseJobRequest: schema, unique names, ffmpeg args). Throws BackendUnavailableError for a
 * request the backend would refuse.
 */
export async function backendJobRequest(env: Env, transfer: BackendTransfer): Promise<JobRequest> {
  const ttl = transfer.deadlineMs + 10 * 60 * 1000;
  const checked = parseJobRequest({
    ...transfer.fields,
    jobId: transfer.jobId,
    kind: transfer.kind,
    inputs: await Promise.all(
      transfer.inputs.map(async (input) => ({
        name: input.name,
        url: await mediaUrl(env, input.objectKey, "GET", ttl),
      })),
    ),
    output: {
      name: transfer.output.name,
      url: await mediaUrl(env, transfer.output.key, "PUT", ttl, transfer.output.contentType),
      contentType: transfer.output.contentType,
    },
    callbackUrl: `${env.PUBLIC_BASE_URL!.replace(/\/$/, "")}/internal/jobs/${transfer.jobId}/callback`,
    deadlineMs: transfer.deadlineMs,
  });
  if (!checked.ok)
    throw new BackendUnavailableError(`the job request breaks the backend protocol (${checked.message})`);
  return checked.job;
}

/** Builds, checks and submits the request. Throws BackendUnavailableError when it is refused or the backend cannot be reached. */
export async function startBackendJob(env: Env, transfer: BackendTransfer): Promise<void> {
  await submitToBackend(env, await backendJobRequest(env, transfer));
}
