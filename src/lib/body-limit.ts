/**
 * JSON and URL-encoded form bodies are parsed whole in memory, so they are bounded before they
 * are read: a 60 MB JSON body used to be parsed in full before its 400, and one near the
 * platform's 100 MB request limit could exhaust an isolate's 128 MB. Files (multipart uploads,
 * resumable parts, raw bodies) stream and have their own limits.
 */
import type { Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";

const MiB = 1024 * 1024;
/**
 * Above any valid call: the largest field, 2,000,000 characters of SRT, is 12 MB when a client
 * escapes every character as `\uXXXX`.
 */
export const MAX_JSON_BODY_BYTES = 16 * MiB;
export const MAX_FORM_BODY_BYTES = 1 * MiB;

/** Answers a body over its limit: the caller knows whether the request wants JSON or a page. */
export type RefuseTooLarge = (c: Context, message: string) => Response | Promise<Response>;

export function limitParsedBodies(refuse: RefuseTooLarge) {
  const limited = (maxSize: number, what: string) => bodyLimit({ maxSize, onError: (c) => refuse(c, `The ${what} body is larger than ${maxSize / MiB} MiB.`) });
  const limitJson = limited(MAX_JSON_BODY_BYTES, "JSON");
  const limitForm = limited(MAX_FORM_BODY_BYTES, "form");
  return createMiddleware(async (c, next) => {
    const type = (c.req.header("content-type") ?? "").toLowerCase();
    if (/^application\/([\w.+-]+\+)?json/.test(type)) return limitJson(c, next);
    if (type.startsWith("application/x-www-form-urlencoded")) return limitForm(c, next);
    return next();
  });
}
