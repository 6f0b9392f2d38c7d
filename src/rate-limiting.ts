/**
 * Rate limits over HTTP (the table and the counting: src/services/platform/rate-limits.ts): one
 * middleware per API key after authentication, one per client address on the routes without
 * a key, and the 429 response and headers added to the OpenAPI document.
 */
import type { Context, Next } from "hono";
import { createMiddleware } from "hono/factory";
import { AppError } from "./errors";
import { errorResponse, type AppEnv } from "./http";
import {
  countRequest,
  planAccountRateLimit,
  planRateLimit,
  policyHeaders,
  rateLimits,
  refusalHeaders,
  refusalMessage,
  type RateLimitPolicy,
} from "./services/platform/rate-limits";

/**
 * Counts the request under each of `counts` (policy and subject); the first one over its limit
 * refuses it. The answer carries the headers of the first policy (the key's, on /api/v1).
 */
async function enforce(c: Context<AppEnv>, next: Next, counts: [RateLimitPolicy, string][]): Promise<Response | void> {
  const outcomes = await Promise.all(counts.map(([policy, subject]) => countRequest(c.env, policy, subject)));
  if (outcomes.every((allowed) => allowed === null)) return next();
  const refused = counts.find((_, i) => outcomes[i] === false);
  if (refused) {
    for (const [name, value] of Object.entries(refusalHeaders(refused[0]))) c.header(name, value);
    return errorResponse(c, new AppError("rate_limited", refusalMessage(refused[0])));
  }
  await next();
  for (const [name, value] of Object.entries(policyHeaders(counts[0]![0]))) c.header(name, value);
}

/**
 * Per API key id and per account, by the account's plan; runs after authentication, so a missing
 * or invalid key is 401 first, and before any handler, so a refused request does no work. The
 * account's count keeps someone with many keys from multiplying the key's limit.
 */
export const limitPerKey = createMiddleware<AppEnv>(async (c, next) => {
  const caller = c.get("caller");
  if (!caller) return next();
  return enforce(c, next, [
    [planRateLimit[caller.plan], caller.keyId],
    [planAccountRateLimit[caller.plan], caller.accountId],
  ]);
});

/**
 * Paths outside the per-address limit: /api/v1 is counted per key (its public OpenAPI document
 * excepted); signed Stripe webhooks and the media backend's signed transfers and job callbacks
 * (/internal: many ranged reads of one input, one callback per job) must never be dropped: a
 * refusal would only delay credits or fail a paid job, and their volume follows our own
 * traffic, not a caller's; the operator API is behind its own token.
 */
const exempt = (path: string) =>
  (path.startsWith("/api/v1/") && path !== "/api/v1/openapi.json") ||
  path.startsWith("/api/webhooks/") ||
  path.startsWith("/internal/") ||
  path === "/api/admin" ||
  path.startsWith("/api/admin/");

/**
 * Per client address (`CF-Connecting-IP`) on every route without a key. Cloudflare sets that
 * header on every request from the internet; one without it comes from inside (tests calling
 * the handler directly) and is not counted.
 */
export const limitPerAddress = createMiddleware<AppEnv>(async (c, next) =>
  exempt(c.req.path) ? next() : limitAddress(c, next),
);

/** The per-address count itself, also for an /api/v1 path that names no route (no key to count by). */
export async function limitAddress(c: Context<AppEnv>, next: Next): Promise<Response | void> {
  const address = c.req.header("cf-connecting-ip");
  if (!address) return next();
  return enforce(c, next, [[rateLimits.public, address]]);
}

type Operation = { responses?: Record<string, { $ref?: string; headers?: Record<string, unknown> }> };
type Document = {
  paths?: Record<string, Record<string, unknown>>;
  components?: Record<string, Record<string, unknown>>;
};

const headerDocs: Record<string, { description: string; schema: { type: "string" | "integer" } }> = {
  "RateLimit-Policy": {
    description: "The limit that counts this request, as `<requests>;w=<window seconds>` (for instance `100;w=10`).",
    schema: { type: "string" },
  },
  "RateLimit-Limit": {
    description: "Requests allowed per window for this key (or address).",
    schema: { type: "integer" },
  },
  "RateLimit-Remaining": {
    description:
      "Requests left in the window: always 0 on a 429 (not sent otherwise: the platform does not report it).",
    schema: { type: "integer" },
  },
  "RateLimit-Reset": {
    description: "Seconds until the quota is available again: one whole window, an upper bound.",
    schema: { type: "integer" },
  },
  "Retry-After": { description: "Seconds to wait before retrying (one whole window).", schema: { type: "integer" } },
};
const ref = (kind: string, name: string) => ({ $ref: `#/components/${kind}/${name}` });
const METHODS = new Set(["get", "put", "post", "delete", "patch", "head", "options"]);

/**
 * Adds the rate limits to a generated document: a shared 429 response (error envelope and
 * headers) on every /api/v1 operation, and RateLimit-Policy / RateLimit-Limit on their 2xx
 * answers. Done once here so routes added later are covered without listing 429 themselves.
 */
export function documentRateLimits<T extends object>(generated: T): T {
  const document = generated as Document;
  const components = (document.components ??= {});
  components.headers = { ...components.headers, ...headerDocs };
  components.responses = {
    ...components.responses,
    RateLimited: {
      description:
        "Too many requests (`rate_limited`): over the key's limit (per plan) or the address's limit; retry after `Retry-After` seconds.",
      headers: Object.fromEntries(Object.keys(headerDocs).map((name) => [name, ref("headers", name)])),
      content: { "application/json": { schema: ref("schemas", "Error") } },
    },
  };
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    if (!path.startsWith("/api/v1/")) continue;
    for (const [method, value] of Object.entries(item)) {
      if (!METHODS.has(method)) continue;
      const operation = value as Operation;
      const responses = (operation.responses ??= {});
      for (const [status, response] of Object.entries(responses)) {
        if (/^2\d\d$/.test(status) && !response.$ref) {
          response.headers = {
            ...response.headers,
            "RateLimit-Policy": ref("headers", "RateLimit-Policy"),
            "RateLimit-Limit": ref("headers", "RateLimit-Limit"),
          };
        }
      }
      responses["429"] = ref("responses", "RateLimited");
    }
  }
  return generated;
}
