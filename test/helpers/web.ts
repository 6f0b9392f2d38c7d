/**
 * A cookie-keeping client of the developer area, through the Worker's real fetch handler,
 * sending the Origin header a browser sends on form posts (hono/csrf checks it).
 */
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { BASE, call } from "./api";
import { eventually } from "./eventually";

export class WebClient {
  constructor(readonly base = BASE) {}

  cookies = new Map<string, string>();
  /** Each client comes from its own address (documentation range), as separate people do. */
  address = `2001:db8::${crypto
    .getRandomValues(new Uint16Array(3))
    .reduce((s, n) => `${s}:${n.toString(16)}`, "")
    .slice(1)}`;

  private cookieHeader() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  }

  async request(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (!headers.has("cf-connecting-ip")) headers.set("cf-connecting-ip", this.address);
    if (this.cookies.size) headers.set("cookie", this.cookieHeader());
    const response = await call(path, { ...init, headers, redirect: "manual" }, this.base);
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const name = pair.slice(0, pair.indexOf("="));
      const value = pair.slice(pair.indexOf("=") + 1);
      if (/max-age=0|expires=thu, 01 jan 1970/i.test(line) || value === "") this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return response;
  }

  get(path: string) {
    return this.request(path);
  }

  post(path: string, form: Record<string, string> | FormData, origin: string | null = this.base) {
    const body = form instanceof FormData ? form : new URLSearchParams(form);
    const headers: Record<string, string> = origin ? { origin } : {};
    return this.request(path, { method: "POST", body, headers });
  }

  /** Sends the keys page's "create key" form as a browser would, with the one-time token the page holds. */
  async createKey(fields: Record<string, string>) {
    const page = await (await this.get("/app/keys")).text();
    const nonce = page.match(/name="nonce" value="([^"]+)"/)?.[1] ?? "";
    return this.post("/app/keys", { ...fields, nonce });
  }

  get sessionToken() {
    return this.cookies.get("__Host-session");
  }
}

let counter = 0;
export const uniqueEmail = () => `web${Date.now()}-${counter++}-${Math.random().toString(36).slice(2, 7)}@example.com`;
export const PASSWORD = "correct horse battery";

/**
 * A signed-up account, its email confirmed through the link of the dev outbox as its owner would
 * (`verified: false` leaves it unconfirmed: no keys, webhooks or payments).
 */
export async function signedUpClient(
  email = uniqueEmail(),
  password = PASSWORD,
  base = BASE,
  options: { verified?: boolean } = {},
) {
  const client = new WebClient(base);
  const response = await client.post("/app/signup", { email, password });
  expect(response.status, await response.clone().text()).toBe(303);
  const row = await env.DB.prepare("SELECT id FROM accounts WHERE email = ?").bind(email).first<{ id: string }>();
  if (options.verified !== false) {
    const link = await mailedLink(email, "/app/verify/");
    expect((await client.get(new URL(link).pathname)).status).toBe(200);
  }
  return { client, email, password, accountId: row!.id };
}

/** The newest link under `path` mailed to `email` (the dev outbox; mails leave after the answer, so it is waited for). */
export async function mailedLink(email: string, path: string): Promise<string> {
  const linkIn = (body: string) => body.match(new RegExp(`https?://\\S+${path.replace(/\//g, "\\/")}\\S+`))?.[0];
  const mails = await eventually(
    async () =>
      (
        await env.DB.prepare("SELECT body FROM dev_outbox WHERE to_email = ? ORDER BY created_at DESC, id DESC")
          .bind(email)
          .all<{ body: string }>()
      ).results,
    (found) => found.some((mail) => linkIn(mail.body) !== undefined),
    { timeoutMs: 2_000, intervalMs: 20, what: `a mail with a ${path} link for ${email}` },
  );
  return mails.map((mail) => linkIn(mail.body)).find((link) => link !== undefined)!;
}

export async function accountRow(accountId: string) {
  return (await env.DB.prepare("SELECT * FROM accounts WHERE id = ?").bind(accountId).first<Record<string, any>>())!;
}

export async function ledgerOf(accountId: string) {
  return (
    await env.DB.prepare("SELECT * FROM ledger WHERE account_id = ? ORDER BY created_at, id")
      .bind(accountId)
      .all<Record<string, any>>()
  ).results;
}

/** balance == sum(ledger), per bucket too. */
export async function expectLedgerMatches(accountId: string) {
  const row = await env.DB.prepare(
    `SELECT a.plan_credits, a.purchased_credits,
       (SELECT COALESCE(SUM(plan_delta), 0) FROM ledger WHERE account_id = a.id) AS plan_total,
       (SELECT COALESCE(SUM(purchased_delta), 0) FROM ledger WHERE account_id = a.id) AS purchased_total,
       (SELECT COALESCE(SUM(amount), 0) FROM ledger WHERE account_id = a.id) AS total
     FROM accounts a WHERE a.id = ?`,
  )
    .bind(accountId)
    .first<Record<string, number>>();
  expect(row!.plan_total).toBe(row!.plan_credits);
  expect(row!.purchased_total).toBe(row!.purchased_credits);
  expect(row!.total).toBe(row!.plan_credits + row!.purchased_credits);
}

/** Signs a webhook body as Stripe does: t=<unix s>,v1=hex(HMAC-SHA256(secret, t + "." + body)). */
export async function stripeSignature(
  body: string,
  secret = "whsec_test_workers",
  timestamp = Math.floor(Date.now() / 1000),
) {
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`${timestamp}.${body}`)));
  return `t=${timestamp},v1=${[...mac].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

export async function sendStripeEvent(event: unknown, signature?: string) {
  const body = JSON.stringify(event);
  return call("/api/webhooks/stripe", {
    method: "POST",
    headers: { "content-type": "application/json", "stripe-signature": signature ?? (await stripeSignature(body)) },
    body,
  });
}

let eventCounter = 0;
export function stripeEvent(
  type: string,
  object: Record<string, unknown>,
  id = `evt_test_${Date.now()}_${eventCounter++}`,
) {
  return {
    id,
    object: "event",
    api_version: "2026-10-28.endive",
    created: Math.floor(Date.now() / 1000),
    type,
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    data: { object },
  };
}
