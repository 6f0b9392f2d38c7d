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

export function createApi(config: Config): Api {
  if (!config.apiKey) {
    throw new Error("No API key: set MEDIA_CREDITS_API_KEY, or run `media-credits login` to store one in the config file.");
  }
  return createClient<paths>({ baseUrl: config.baseUrl, headers: { authorization: `Bearer ${config.apiKey}` } });
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

/** A raw call for what the generated paths cannot express (streamed bodies), same auth and errors. */
export async function rawFetch(config: Config, pathname: string, init: RequestInit & { duplex?: "half" }): Promise<Response> {
  const response = await fetch(`${config.baseUrl}${pathname}`, {
    ...init,
    headers: { authorization: `Bearer ${config.apiKey}`, ...(init.headers as Record<string, string>) },
  });
  if (!response.ok) throw toApiError(response.status, await response.json().catch(() => undefined));
  return response;
}
