/**
 * Rate limits through the real fetch handler and the local emulation of the Workers Rate
 * Limiting bindings declared in wrangler.toml: per API key id by plan on /api/v1, per client
 * address on the routes without a key, the 429 envelope and headers, no work on a refusal,
 * and the OpenAPI document.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import wranglerToml from "../../wrangler.toml?raw";
import {
  ADMIN,
  call,
  callTool,
  expectLedgerConsistent,
  fixtureBytes,
  newAccount,
  uploadFixture,
  waitForJob,
  type TestAccount,
} from "../helpers/api";
import { expectPolicyHeaders, expectRateLimited, freshWindow, repeat } from "../helpers/rate-limits";
import { planRateLimit, rateLimits } from "../../src/services/platform/rate-limits";
import { plans } from "../../src/services/billing/pricing";
import { fetchAt } from "../helpers/mcp";

const standard = rateLimits.standard;

/** A second key of the same account: its own counter. */
async function anotherKey(account: TestAccount): Promise<TestAccount> {
  const response = await call(`/api/admin/accounts/${account.accountId}/keys`, { method: "POST", headers: ADMIN });
  const { keyId, apiKey } = (await response.json()) as { keyId: string; apiKey: string };
  return { ...account, keyId, apiKey, auth: { authorization: `Bearer ${apiKey}` } };
}

const account = (key: TestAccount) => call("/api/v1/account", { headers: key.auth });
const address = () =>
  `2001:db8:429:${[...crypto.getRandomValues(new Uint16Array(5))].map((n) => n.toString(16)).join(":")}`;

describe("rate limits per API key", () => {
  it("answers the 101st call within the window with 429, its headers and the envelope; other keys are unaffected", async () => {
    const first = await newAccount();
    const sibling = await anotherKey(first);
    const stranger = await newAccount();
    await freshWindow(standard.period);
    const statuses = await repeat(standard.limit - 1, () => account(first));
    expect(statuses.every((s) => s === 200)).toBe(true);
    const last = await account(first);
    expect(last.status).toBe(200);
    expectPolicyHeaders(last, standard);
    expect(last.headers.get("retry-after")).toBeNull();

    await expectRateLimited(await account(first), standard);
    // Every route of /api/v1 shares the counter, tool calls included.
    await expectRateLimited(await callTool(first, "trim", { uploadId: "upl_x", start: 0, end: 1 }), standard);
    // Another key of the same account, and another account, have their own counters.
    expect((await account(sibling)).status).toBe(200);
    expect((await account(stranger)).status).toBe(200);
    // A missing or unknown key is still 401, never 429.
    const missing = await call("/api/v1/account");
    expect(missing.status).toBe(401);
    expect(missing.headers.get("ratelimit-limit")).toBeNull();
    expect(
      (await call("/api/v1/account", { headers: { authorization: `Bearer mk_live_${"x".repeat(32)}` } })).status,
    ).toBe(401);
  });

  it("refuses before any work: a limited tool call debits nothing and creates no job, a limited upload stores nothing", async () => {
    const owner = await newAccount({ credits: 1_000 });
    const clip = await uploadFixture(owner, "clip.mp4");
    const key = await anotherKey(owner);
    const bytes = await fixtureBytes("clip.mp4");
    const before = await env.DB.prepare(
      "SELECT (SELECT plan_credits + purchased_credits FROM accounts WHERE id = ?1) AS balance, (SELECT COUNT(*) FROM jobs WHERE account_id = ?1) AS jobs, (SELECT COUNT(*) FROM uploads WHERE account_id = ?1) AS uploads, (SELECT COUNT(*) FROM ledger WHERE account_id = ?1) AS ledger",
    )
      .bind(owner.accountId)
      .first<Record<string, number>>();
    const objects = (await env.MEDIA.list({ prefix: `uploads/${owner.accountId}/` })).objects.length;

    await freshWindow(standard.period);
    expect((await repeat(standard.limit, () => account(key))).every((s) => s === 200)).toBe(true);
    await expectRateLimited(await callTool(key, "extract-audio", { uploadId: clip.uploadId }), standard);
    const form = new FormData();
    form.append("file", new File([bytes], "clip.mp4"));
    await expectRateLimited(await call("/api/v1/uploads", { method: "POST", headers: key.auth, body: form }), standard);
    // A body the tool would refuse with 400 is refused with 429 first: no work at all.
    await expectRateLimited(await callTool(key, "extract-audio", {}), standard);

    const after = await env.DB.prepare(
      "SELECT (SELECT plan_credits + purchased_credits FROM accounts WHERE id = ?1) AS balance, (SELECT COUNT(*) FROM jobs WHERE account_id = ?1) AS jobs, (SELECT COUNT(*) FROM uploads WHERE account_id = ?1) AS uploads, (SELECT COUNT(*) FROM ledger WHERE account_id = ?1) AS ledger",
    )
      .bind(owner.accountId)
      .first<Record<string, number>>();
    expect(after).toEqual(before);
    expect((await env.MEDIA.list({ prefix: `uploads/${owner.accountId}/` })).objects.length).toBe(objects);
    await expectLedgerConsistent(owner);
    // The owner's first key still works and is billed normally.
    const allowed = await callTool(owner, "extract-audio", { uploadId: clip.uploadId });
    expect(allowed.status).toBe(200);
    expectPolicyHeaders(allowed, standard);
    // Its result downloads (per-address counted) with Range, length and the policy headers intact.
    const job = await waitForJob(owner, ((await allowed.json()) as { jobId: string }).jobId);
    expect(job.status, job.error).toBe("completed");
    const part = await call(job.result!.url, { headers: { range: "bytes=0-9", "cf-connecting-ip": address() } });
    expect(part.status).toBe(206);
    expect(part.headers.get("content-length")).toBe("10");
    expect((await part.arrayBuffer()).byteLength).toBe(10);
    expectPolicyHeaders(part, rateLimits.public);
  });

  it("puts the policy headers on every answer of a valid key, errors included, with the plan's limit", async () => {
    const payg = await newAccount({ credits: 1 });
    expectPolicyHeaders(await account(payg), standard);
    const invalid = await callTool(payg, "trim", { start: 0, end: 1 });
    expect(invalid.status).toBe(400);
    expectPolicyHeaders(invalid, standard);
    const unknownJob = await call("/api/v1/jobs/job_00000000000000000000000000", { headers: payg.auth });
    expect(unknownJob.status).toBe(404);
    expectPolicyHeaders(unknownJob, standard);
    const clip = await uploadFixture(payg, "clip.mp4");
    const poor = await callTool(payg, "extract-audio", { uploadId: clip.uploadId });
    expect(poor.status).toBe(402);
    expectPolicyHeaders(poor, standard);

    const pro = await newAccount({ plan: "pro" });
    expectPolicyHeaders(await account(pro), rateLimits.pro);
    const scale = await newAccount({ plan: "scale" });
    expectPolicyHeaders(await account(scale), rateLimits.scale);
  });
});

