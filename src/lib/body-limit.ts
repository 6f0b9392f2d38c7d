/**
 * No request body is read before it is bounded: one stated larger than its route's size is
 * refused at once, one sent without a length is counted and refused when it passes the bound,
 * before any handler parses it or checks its signature. Files stream and have their own limits.
 * Why: docs/decisions/0014-bounded-bodies.md.
 */
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";

const KiB = 1024;
const MiB = 1024 * KiB;

/**
 * Above any valid API call: the largest field, 2,000,000 characters of SRT, is 12 MB when a client
 * escapes every character as `\uXXXX`. The connector's JSON-RPC bodies carry the same calls.
 */
export const MAX_JSON_BODY_BYTES = 16 * MiB;
/** Page forms (sign-in, sign-up, reset, keys, billing, review, consent) carry a few fields. */
export const MAX_PAGE_FORM_BYTES = 64 * KiB;
/** A backend callback (its error is at most 4,000 characters), an engagement report, an OAuth or operator request. */
export const MAX_SMALL_BODY_BYTES = 64 * KiB;
/** A Stripe event: an invoice with its lines is tens of kilobytes; well above any. */
export const MAX_STRIPE_EVENT_BYTES = 1 * MiB;

/**
 * Routes whose body is a file streamed to storage under limits of their own; `multipart`: only a
 * multipart form streams there (a JSON body, such as `{url}` to /api/v1/uploads, is bounded).
 */
const STREAMED: [method: string, path: RegExp, multipart: boolean][] = [
  ["POST", /^\/api\/v1\/uploads$/, true],
  ["PUT", /^\/api\/v1\/uploads\/multipart\/[^/]+\/parts\/[^/]+$/, false],
  ["POST", /^\/upload\/[^/]+$/, true],
  ["POST", /^\/app\/voice$/, true],
  ["PUT", /^\/internal\/media\/[^/]+$/, false],
];

/** The largest body a request may have, or null for a route that streams its file. */
export function bodyLimitFor(method: string, path: string, contentType = ""): number | null {
  const multipart = /^multipart\/form-data/i.test(contentType);
  if (
    STREAMED.some(
      ([m, pattern, needsMultipart]) => m === method && pattern.test(path) && (!needsMultipart || multipart),
    )
  )
    return null;
  if (
    path.startsWith("/internal/") ||
    path.startsWith("/api/integrations/") ||
    path.startsWith("/oauth/") ||
    path.startsWith("/api/admin/")
  )
    return MAX_SMALL_BODY_BYTES;
  if (path.startsWith("/api/webhooks/")) return MAX_STRIPE_EVENT_BYTES;
  if (path.startsWith("/api/")) return MAX_JSON_BODY_BYTES;
  return MAX_PAGE_FORM_BYTES;
}

export const describeLimit = (bytes: number) => (bytes >= MiB ? `${bytes / MiB} MiB` : `${bytes / KiB} KiB`);

export class BodyTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`The request body is larger than ${describeLimit(limit)}.`);
    this.name = "BodyTooLargeError";
  }
}

/**
 * The request with its body read into memory, at most `limit` bytes (a larger Content-Length is
 * refused before reading anything; a body that grows past the limit stops being read at once).
 * Throws BodyTooLargeError. Requests without a body are returned as they are.
 */
export async function boundedRequest(request: Request, limit: number): Promise<Request> {
  if (!request.body) return request;
  const declared = Number(request.headers.get("content-length") ?? Number.NaN);
  if (Number.isFinite(declared) && declared > limit) {
    // Not read: dropping the body is what lets the connection go.
    await request.body.cancel().catch(() => {});
    throw new BodyTooLargeError(limit);
  }
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw new BodyTooLargeError(limit);
    }
    chunks.push(value);
  }
  const body = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  const headers = new Headers(request.headers);
  headers.set("content-length", String(size));
  return new Request(request, { body, headers });
}

/** Answers a body over its route's limit: the caller knows whether the request wants JSON or a page. */
export type RefuseTooLarge = (c: Context, message: string) => Response | Promise<Response>;

/**
 * The app's bound on every body by its route (bodyLimitFor), before any handler reads it. Files
 * are left to stream.
 */
export function limitBodies(refuse: RefuseTooLarge) {
  return createMiddleware(async (c, next) => {
    const limit = bodyLimitFor(c.req.method, c.req.path, c.req.header("content-type"));
    if (limit === null) return next();
    try {
      c.req.raw = await boundedRequest(c.req.raw, limit);
    } catch (error) {
      if (error instanceof BodyTooLargeError) return refuse(c, error.message);
      throw error;
    }
    await next();
  });
}
