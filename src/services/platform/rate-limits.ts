/**
 * Rate limits: the one table of who may send how many requests, enforced by Cloudflare's Workers
 * Rate Limiting bindings (`[[ratelimits]]` in wrangler.toml, one binding per row;
 * test/routes/rate-limits.test.ts checks both agree). The OpenAPI description and the
 * `RateLimit-*` headers are generated from this table.
 * Why bindings, and why answers are approximate: docs/decisions/0012-rate-limits-on-platform-bindings.md.
 */
import type { Env } from "../../env";
import { planNames } from "../billing/catalog";
import type { Plan } from "../billing/pricing";

/** The `RateLimit` bindings of the table (src/env.ts, wrangler.toml). */
export type RateLimitBinding =
  | "API_RATE_LIMIT"
  | "API_RATE_LIMIT_PRO"
  | "API_RATE_LIMIT_SCALE"
  | "ACCOUNT_RATE_LIMIT"
  | "ACCOUNT_RATE_LIMIT_PRO"
  | "ACCOUNT_RATE_LIMIT_SCALE"
  | "PUBLIC_RATE_LIMIT";

export interface RateLimitPolicy {
  id: string;
  binding: RateLimitBinding;
  /** What one counter belongs to. */
  keyedBy: "api-key" | "account" | "address";
  /** Requests allowed per `period` seconds, per key (or address), per Cloudflare location. */
  limit: number;
  /** Seconds; the platform accepts only 10 or 60. */
  period: 10 | 60;
  /** For whom, in the documentation. */
  appliesTo: string;
}

/**
 * The table. API keys exist only on payg, pro and scale (solo and starter keys answer 401
 * before any limit), so three key tiers; the per-address limit is more generous because many
 * people can share one address (offices, mobile carriers).
 */
export const rateLimits = {
  standard: {
    id: "standard",
    binding: "API_RATE_LIMIT",
    keyedBy: "api-key",
    limit: 100,
    period: 10,
    appliesTo: `each API key of a ${planNames.payg} account (the default)`,
  },
  pro: {
    id: "pro",
    binding: "API_RATE_LIMIT_PRO",
    keyedBy: "api-key",
    limit: 300,
    period: 10,
    appliesTo: `each API key of a ${planNames.pro} account`,
  },
  scale: {
    id: "scale",
    binding: "API_RATE_LIMIT_SCALE",
    keyedBy: "api-key",
    limit: 1000,
    period: 10,
    appliesTo: `each API key of a ${planNames.scale} account`,
  },
  // All the keys of one account together: three keys' worth, so more keys do not buy more traffic.
  account: {
    id: "account",
    binding: "ACCOUNT_RATE_LIMIT",
    keyedBy: "account",
    limit: 300,
    period: 10,
    appliesTo: `all the API keys of a ${planNames.payg} account together`,
  },
  accountPro: {
    id: "account-pro",
    binding: "ACCOUNT_RATE_LIMIT_PRO",
    keyedBy: "account",
    limit: 900,
    period: 10,
    appliesTo: `all the API keys of a ${planNames.pro} account together`,
  },
  accountScale: {
    id: "account-scale",
    binding: "ACCOUNT_RATE_LIMIT_SCALE",
    keyedBy: "account",
    limit: 3000,
    period: 10,
    appliesTo: `all the API keys of a ${planNames.scale} account together`,
  },
  public: {
    id: "public",
    binding: "PUBLIC_RATE_LIMIT",
    keyedBy: "address",
    limit: 300,
    period: 10,
    appliesTo:
      "each client address on routes without an API key (downloads, upload and review pages, the developer area, /docs, /api/v1/openapi.json, the connector's OAuth endpoints and /api/mcp)",
  },
} as const satisfies Record<string, RateLimitPolicy>;

/** The key tier of each plan. */
export const planRateLimit: Record<Plan, RateLimitPolicy> = {
  payg: rateLimits.standard,
  solo: rateLimits.standard,
  starter: rateLimits.standard,
  pro: rateLimits.pro,
  scale: rateLimits.scale,
};

/** The account tier of each plan. */
export const planAccountRateLimit: Record<Plan, RateLimitPolicy> = {
  payg: rateLimits.account,
  solo: rateLimits.account,
  starter: rateLimits.account,
  pro: rateLimits.accountPro,
  scale: rateLimits.accountScale,
};

/** `100;w=10`: the policy as the RateLimit-Policy header states it. */
export const policyHeader = (policy: RateLimitPolicy) => `${policy.limit};w=${policy.period}`;

/** The headers of every answer counted by `policy`. */
export function policyHeaders(policy: RateLimitPolicy): Record<string, string> {
  return { "RateLimit-Policy": policyHeader(policy), "RateLimit-Limit": String(policy.limit) };
}

/**
 * The headers of a refusal. The binding does not say where its window stands, so the reset is
 * one whole period: waiting that long always reaches a fresh window.
 */
export function refusalHeaders(policy: RateLimitPolicy): Record<string, string> {
  return {
    ...policyHeaders(policy),
    "Retry-After": String(policy.period),
    "RateLimit-Remaining": "0",
    "RateLimit-Reset": String(policy.period),
  };
}

export function refusalMessage(policy: RateLimitPolicy): string {
  const who =
    policy.keyedBy === "api-key"
      ? "this API key"
      : policy.keyedBy === "account"
        ? "this account's API keys together"
        : "this address";
  return `Too many requests from ${who}: at most ${policy.limit} per ${policy.period} seconds. Retry after ${policy.period} seconds.`;
}

/**
 * Counts one request of `subject` (a key id or an address) under `policy`. Returns whether it
 * is allowed, or null when the binding is absent. A failing binding lets the request through
 * (logged): the limit protects the service, an outage of it must not take the API down.
 */
export async function countRequest(env: Env, policy: RateLimitPolicy, subject: string): Promise<boolean | null> {
  const binding = env[policy.binding];
  if (!binding) return null;
  try {
    const { success } = await binding.limit({ key: `${policy.keyedBy}:${subject}` });
    return success;
  } catch (error) {
    console.error("rate limit binding failed", policy.binding, error instanceof Error ? error.message : String(error));
    return true;
  }
}

/** The rate-limit paragraph of the API description, from the table. */
export function describeRateLimits(): string {
  const keyTiers = [
    rateLimits.standard,
    rateLimits.pro,
    rateLimits.scale,
    rateLimits.account,
    rateLimits.accountPro,
    rateLimits.accountScale,
  ];
  const rows = keyTiers.map((p) => `${p.appliesTo}: ${p.limit} requests per ${p.period} s`).join("; ");
  const pub = rateLimits.public;
  return [
    `Rate limits, counted per Cloudflare location (approximate): ${rows}, across all of /api/v1 (a request counts for its key and for its account); ${pub.appliesTo}: ${pub.limit} requests per ${pub.period} s.`,
    "Every answer to a request with a valid key carries RateLimit-Policy (for instance 100;w=10: 100 requests per 10-second window) and RateLimit-Limit.",
    "Over the limit: 429 rate_limited with Retry-After, RateLimit-Limit, RateLimit-Remaining: 0 and RateLimit-Reset (seconds; one whole window, an upper bound, since the platform does not report where its window stands).",
    "A missing or invalid key answers 401 before any limit; a refused request does no work (nothing debited, no job, no upload). Signed Stripe webhooks, the media backend's signed transfers and callbacks and the operator API are not limited.",
  ].join(" ");
}
