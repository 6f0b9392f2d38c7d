/**
 * Client of the container backend (backend/README.md has the protocol): it accepts a job at
 * once (202) and reports the outcome later through a signed callback. Transient failures
 * (network, 5xx) are retried; a 4xx means the request itself is wrong.
 */
import type { Env } from "../env";
import { mediaUrl } from "./transfer-urls";

export class BackendUnavailableError extends Error {}

export interface BackendJob {
  jobId: string;
  kind: "ffmpeg" | "transcribe" | "tts" | "voice-change" | "voice-profile";
  args?: string[];
  inputs: { name: string; url: string }[];
  files?: Record<string, string>;
  fonts?: string[];
  text?: string;
  voice?: string;
  language?: string;
  cloneProfile?: unknown;
  output: { name: string; url: string; contentType: string };
  callbackUrl: string;
  deadlineMs: number;
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
      if (response.status < 500) throw new BackendUnavailableError(`the processing backend refused the job (${lastError})`);
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
  kind: BackendJob["kind"];
  inputs: { name: string; objectKey: string }[];
  output: { name: string; key: string; contentType: string };
  deadlineMs: number;
  /** Kind-specific fields (args, files, fonts, text, voice...). */
  fields: Omit<BackendJob, "jobId" | "kind" | "inputs" | "output" | "callbackUrl" | "deadlineMs">;
}

/**
 * Signs the media URLs (valid past the deadline, the upload of the result comes last) and
 * the callback URL, then submits. Throws BackendUnavailableError when the backend refuses or
 * cannot be reached.
 */
export async function startBackendJob(env: Env, transfer: BackendTransfer): Promise<void> {
  const ttl = transfer.deadlineMs + 10 * 60 * 1000;
  await submitToBackend(env, {
    ...transfer.fields,
    jobId: transfer.jobId,
    kind: transfer.kind,
    inputs: await Promise.all(transfer.inputs.map(async (input) => ({ name: input.name, url: await mediaUrl(env, input.objectKey, "GET", ttl) }))),
    output: { name: transfer.output.name, url: await mediaUrl(env, transfer.output.key, "PUT", ttl, transfer.output.contentType), contentType: transfer.output.contentType },
    callbackUrl: `${env.PUBLIC_BASE_URL!.replace(/\/$/, "")}/internal/jobs/${transfer.jobId}/callback`,
    deadlineMs: transfer.deadlineMs,
  });
}
