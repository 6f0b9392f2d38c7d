/**
 * Rate-limit helpers. The local emulation of the Workers Rate Limiting binding (miniflare)
 * counts in windows aligned to the wall clock (epoch = floor(now / period)); a test that must
 * see exactly N requests in one window starts early enough in a window to finish inside it.
 */
import { expect } from "vitest";
import type { RateLimitPolicy } from "../../src/services/platform/rate-limits";

/** Waits for the next window unless at least `needMs` of the current one remain. */
export async function freshWindow(periodSeconds: number, needMs = 6_000): Promise<void> {
  const periodMs = periodSeconds * 1000;
  const left = periodMs - (Date.now() % periodMs);
  if (left < needMs) await new Promise((resolve) => setTimeout(resolve, left + 50));
}

/** Sends `count` requests one after another; returns their statuses. */
export async function repeat(count: number, send: () => Promise<Response>): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) {
    const response = await send();
    await response.body?.cancel();
    statuses.push(response.status);
  }
  return statuses;
}

/** The policy headers every counted answer carries. */
export function expectPolicyHeaders(response: Response, policy: RateLimitPolicy): void {
  expect(response.headers.get("ratelimit-policy")).toBe(`${policy.limit};w=${policy.period}`);
  expect(response.headers.get("ratelimit-limit")).toBe(String(policy.limit));
}

/** A refusal: 429, the contract's envelope with `rate_limited`, Retry-After and RateLimit-*. */
export async function expectRateLimited(response: Response, policy: RateLimitPolicy): Promise<void> {
  const body = (await response.json()) as { error: { code: string; message: string } };
  expect(response.status, JSON.stringify(body)).toBe(429);
  expect(body.error.code).toBe("rate_limited");
  expect(body.error.message).toContain(`${policy.limit} per ${policy.period} seconds`);
  expectPolicyHeaders(response, policy);
  expect(response.headers.get("retry-after")).toBe(String(policy.period));
  expect(response.headers.get("ratelimit-remaining")).toBe("0");
  expect(response.headers.get("ratelimit-reset")).toBe(String(policy.period));
}
