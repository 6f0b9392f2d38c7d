/**
 * Developer-area benchmark on a real `wrangler dev` (workerd, local D1) with the local Stripe:
 * sign-in latency (the scrypt hash) against the same scrypt in this Node process, and the
 * p50/p99 of the /app pages under 50 concurrent signed-in sessions against the simplest
 * authenticated API call (GET /api/v1/account) under the same load, measured in the same run.
 * `BENCH_ONLY=web npm run bench`.
 */
import { spawn, spawnSync } from "node:child_process";
import { scryptSync } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort, percentile } from "./util";
import { startLocalStripe } from "../scripts/local-stripe/server";

const root = path.resolve(import.meta.dirname, "..");
const wranglerJs = path.join(root, "node_modules/wrangler/bin/wrangler.js");
const ADMIN = "bench-admin";
const SESSIONS = 50;
const ROUNDS = 6;
const PAGES = ["/app", "/app/keys", "/app/ledger", "/app/jobs", "/app/billing"];

const ms = (n: number) => `${n.toFixed(1)} ms`;

async function timed(run: () => Promise<Response>): Promise<number> {
  const start = performance.now();
  const response = await run();
  await response.arrayBuffer();
  if (response.status >= 400) throw new Error(`HTTP ${response.status}`);
  return performance.now() - start;
}

