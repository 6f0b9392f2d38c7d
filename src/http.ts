/**
 * The Hono application: one error envelope for every failure (validation, auth, unknown
 * routes, crashes), the authenticated /api/v1 routes, the operator API, downloads and the
 * OpenAPI document generated from the same zod schemas that validate requests.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ZodError } from "zod";
import type { Env } from "./env";
import { AppError, codeForStatus, errorBody, QuotaExceededError, statusOf } from "./errors";
import { requireLiveKey, type Caller } from "./services/accounts/accounts";

export type AppEnv = { Bindings: Env; Variables: { caller: Caller } };

/**
 * "uploadIds.1: Invalid input" — the path names the field the caller must fix; a body that is
 * not an object says so. Zod does not keep the input in its issues, so "missing" is read from
 * the message ("received undefined") rather than from `issue.input`.
 */
export function describeZodError(error: ZodError): string {
  return zodIssueMessages(error).join("; ");
}

/** The messages of describeZodError, one per field (at most five). */
export function zodIssueMessages(error: ZodError): string[] {
  // One message per field, its type error first: zod still runs the length checks of an array on
  // a string ("uploadIds: Too big: expected string to have <=20 characters"), which misleads, and
  // an empty text is "too small" and "must not be empty" at once.
  const byField = new Map<string, ZodError["issues"][number]>();
  for (const issue of error.issues) {
    const field = issue.path.join(".");
    const kept = byField.get(field);
    if (!kept || (issue.code === "invalid_type" && kept.code !== "invalid_type")) byField.set(field, issue);
  }
  return [...byField.values()]
    .slice(0, 5)
    .map((issue) => {
      const field = issue.path.join(".");
      if (!field && issue.code === "invalid_type") return "The body must be a JSON object.";
      if (issue.code === "invalid_type" && /received undefined$/.test(issue.message)) return `${field}: Required`;
      return field ? `${field}: ${issue.message}` : issue.message;
    });
}

export function errorResponse(c: Context, error: AppError): Response {
  // RFC 6750: a 401 says which scheme to use, and whether the token that came was refused.
  if (error.code === "unauthorized") c.header("WWW-Authenticate", c.req.header("authorization") ? 'Bearer realm="api", error="invalid_token"' : 'Bearer realm="api"');
  if (error instanceof QuotaExceededError) c.header("Retry-After", String(error.retryAfterSeconds));
  return c.json(errorBody(error), statusOf[error.code]);
}

/**
 * Refuses test keys (400 with `refusal`) on `paths` of `router`, before its routes: for live data
 * a test key may not read or change. Registered first, so it runs ahead of any handler.
 */
export function liveKeysOnly<R extends ReturnType<typeof createRouter>>(router: R, paths: string[], refusal: string): R {
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
      if (!result.success) return errorResponse(c, new AppError("invalid_request", describeZodError(result.error)));
    },
  });
}

export function handleError(error: unknown, c: Context): Response {
  if (error instanceof AppError) return errorResponse(c, error);
  if (error instanceof HTTPException) {
    // The contract knows 400 for every malformed request; 415 (not JSON) is one of them.
    if (error.status === 415) return errorResponse(c, new AppError("invalid_request", "The body must be JSON (Content-Type: application/json)."));
    const status = error.status;
    const code = codeForStatus(status);
    const message = status === 400 && /JSON/i.test(error.message) ? "Malformed JSON in request body." : error.message || "Request refused.";
    return c.json({ error: { code, message } }, status);
  }
  console.error("unhandled error", error instanceof Error ? error.stack : String(error));
  return errorResponse(c, new AppError("internal_error", "An unexpected error occurred; nothing was charged for it."));
}
