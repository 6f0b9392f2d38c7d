/**
 * Test factories: every call goes through the Worker's real fetch handler (workerd, real D1,
 * R2, Queue and Durable Object emulation). Each test makes its own account and key.
 */
import { env, exports } from "cloudflare:workers";
import { expect } from "vitest";
import { eventually } from "./eventually";

export const BASE = "http://api.test";
export const ADMIN = { authorization: "Bearer test-admin-token" };

export function call(path: string, init: RequestInit = {}, base = BASE): Promise<Response> {
  return exports.default.fetch(new Request(path.startsWith("http") ? path : `${base}${path}`, init));
}

export function postJson(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return call(path, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

export interface TestAccount {
  accountId: string;
  keyId: string;
  apiKey: string;
  auth: { authorization: string };
}

/** How many jobs the account has: a refused call must make none. */
export async function jobCount(account: TestAccount): Promise<number> {
  const row = await env.DB.prepare("SELECT COUNT(*) AS n FROM jobs WHERE account_id = ?")
    .bind(account.accountId)
    .first<{ n: number }>();
  return row!.n;
}

let counter = 0;

export async function newAccount(options: { credits?: number; plan?: string } = {}): Promise<TestAccount> {
  const email = `user${Date.now()}-${counter++}-${Math.random().toString(36).slice(2, 8)}@example.com`;
  const created = await postJson("/api/admin/accounts", { email, ...options }, ADMIN);
  expect(created.status).toBe(200);
  const { accountId } = (await created.json()) as { accountId: string };
  const keyResponse = await call(`/api/admin/accounts/${accountId}/keys`, { method: "POST", headers: ADMIN });
  expect(keyResponse.status).toBe(200);
  const { keyId, apiKey } = (await keyResponse.json()) as { keyId: string; apiKey: string };
  return { accountId, keyId, apiKey, auth: { authorization: `Bearer ${apiKey}` } };
}

/** Another key of the same account: a file of many calls spreads them over keys (each key is rate-limited). */
export async function newKey(account: TestAccount): Promise<TestAccount> {
  const response = await call(`/api/admin/accounts/${account.accountId}/keys`, { method: "POST", headers: ADMIN });
  expect(response.status).toBe(200);
  const { keyId, apiKey } = (await response.json()) as { keyId: string; apiKey: string };
  return { ...account, keyId, apiKey, auth: { authorization: `Bearer ${apiKey}` } };
}

export async function fixtureBytes(name: string): Promise<Uint8Array> {
  const response = await fetch(`${env.FIXTURE_BASE_URL}/${name}`);
  expect(response.status).toBe(200);
  return new Uint8Array(await response.arrayBuffer());
}

export async function uploadBytes(account: TestAccount, bytes: Uint8Array, filename: string): Promise<Response> {
  const form = new FormData();
  form.append("file", new File([bytes], filename));
  return call("/api/v1/uploads", { method: "POST", headers: account.auth, body: form });
}

/** Uploads a generated fixture and returns its uploadId and reported duration. */
export async function uploadFixture(account: TestAccount, name: string) {
  const response = await uploadBytes(account, await fixtureBytes(name), name);
  const body = (await response.json()) as { uploadId: string; durationSeconds: number; expiresIn: number };
  expect(response.status, JSON.stringify(body)).toBe(200);
  return body;
}

export async function balanceOf(account: TestAccount): Promise<number> {
  const response = await call("/api/v1/account", { headers: account.auth });
  expect(response.status).toBe(200);
  return ((await response.json()) as { balance: number }).balance;
}

/** The invariant of the ledger: the balance equals the sum of the account's entries. */
export async function expectLedgerConsistent(account: TestAccount): Promise<void> {
  const row = await env.DB.prepare(
    `SELECT a.plan_credits + a.purchased_credits AS balance, a.plan_credits, a.purchased_credits,
       (SELECT COALESCE(SUM(amount), 0) FROM ledger WHERE account_id = a.id) AS total,
       (SELECT COALESCE(SUM(plan_delta), 0) FROM ledger WHERE account_id = a.id) AS plan_total,
       (SELECT COALESCE(SUM(purchased_delta), 0) FROM ledger WHERE account_id = a.id) AS purchased_total
     FROM accounts a WHERE a.id = ?`,
  )
    .bind(account.accountId)
    .first<Record<string, number>>();
  expect(row!.total).toBe(row!.balance);
  expect(row!.plan_total).toBe(row!.plan_credits);
  expect(row!.purchased_total).toBe(row!.purchased_credits);
}

export async function callTool(
  account: TestAccount,
  tool: string,
  body: unknown,
  headers: Record<string, string> = {},
) {
  return postJson(`/api/v1/${tool}`, body, { ...account.auth, ...headers });
}

type JobStatus = {
  jobId: string;
  status: string;
  progress: null;
  result?: { url: string; filename: string };
  error?: string;
};

/**
 * Polls the job until it ends (the queue consumer and Durable Object really run), four times a
 * second: well inside a key's rate limit (100 per 10 s) even across a long job.
 */
export async function waitForJob(account: TestAccount, jobId: string, timeoutMs = 60_000): Promise<JobStatus> {
  return eventually(
    async () => {
      const response = await call(`/api/v1/jobs/${jobId}`, { headers: account.auth });
      expect(response.status).toBe(200);
      return (await response.json()) as JobStatus;
    },
    (job) => job.status === "completed" || job.status === "failed",
    { timeoutMs, intervalMs: 250, what: `job ${jobId} to end` },
  );
}

export async function expectError(response: Response, status: number, code: string, messageMatch?: RegExp) {
  const body = (await response.json()) as { error: { code: string; message: string } };
  expect(response.status, JSON.stringify(body)).toBe(status);
  expect(body.error.code).toBe(code);
  expect(typeof body.error.message).toBe("string");
  if (messageMatch) expect(body.error.message).toMatch(messageMatch);
  return body;
}
