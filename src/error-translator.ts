/**
 * One translation of errors for every surface. Whatever a service throws (AppError and its
 * InsufficientCreditsError and QuotaExceededError, a ZodError, a library's HTTPException, anything
 * else) becomes the contract's code and message once, here; REST (`handleError` in src/http.ts)
 * answers it as `{error: {code, message, ...}}` with its status, the connector
 * (src/mcp/tool-context.ts) as an `isError` tool result, and pages as a sentence for a person.
 *
 * Caller input is checked by schemas at each surface's edge, which turn their ZodError into an
 * `invalid_request` at once (`invalidInput`). A ZodError that gets here unconverted came from data
 * the service stored or received (a row, a backend answer): a server fault, logged, answered as
 * `internal_error` on every surface.
 */
import { HTTPException } from "hono/http-exception";
import type { ZodError } from "zod";
import { AppError, codeForStatus, errorBody, InsufficientCreditsError, statusOf, type ErrorCode } from "./errors";

export const UNEXPECTED_ERROR = "An unexpected error occurred; nothing was charged for it.";

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
  return [...byField.values()].slice(0, 5).map((issue) => {
    const field = issue.path.join(".");
    if (!field && issue.code === "invalid_type") return "The body must be a JSON object.";
    if (issue.code === "invalid_type" && /received undefined$/.test(issue.message)) return `${field}: Required`;
    return field ? `${field}: ${issue.message}` : issue.message;
  });
}

/** The caller's input failed its schema: `invalid_request` naming the fields. */
export const invalidInput = (error: ZodError) => new AppError("invalid_request", describeZodError(error));

/** An error in the contract's terms: the AppError to answer, or a bare code and message with its own HTTP status (a library's refusal). */
export type Translated =
  | { error: AppError; status: number }
  | { error?: undefined; code: ErrorCode; message: string; status: number };

/** `where` names the surface in the log line of an unexpected error. */
export function translateError(error: unknown, where: string): Translated {
  if (error instanceof AppError) return { error, status: statusOf[error.code] };
  if (error instanceof HTTPException) {
    // The contract knows 400 for every malformed request; 415 (not JSON) is one of them.
    if (error.status === 415)
      return translateError(
        new AppError("invalid_request", "The body must be JSON (Content-Type: application/json)."),
        where,
      );
    const status = error.status;
    const message =
      status === 400 && /JSON/i.test(error.message)
        ? "Malformed JSON in request body."
        : error.message || "Request refused.";
    return { code: codeForStatus(status), message, status };
  }
  console.error(where, error instanceof Error ? error.stack : String(error));
  return translateError(new AppError("internal_error", UNEXPECTED_ERROR), where);
}

/** REST: the body and status of the answer (headers are the HTTP layer's: src/http.ts). */
export function restError(translated: Translated): {
  body: { error: { code: ErrorCode; message: string } & Record<string, number | string> };
  status: number;
} {
  if (translated.error) return { body: errorBody(translated.error), status: translated.status };
  return { body: { error: { code: translated.code, message: translated.message } }, status: translated.status };
}

/**
 * The connector: `{code, message, ...details}` as REST's `error` member, and for a call that
 * cannot be paid, where to buy credits (`billingUrl`, also in the message).
 */
export function toolError(
  translated: Translated,
  origin: string,
): { code: ErrorCode; message: string } & Record<string, number | string> {
  const { error } = restError(translated).body;
  if (translated.error instanceof InsufficientCreditsError) {
    const billingUrl = `${origin}/app/billing`;
    return { ...error, message: `${error.message} Buy credits or change the plan at ${billingUrl}.`, billingUrl };
  }
  return error;
}

/**
 * Pages: what a person reads. A refusal they can act on (bad input, too many attempts, a missing
 * resource, credits) says what happened; anything else is an apology, nothing having been changed.
 */
export function pageMessage(translated: Translated): { status: number; message: string; refused: boolean } {
  if (translated.status < 500)
    return {
      status: translated.status,
      message: restError(translated).body.error.message || "Request refused.",
      refused: true,
    };
  return {
    status: 500,
    message: "The page could not be shown; nothing was changed by it. Try again in a moment.",
    refused: false,
  };
}
