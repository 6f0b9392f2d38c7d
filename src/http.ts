/**
 * The Hono application: one error envelope for every failure (validation, auth, unknown
 * routes, crashes), the authenticated /api/v1 routes, the operator API, downloads and the
 * OpenAPI document generated from the same zod schemas that validate requests.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Env } from "./env";
import { type AppError, errorBody, QuotaExceededError, statusOf } from "./errors";
import { invalidInput, restError, translateError } from "./error-translator";
import { requireLiveKey, type Caller } from "./services/accounts/accounts";

export type AppEnv = { Bindings: Env; Variables: { caller: Caller } };

export { describeZodError, zodIssueMessages } from "./error-translator";

export function errorResponse(c: Context, error: AppError): Response {
  // RFC 6750: a 401 says which scheme to use, and whether the token that came was refused.
  if (error.code === "unauthorized")
    c.header(
      "WWW-Authenticate",
      c.req.header("authorization") ? 'Bearer realm="api", error="invalid_token"' : 'Bearer realm="api"',
    );
  if (error instanceof QuotaExceededError) c.header("Retry-After", String(error.retryAfterSeconds));
  return c.json(errorBody(error), statusOf[error.code]);
}

/**
 * Refuses test keys (400 with `refusal`) on `paths` of `router`, before its routes: for live data
 * a test key may not read or change. Registered first, so it runs ahead of any handler.
 */
export function liveKeysOnly<R extends ReturnType<typeof createRouter>>(
  router: R,
  paths: string[],
  refusal: string,
): R {
  for (const path of paths) {
    router.use(path, async (c, next) => {
      requireLiveKey(c.get("caller"), refusal);
      await next();
    });
  }
  return router;
}

export function createRouter() {
  return new OpenAPIHono<AppEnv>({
    defaultHook: (result, c) => {
      if (!result.success) return errorResponse(c, invalidInput(result.error));
    },
  });
}

export function handleError(error: unknown, c: Context): Response {
  const translated = translateError(error, "unhandled error");
  if (translated.error) return errorResponse(c, translated.error);
  const { body, status } = restError(translated);
  return c.json(body, status as ContentfulStatusCode);
}
