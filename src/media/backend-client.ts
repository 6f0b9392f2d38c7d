/**
 * Client of the container backend (backend/README.md has the protocol): it accepts a job at
 * once (202) and reports the outcome later through a signed callback. Transient failures
 * (network, 5xx) are retried; a 4xx means the request itself is wrong.
 */
import type { Env } from "../env";

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
