/**
 * The typed client: openapi-fetch over the paths generated from the API's OpenAPI document, so a
 * renamed field or route breaks the CLI's type check rather than a user's run.
 */
import createClient from "openapi-fetch";
import type { paths } from "./api-types.ts";
import type { Config } from "./config.ts";

export type Api = ReturnType<typeof createClient<paths>>;
/** The job status (its always-null `progress` aside, which openapi-fetch's readable type drops). */
export type JobStatus = Omit<paths["/api/v1/jobs/{id}"]["get"]["responses"][200]["content"]["application/json"], "progress">;
export type UploadResult = paths["/api/v1/uploads"]["post"]["responses"][200]["content"]["application/json"];

/** An error answer of the API, with its contract code ("insufficient_credits", ...). */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;

  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** Retries of a request refused with 429; the API does nothing for a refused request, so a retry is always safe. */
const RATE_LIMIT_RETRIES = 5;

/** Seconds a 429 asks to wait (Retry-After), 10 when it does not say; at most a minute. */
export function retryAfterSeconds(response: Response): number {
  const seconds = Number(response.headers.get("retry-after"));
  return Number.isFinite(seconds) && seconds >= 0 ? Math.min(60, seconds) : 10;
}

export async function waitOutRateLimit(response: Response, attempt: number): Promise<boolean> {
  if (response.status !== 429 || attempt >= RATE_LIMIT_RETRIES) return false;
  const seconds = retryAfterSeconds(response);
  await response.body?.cancel();
  process.stderr.write(`rate limited: retrying in ${seconds} s\n`);
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  return true;
}

/** Sends again after a lost connection or a gateway's 502/503/504, 1, 2 then 4 s later. */
const NETWORK_RETRIES = 3;
const GATEWAY_STATUSES = new Set([502, 503, 504]);
/** Nothing listens there (a wrong or stopped base URL): said at once rather than after 7 s of retries. */
const NO_SERVER = new Set(["ECONNREFUSED", "ENOTFOUND"]);

/**
 * Safe to send again when the answer was lost: a read, or a call carrying an Idempotency-Key
 * (the API answers a repeat with the first answer and charges nothing more).
 */
const repeatable = (request: Request) => request.method === "GET" || request.method === "HEAD" || request.headers.has("idempotency-key");

async function waitBeforeRepeat(reason: string, failures: number): Promise<void> {
  const seconds = 2 ** (failures - 1);
  process.stderr.write(`${reason}: retrying in ${seconds} s\n`);
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
}

/**
 * fetch that waits out 429 answers (a tool call, a status read) instead of failing on them, and
 * sends a repeatable request again when the connection fails or a gateway answers for the API.
 */
async function fetchRespectingRateLimits(request: Request): Promise<Response> {
  // Two budgets: lost connections and gateway answers do not use up the 429 retries.
  for (let rateLimited = 0, failures = 0; ; ) {
    let response: Response;
    try {
      response = await fetch(request.clone());
    } catch (error) {
      const cause = (error as { cause?: { message?: string; code?: string } }).cause;
      if (!repeatable(request) || failures >= NETWORK_RETRIES || NO_SERVER.has(cause?.code ?? "")) throw error;
      await waitBeforeRepeat(`${(error as Error).message}${cause?.message ? `: ${cause.message}` : ""}`, ++failures);
      continue;
    }
    if (GATEWAY_STATUSES.has(response.status) && repeatable(request) && failures < NETWORK_RETRIES) {
      await response.body?.cancel();
      await waitBeforeRepeat(`HTTP ${response.status}`, ++failures);
      continue;
    }
    if (!(await waitOutRateLimit(response, rateLimited++))) return response;
  }
}

export function createApi(config: Config): Api {
  if (!config.apiKey) {
    throw new Error("No API key: set MEDIA_CREDITS_API_KEY, or run `media-credits login` to store one in the config file.");
  }
  return createClient<paths>({ baseUrl: config.baseUrl, headers: { authorization: `Bearer ${config.apiKey}` }, fetch: fetchRespectingRateLimits });
}

/** The data of a successful openapi-fetch result, or an ApiError carrying the contract's code. */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.error !== undefined || result.data === undefined) throw toApiError(result.response.status, result.error);
  return result.data;
}

export function toApiError(status: number, body: unknown): ApiError {
  const error = (body as { error?: { code?: string; message?: string } } | undefined)?.error;
  return new ApiError(status, error?.code ?? `http_${status}`, error?.message ?? `HTTP ${status}`);
}

/**
 * A raw call for what the generated paths cannot express (streamed bodies), same auth, errors and
 * 429 retries: `init` is a function, since a streamed body is read once and a retry needs a new one.
 */
export async function rawFetch(config: Config, pathname: string, init: () => RequestInit & { duplex?: "half" }): Promise<Response> {
  for (let attempt = 0; ; attempt++) {
    const request = init();
    const response = await fetch(`${config.baseUrl}${pathname}`, {
      ...request,
      headers: { authorization: `Bearer ${config.apiKey}`, ...(request.headers as Record<string, string>) },
    });
    if (await waitOutRateLimit(response, attempt)) continue;
    if (!response.ok) throw toApiError(response.status, await response.json().catch(() => undefined));
    return response;
  }
}