export async function runWebBench(): Promise<void> {
  const state = mkdtempSync(path.join(tmpdir(), "bench-web-"));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const stripe = await startLocalStripe({
    secretKey: "sk_test_bench",
    webhookSecret: "whsec_bench",
    webhookUrl: `${base}/api/webhooks/stripe`,
  });
  const env = { ...process.env, WRANGLER_SEND_METRICS: "false" };
  spawnSync(process.execPath, [wranglerJs, "d1", "migrations", "apply", "DB", "--local", "--persist-to", state], {
    cwd: root,
    env,
  });
  const vars = {
    ADMIN_TOKEN: ADMIN,
    AUTH_SECRET: "bench",
    STRIPE_SECRET_KEY: "sk_test_bench",
    STRIPE_WEBHOOK_SECRET: "whsec_bench",
    STRIPE_API_BASE: stripe.url,
  };
  const args = [
    wranglerJs,
    "dev",
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--inspector-port",
    "0",
    "--persist-to",
    state,
    "--show-interactive-dev-session=false",
  ];
  for (const [k, v] of Object.entries(vars)) args.push("--var", `${k}:${v}`);
  const child = spawn(process.execPath, args, { cwd: root, env, stdio: "ignore" });
  try {
    for (let i = 0; ; i++) {
      if (i > 400 || child.exitCode !== null) throw new Error("wrangler dev did not start");
      try {
        if ((await fetch(`${base}/api/v1/openapi.json`)).ok) break;
      } catch {}
      await new Promise((r) => setTimeout(r, 300));
    }
    const password = "bench password 123";
    const accounts: { email: string; apiKey: string }[] = [];
    for (let i = 0; i < SESSIONS; i++) {
      const email = `bench${i}-${Date.now()}@example.com`;
      const admin = { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" };
      const account = (await (
        await fetch(`${base}/api/admin/accounts`, {
          method: "POST",
          headers: admin,
          body: JSON.stringify({ email, password, credits: 1000 }),
        })
      ).json()) as { accountId: string };
      const key = (await (
        await fetch(`${base}/api/admin/accounts/${account.accountId}/keys`, { method: "POST", headers: admin })
      ).json()) as { apiKey: string };
      accounts.push({ email, apiKey: key.apiKey });
    }

    // Sign-in: each session from its own address (documentation range), as separate people.
    const signIn = async (email: string, i: number) => {
      const start = performance.now();
      const response = await fetch(`${base}/app/login`, {
        method: "POST",
        redirect: "manual",
        headers: {
          origin: base,
          "content-type": "application/x-www-form-urlencoded",
          "cf-connecting-ip": `2001:db8::${i.toString(16)}`,
        },
        body: new URLSearchParams({ email, password }),
      });
      const elapsed = performance.now() - start;
      const cookie = response.headers.getSetCookie().find((c) => c.startsWith("__Host-session="));
      if (response.status !== 303 || !cookie) throw new Error(`sign-in answered ${response.status}`);
      return { elapsed, cookie: cookie.split(";")[0] };
    };
    const signIns: number[] = [];
    const cookies: string[] = [];
    for (let i = 0; i < SESSIONS; i++) {
      const { elapsed, cookie } = await signIn(accounts[i].email, i);
      signIns.push(elapsed);
      cookies.push(cookie);
    }
    const nodeHash: number[] = [];
    for (let i = 0; i < 10; i++) {
      const start = performance.now();
      scryptSync(password, "0123456789abcdef", 32, { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 });
      nodeHash.push(performance.now() - start);
    }

    // 50 sessions at once, each walking the pages ROUNDS times; then the API baseline, same shape.
    // Each session keeps its sign-in address: the pages are rate-limited per client address.
    const pageTimes = new Map<string, number[]>(PAGES.map((p) => [p, []]));
    const started = performance.now();
    await Promise.all(
      cookies.map(async (cookie, i) => {
        const headers = { cookie, "cf-connecting-ip": `2001:db8::${i.toString(16)}` };
        for (let round = 0; round < ROUNDS; round++) {
          for (const page of PAGES)
            pageTimes.get(page)!.push(await timed(() => fetch(`${base}${page}`, { headers, redirect: "manual" })));
        }
      }),
    );
    const pagesWall = (performance.now() - started) / 1000;
    const apiTimes: number[] = [];
    const apiStarted = performance.now();
    await Promise.all(
      accounts.map(async ({ apiKey }) => {
        for (let i = 0; i < ROUNDS * PAGES.length; i++)
          apiTimes.push(
            await timed(() => fetch(`${base}/api/v1/account`, { headers: { authorization: `Bearer ${apiKey}` } })),
          );
      }),
    );
    const apiWall = (performance.now() - apiStarted) / 1000;

    const all = [...pageTimes.values()].flat();
    console.log(
      `\ndeveloper area on wrangler dev (${SESSIONS} concurrent sessions, ${ROUNDS} rounds of ${PAGES.length} pages)`,
    );
    console.log(`| measure | p50 | p99 | baseline p50 | ratio |`);
    console.log(`| --- | --- | --- | --- | --- |`);
    console.log(
      `| sign-in (POST /app/login, scrypt N=2^15) | ${ms(percentile(signIns, 50))} | ${ms(percentile(signIns, 99))} | ${ms(percentile(nodeHash, 50))} (scrypt alone in Node) | ${(percentile(signIns, 50) / percentile(nodeHash, 50)).toFixed(2)}x |`,
    );
    for (const [page, times] of pageTimes)
      console.log(
        `| GET ${page} | ${ms(percentile(times, 50))} | ${ms(percentile(times, 99))} | ${ms(percentile(apiTimes, 50))} (GET /api/v1/account) | ${(percentile(times, 50) / percentile(apiTimes, 50)).toFixed(2)}x |`,
      );
    console.log(
      `| all pages | ${ms(percentile(all, 50))} | ${ms(percentile(all, 99))} | ${ms(percentile(apiTimes, 50))} p50, ${ms(percentile(apiTimes, 99))} p99 | ${(percentile(all, 50) / percentile(apiTimes, 50)).toFixed(2)}x |`,
    );
    console.log(
      `throughput: pages ${(all.length / pagesWall).toFixed(0)} req/s, API baseline ${(apiTimes.length / apiWall).toFixed(0)} req/s`,
    );
  } finally {
    child.kill("SIGTERM");
    await stripe.close();
    await new Promise((r) => setTimeout(r, 500));
    rmSync(state, { recursive: true, force: true });
  }
}