describe("rate limits per account", () => {
  it("counts all the keys of an account together: more keys do not buy more requests", async () => {
    const owner = await newAccount();
    const keys = [owner, await anotherKey(owner), await anotherKey(owner), await anotherKey(owner)];
    const stranger = await newAccount();
    const accountPolicy = rateLimits.account;
    expect(accountPolicy.limit).toBeLessThan(keys.length * standard.limit);
    await freshWindow(standard.period, 8_000);
    // Each key stays under its own limit; together they pass the account's.
    const perKey = Math.ceil(accountPolicy.limit / keys.length) + 15;
    const statuses = (await Promise.all(keys.map((key) => repeat(perKey, () => account(key))))).flat();
    expect(statuses.filter((s) => s === 200)).toHaveLength(accountPolicy.limit);
    expect(statuses.filter((s) => s === 429)).toHaveLength(keys.length * perKey - accountPolicy.limit);
    const refused = await account(keys[3]!);
    const body = (await refused.clone().json()) as { error: { message: string } };
    expect(body.error.message).toContain("this account's API keys together");
    await expectRateLimited(refused, accountPolicy);
    // Another account is unaffected.
    expect((await account(stranger)).status).toBe(200);
  });
});

describe("rate limits per client address", () => {
  it("limits routes without a key per CF-Connecting-IP, more generously, and never the signed callbacks", async () => {
    const policy = rateLimits.public;
    expect(policy.limit).toBeGreaterThan(standard.limit);
    const from = address();
    const download = () => call("/api/download/dl_unknown", { headers: { "cf-connecting-ip": from } });
    await freshWindow(policy.period, 8_000);
    const first = await download();
    expect(first.status).toBe(404);
    expectPolicyHeaders(first, policy);
    expect((await repeat(policy.limit - 1, download)).every((s) => s === 404)).toBe(true);

    await expectRateLimited(await download(), policy);
    // The same budget covers the other public routes from that address.
    await expectRateLimited(await call("/api/v1/openapi.json", { headers: { "cf-connecting-ip": from } }), policy);
    await expectRateLimited(await call("/docs", { headers: { "cf-connecting-ip": from } }), policy);
    // An /api/v1 path that names no route has no key to count by: it counts per address too.
    await expectRateLimited(await call("/api/v1/nope", { headers: { "cf-connecting-ip": from } }), policy);
    await expectRateLimited(await call("/app/login", { headers: { "cf-connecting-ip": from } }), policy);
    // The connector's OAuth endpoints and /api/mcp, answered before the app, count the same way.
    await expectRateLimited(
      await fetchAt("/oauth/register", {
        method: "POST",
        headers: { "cf-connecting-ip": from, "content-type": "application/json" },
        body: "{}",
      }),
      policy,
    );
    await expectRateLimited(
      await fetchAt("/.well-known/oauth-authorization-server", { headers: { "cf-connecting-ip": from } }),
      policy,
    );
    await expectRateLimited(
      await fetchAt("/api/mcp", {
        method: "POST",
        headers: { "cf-connecting-ip": from, "content-type": "application/json" },
        body: "{}",
      }),
      policy,
    );
    // Another address is unaffected.
    expect((await call("/api/download/dl_unknown", { headers: { "cf-connecting-ip": address() } })).status).toBe(404);
    // /api/v1 with a key is counted per key, not per address.
    const key = await newAccount();
    expect((await call("/api/v1/account", { headers: { ...key.auth, "cf-connecting-ip": from } })).status).toBe(200);
    // Stripe webhooks and backend callbacks reach their signature checks (refused there, not limited).
    const stripe = await call("/api/webhooks/stripe", {
      method: "POST",
      headers: { "cf-connecting-ip": from, "content-type": "application/json", "stripe-signature": "t=1,v1=00" },
      body: "{}",
    });
    expect(stripe.status).not.toBe(429);
    const callback = await call("/internal/jobs/job_x/callback", {
      method: "POST",
      headers: { "cf-connecting-ip": from, "content-type": "application/json" },
      body: "{}",
    });
    expect(callback.status).not.toBe(429);
    // The operator API has its own token.
    expect(
      (await call("/api/admin/accounts/acct_x/audit", { headers: { ...ADMIN, "cf-connecting-ip": from } })).status,
    ).not.toBe(429);
  });
});

