/**
 * The job's result, POSTed to the Worker: the body is a CallbackBody and the headers carry its
 * signature (protocol.ts: callbackHeaders, verifyCallbackSignature):
 *   x-backend-timestamp: <unix ms>
 *   x-backend-signature: sha256=<hex HMAC-SHA256(BACKEND_SECRET, timestamp + "." + body)>
 * Network errors and 5xx are retried with exponential backoff (a fresh timestamp each try);
 * a 4xx is final.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { CALLBACK_ERROR_MAX_CHARS, callbackHeaders, type CallbackBody } from "@media-credits/wire/protocol";
import { networkReason } from "./transfer.ts";

/** What the runner reports: the wire body, always with the run's duration. */
export type CallbackPayload = CallbackBody & { durationMs: number };

export interface CallbackResult {
  delivered: boolean;
  attempts: number;
  /** Last HTTP status, if any answer came. */
  status?: number;
  error?: string;
}

export const DEFAULT_CALLBACK_DELAYS_MS = [500, 1000, 2000, 4000, 8000];

/** An error text cut to what the Worker accepts (a longer one would be refused with a final 400). */
function fitError(error: string): string {
  return error.length > CALLBACK_ERROR_MAX_CHARS ? `${error.slice(0, CALLBACK_ERROR_MAX_CHARS - 1)}…` : error;
}

export async function sendCallback(
  url: string,
  payload: CallbackPayload,
  options: { secret: string; delaysMs?: number[]; timeoutMs?: number },
): Promise<CallbackResult> {
  const body = JSON.stringify(payload.error === undefined ? payload : { ...payload, error: fitError(payload.error) });
  const delays = options.delaysMs ?? DEFAULT_CALLBACK_DELAYS_MS;
  let status: number | undefined;
  let error = "";
  for (let attempt = 0; ; attempt++) {
    try {
      const response = await fetch(url, {
        method: "POST",
        body,
        headers: { "content-type": "application/json", ...(await callbackHeaders(options.secret, body)) },
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
