/**
 * The contract's error codes, their HTTP statuses and the one error envelope. Services throw
 * AppError; the HTTP layer, the MCP connector and the queue consumer each map it once.
 */
import * as z from "zod";
import "./lib/zod-openapi";
import { jsonContent } from "./lib/openapi";

export const errorCodes = [
  "invalid_request",
  "unauthorized",
  "insufficient_credits",
  "not_found",
  "rate_limited",
  "internal_error",
] as const;
export type ErrorCode = (typeof errorCodes)[number];

export const statusOf = {
  invalid_request: 400,
  unauthorized: 401,
  insufficient_credits: 402,
  not_found: 404,
  rate_limited: 429,
  internal_error: 500,
} as const satisfies Record<ErrorCode, number>;

/** The contract's code for an HTTP status a library answered with (the reverse of statusOf). */
export function codeForStatus(status: number): ErrorCode {
  return status === 401
    ? "unauthorized"
    : status === 404
      ? "not_found"
      : status < 500
        ? "invalid_request"
        : "internal_error";
}

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Extra members of `error` (402: balance and required). */
    readonly details: Record<string, number | string> = {},
  ) {
    super(message);
    this.name = "AppError";
  }
}

export const invalidRequest = (message: string) => new AppError("invalid_request", message);
export const unauthorized = (message: string) => new AppError("unauthorized", message);
export const notFound = (message: string) => new AppError("not_found", message);

export class InsufficientCreditsError extends AppError {
  constructor(balance: number, required: number) {
    super(
      "insufficient_credits",
      `This processing costs ${required} credit${required === 1 ? "" : "s"}; the balance is ${balance}.`,
      {
        balance,
        required,
      },
    );
  }
}

/** A refusal until a quota starts again (429 rate_limited with Retry-After): a test key's daily jobs. */
export class QuotaExceededError extends AppError {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super("rate_limited", message);
  }
}

/** Messages may quote what the caller sent; whatever a message builds in, the envelope stays short. */
export const MAX_ERROR_MESSAGE = 500;

export function errorBody(error: AppError) {
  const message =
    error.message.length > MAX_ERROR_MESSAGE ? `${error.message.slice(0, MAX_ERROR_MESSAGE - 1)}…` : error.message;
  return { error: { code: error.code, message, ...error.details } };
}

export const ErrorSchema = z
  .object({
    error: z.object({
      code: z.enum(errorCodes).openapi({ example: "invalid_request" }),
      message: z.string().openapi({ example: "uploadId: Required" }),
    }),
  })
  .openapi("Error");

export const InsufficientCreditsSchema = z
  .object({
    error: z.object({
      code: z.literal("insufficient_credits"),
      message: z.string(),
      balance: z.int().openapi({ description: "Current balance in credits" }),
      required: z.int().openapi({ description: "Credits this processing needs" }),
    }),
  })
  .openapi("InsufficientCreditsError");

/** OpenAPI response entries for the errors a route can answer. */
export const errorResponses = {
  400: jsonContent(ErrorSchema, "Invalid request (`invalid_request`); the message names the field"),
  401: jsonContent(
    ErrorSchema,
    "API key missing, malformed, unknown or revoked, or plan without API access (`unauthorized`)",
  ),
  402: jsonContent(
    InsufficientCreditsSchema,
    "Balance lower than the cost (`insufficient_credits`), with `balance` and `required`",
  ),
  404: jsonContent(ErrorSchema, "Unknown or expired resource (`not_found`)"),
  429: jsonContent(ErrorSchema, "Too many requests (`rate_limited`), with a Retry-After header"),
  500: jsonContent(ErrorSchema, "Unexpected server error (`internal_error`)"),
} as const;

export function pickErrors<K extends keyof typeof errorResponses>(...statuses: K[]) {
  return Object.fromEntries(statuses.map((s) => [s, errorResponses[s]])) as Pick<typeof errorResponses, K>;
}

/** A job that cannot finish, with a message meant for the caller (the job's `error`); refunded. */
export class JobFailure extends Error {}
