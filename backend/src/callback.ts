/**
 * The job's result, POSTed to the Worker and signed:
 *   x-backend-timestamp: <unix ms>
 *   x-backend-signature: sha256=<hex HMAC-SHA256(BACKEND_SECRET, timestamp + "." + body)>
 * Network errors and 5xx are retried with exponential backoff (a fresh timestamp each try);
 * a 4xx is final.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { networkReason } from "./transfer.ts";

export interface CallbackPayload {
  jobId: string;
  status: "completed" | "failed";
  error?: string;
  outputBytes?: number;
  /** Wall time of the run: preparing, downloads, ffmpeg, upload (queue wait excluded). */
  durationMs: number;
  /** Time spent waiting for a free slot before the run. */
  queuedMs?: number;
}

export interface CallbackResult {
  delivered: boolean;
  attempts: number;
  /** Last HTTP status, if any answer came. */
  status?: number;
  error?: string;
}

export const DEFAULT_CALLBACK_DELAYS_MS = [500, 1000, 2000, 4000, 8000];

export function signCallback(secret: string, timestamp: string, body: string): string {
  return `sha256=${createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")}`;
}

/** The Worker-side check, kept here as the reference (and for the tests). */
export function verifyCallbackSignature(
  secret: string,
  timestamp: string,
  body: string,
  signature: string,
  options: { now?: number; toleranceMs?: number } = {},
): boolean {
  const ts = Number(timestamp);
  if (!Number.isFinite(ts)) return false;
  if (Math.abs((options.now ?? Date.now()) - ts) > (options.toleranceMs ?? 5 * 60_000)) return false;
  const expected = Buffer.from(signCallback(secret, timestamp, body));
  const given = Buffer.from(signature);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

export async function sendCallback(
  url: string,
  payload: CallbackPayload,
  options: { secret: string; delaysMs?: number[]; timeoutMs?: number },
): Promise<CallbackResult> {
  const body = JSON.stringify(payload);
  const delays = options.delaysMs ?? DEFAULT_CALLBACK_DELAYS_MS;
  let status: number | undefined;
  let error = "";
  for (let attempt = 0; ; attempt++) {
    const timestamp = String(Date.now());
    try {
      const response = await fetch(url, {
        method: "POST",
        body,
        headers: {
          "content-type": "application/json",
          "x-backend-timestamp": timestamp,
          "x-backend-signature": signCallback(options.secret, timestamp, body),
        },
        signal: AbortSignal.timeout(options.timeoutMs ?? 30_000),
        redirect: "manual",
      });
      await response.body?.cancel().catch(() => {});
      status = response.status;
      if (response.ok) return { delivered: true, attempts: attempt + 1, status };
      error = `HTTP ${response.status}`;
      if (response.status < 500) return { delivered: false, attempts: attempt + 1, status, error };
    } catch (err) {
      error = networkReason(err);
    }
    const delay = delays[attempt];
    if (delay === undefined) return { delivered: false, attempts: attempt + 1, status, error };
    await sleep(delay);
  }
}