describe("rate limits in the configuration and the documentation", () => {
  it("declares in wrangler.toml one binding per row of the table, with the same limit and period", () => {
    const declared = new Map<string, { limit: number; period: number }>();
    for (const block of wranglerToml.split("[[ratelimits]]").slice(1)) {
      const name = /name\s*=\s*"(\w+)"/.exec(block)?.[1];
      const simple = /simple\s*=\s*\{\s*limit\s*=\s*(\d+)\s*,\s*period\s*=\s*(\d+)\s*\}/.exec(block);
      if (name && simple) declared.set(name, { limit: Number(simple[1]), period: Number(simple[2]) });
    }
    for (const policy of Object.values(rateLimits)) {
      expect(declared.get(policy.binding), policy.binding).toEqual({ limit: policy.limit, period: policy.period });
      expect(env[policy.binding], policy.binding).toBeDefined();
    }
    for (const plan of plans) expect(Object.values(rateLimits)).toContain(planRateLimit[plan]);
    expect(planRateLimit.payg).toEqual(expect.objectContaining({ limit: 100, period: 10 }));
  });

  it("lists 429 with its headers on every /api/v1 operation and describes the limits from the table", async () => {
    const response = await call("/api/v1/openapi.json");
    expect(response.status).toBe(200);
    const doc = (await response.json()) as {
      info: { description: string };
      paths: Record<
        string,
        Record<string, { responses: Record<string, { $ref?: string; headers?: Record<string, unknown> }> }>
      >;
      components: {
        responses: Record<string, { headers: Record<string, unknown>; content: Record<string, unknown> }>;
        headers: Record<string, { description: string }>;
      };
    };
    let operations = 0;
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        if (!path.startsWith("/api/v1/")) {
          expect(operation.responses["429"], `${method} ${path}`).toBeUndefined();
          continue;
        }
        operations++;
        expect(operation.responses["429"], `${method} ${path}`).toEqual({ $ref: "#/components/responses/RateLimited" });
        expect(operation.responses["200"]?.headers?.["RateLimit-Policy"], `${method} ${path}`).toBeDefined();
      }
    }
    expect(operations).toBeGreaterThan(15);
    const limited = doc.components.responses.RateLimited;
    expect(Object.keys(limited.headers).sort()).toEqual([
      "RateLimit-Limit",
      "RateLimit-Policy",
      "RateLimit-Remaining",
      "RateLimit-Reset",
      "Retry-After",
    ]);
    expect(limited.content["application/json"]).toEqual({ schema: { $ref: "#/components/schemas/Error" } });
    expect(doc.components.headers["Retry-After"].description).toMatch(/Seconds/);
    for (const policy of Object.values(rateLimits))
      expect(doc.info.description).toContain(`${policy.limit} requests per ${policy.period} s`);
    expect(doc.info.description).not.toMatch(/not enforce/);
    expect(doc.info.description).toContain("401, then 429, then 400, then 402");
  });
});
