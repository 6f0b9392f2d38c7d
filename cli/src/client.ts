/**
 * The typed client: openapi-fetch over the paths generated from the API's OpenAPI document, so a
 * renamed field or route breaks the CLI's type check rather than a user's run.
 */
import createClient from "openapi-fetch";
import type { paths } from "./api-types.ts";
import type { Config } from "./config.ts";

export type Api = ReturnType<typeof createClient<paths>>;
/** The job status (its always-null `progress` aside, which openapi-fetch's readable type drops). */
export type JobStatus = Omit<
  paths["/api/v1/jobs/{id}"]["get"]["responses"][200]["content"]["application/json"],
  "progress"
>;
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
function retryAfterSeconds(response: Response): number {
  const seconds = Number(response.headers.get("retry-after"));
  return Number.isFinite(seconds) && seconds >= 0 ? Math.min(60, seconds) : 10;
}

async function waitOutRateLimit(response: Response, attempt: number): Promise<boolean> {
  if (response.status !== 429 || attempt >= RATE_LIMIT_RETRIES) return false;
  await response.body?.cancel();
  await pauseBeforeRetry("rate limited", retryAfterSeconds(response));
  return true;
}

async function pauseBeforeRetry(reason: string, seconds: number): Promise<void> {
  process.stderr.write(`${reason}: retrying in ${seconds} s\n`);
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
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
const repeatable = (request: Request) =>
  request.method === "GET" || request.method === "HEAD" || request.headers.has("idempotency-key");

/**
 * Sends the request `next()` makes (a new one per attempt: a streamed body is read once), waits
 * out 429 answers, and sends a repeatable request again when the connection fails or a gateway
 * answers for the API.
 */
async function sendWithRetries(next: () => Request): Promise<Response> {
  // Two budgets: lost connections and gateway answers do not use up the 429 retries.
  for (let rateLimited = 0, failures = 0; ; ) {
    const request = next();
    let response: Response;
    try {
      response = await fetch(request);
    } catch (error) {
      const code = (error as { cause?: { code?: string } }).cause?.code;
      if (!repeatable(request) || failures >= NETWORK_RETRIES || NO_SERVER.has(code ?? "")) throw error;
      await pauseBeforeRetry(describeError(error), 2 ** failures++);
      continue;
    }
    if (GATEWAY_STATUSES.has(response.status) && repeatable(request) && failures < NETWORK_RETRIES) {
      await response.body?.cancel();
      await pauseBeforeRetry(`HTTP ${response.status}`, 2 ** failures++);
      continue;
    }
    if (!(await waitOutRateLimit(response, rateLimited++))) return response;
  }
}

/** The message and its causes ("fetch failed: connect ECONNREFUSED 127.0.0.1:9"). */
export function describeError(error: unknown): string {
  const parts: string[] = [];
  for (
    let cause: unknown = error;
    cause !== undefined && parts.length < 4;
    cause = cause instanceof Error ? cause.cause : undefined
  ) {
    const message = cause instanceof Error ? cause.message : String(cause);
    if (message && !parts.some((part) => part.includes(message))) parts.push(message);
  }
  return parts.join(": ");
}

export function createApi(config: Config): Api {
  if (!config.apiKey) {
    throw new Error(
      "No API key: set MEDIA_CREDITS_API_KEY, or run `media-credits login` to store one in the config file.",
    );
  }
  return createClient<paths>({
    baseUrl: config.baseUrl,
    headers: { authorization: `Bearer ${config.apiKey}` },
    fetch: (request) => sendWithRetries(() => request.clone()),
  });
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
 * retries: `init` is a function, since a streamed body is read once and a retry needs a new one.
 */
export async function rawFetch(
  config: Config,
  pathname: string,
  init: () => RequestInit & { duplex?: "half" },
): Promise<Response> {
  const response = await sendWithRetries(() => {
    const request = init();
    return new Request(`${config.baseUrl}${pathname}`, {
      ...request,
      headers: { authorization: `Bearer ${config.apiKey}`, ...(request.headers as Record<string, string>) },
    });
  });
  if (!response.ok) throw toApiError(response.status, await response.json().catch(() => undefined));
  return response;
}
