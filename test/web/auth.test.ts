import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { hashPassword, verifyPassword } from "../../src/lib/password";
import { sha256Hex } from "../../src/lib/hash";
import { checkResetToken, requestPasswordReset } from "../../src/services/auth";
import { call } from "../helpers/api";
import { accountRow, ledgerOf, PASSWORD, signedUpClient, uniqueEmail, WebClient } from "../helpers/web";

describe("password hashing", () => {
  it("stores scrypt parameters with the hash and verifies only the right password", async () => {
    const hash = await hashPassword("a long enough password");
    expect(hash).toMatch(/^scrypt\$15\$8\$1\$[\w-]{22}\$[\w-]{43}$/);
    expect(await verifyPassword("a long enough password", hash)).toBe(true);
    expect(await verifyPassword("a long enough passwore", hash)).toBe(false);
    expect(await hashPassword("a long enough password")).not.toBe(hash);
    expect(await verifyPassword("x", "pbkdf2$1$abc")).toBe(false);
    expect(await verifyPassword("x", "scrypt$30$8$1$AAAA$BBBB")).toBe(false);
  });
});

describe("sign-up", () => {
  it("creates a payg account with SIGNUP_CREDITS as a ledger grant and a __Host- session cookie", async () => {
    const email = uniqueEmail();
    const client = new WebClient();
    const response = await client.post("/app/signup", { email, password: PASSWORD });
    expect(response.status).toBe(303);
    expect(response.headers.get("location")).toBe("/app");
    const cookie = response.headers.getSetCookie().find((c) => c.startsWith("__Host-session="))!;
    expect(cookie).toMatch(/; Path=\//);
    expect(cookie).toMatch(/; Secure/);
    expect(cookie).toMatch(/; HttpOnly/);
    expect(cookie).toMatch(/; SameSite=Lax/);
    expect(cookie).not.toMatch(/Domain=/i);
    const account = await env.DB.prepare("SELECT * FROM accounts WHERE email = ?").bind(email).first<Record<string, any>>();
    expect(account!.plan).toBe("payg");
    expect(account!.purchased_credits).toBe(100);
    expect(account!.password_hash).toMatch(/^scrypt\$/);
    const ledger = await ledgerOf(account!.id);
    expect(ledger.map((e) => [e.kind, e.amount])).toEqual([["grant", 100]]);
    // Only the token's hash is stored.
    const token = client.sessionToken!;
    const stored = await env.DB.prepare("SELECT token_hash FROM sessions WHERE account_id = ?").bind(account!.id).all<{ token_hash: string }>();
    expect(stored.results.map((r) => r.token_hash)).toEqual([await sha256Hex(token)]);
    const page = await client.get("/app");
    expect(page.status).toBe(200);
    expect(await page.text()).toContain(email);
  });

  it("answers the form again for a duplicate email or a weak password, creating nothing", async () => {
    const { email } = await signedUpClient();
    const again = await new WebClient().post("/app/signup", { email, password: PASSWORD });
    expect(again.status).toBe(400);
    const html = await again.text();
    expect(html).toContain("cannot be used to sign up");
    expect(html).toContain('name="email"');
    const weakEmail = uniqueEmail();
    const weak = await new WebClient().post("/app/signup", { email: weakEmail, password: "short" });
    expect(weak.status).toBe(400);
    expect(await weak.text()).toContain("at least 10 characters");
    expect(await env.DB.prepare("SELECT 1 FROM accounts WHERE email = ?").bind(weakEmail).first()).toBeNull();
    const badEmail = await new WebClient().post("/app/signup", { email: "not an email", password: PASSWORD });
    expect(badEmail.status).toBe(400);
  });
});

describe("sign-in and sessions", () => {
  it("gives one message for a wrong password and an unknown email", async () => {
    const { email } = await signedUpClient();
    const wrong = await new WebClient().post("/app/login", { email, password: "wrong password!!" });
    const unknown = await new WebClient().post("/app/login", { email: uniqueEmail(), password: PASSWORD });
    expect(wrong.status).toBe(400);
    expect(unknown.status).toBe(400);
    const [a, b] = [await wrong.text(), await unknown.text()];
    expect(a).toContain("Email or password is incorrect.");
    expect(b).toContain("Email or password is incorrect.");
    expect(a.replace(/value="[^"]*"/g, "")).toBe(b.replace(/value="[^"]*"/g, ""));
  });

  it("rotates the session at sign-in, deletes it at sign-out", async () => {
    const { client, email, accountId } = await signedUpClient();
    const first = client.sessionToken!;
    const login = await client.post("/app/login", { email, password: PASSWORD, next: "/app/keys" });
    expect(login.status).toBe(303);
    expect(login.headers.get("location")).toBe("/app/keys");
    const second = client.sessionToken!;
    expect(second).not.toBe(first);
    const old = new WebClient();
    old.cookies.set("__Host-session", first);
    expect((await old.get("/app")).status).toBe(303);
    expect((await client.get("/app")).status).toBe(200);
    const logout = await client.post("/app/logout", {});
    expect(logout.status).toBe(303);
    expect(client.sessionToken).toBeUndefined();
    const rows = await env.DB.prepare("SELECT COUNT(*) AS n FROM sessions WHERE account_id = ?").bind(accountId).first<{ n: number }>();
    expect(rows!.n).toBe(0);
    const replay = new WebClient();
    replay.cookies.set("__Host-session", second);
    const denied = await replay.get("/app/billing");
    expect(denied.status).toBe(303);
    expect(denied.headers.get("location")).toBe("/app/login?next=%2Fapp%2Fbilling");
  });

  it("slides the expiry with use, and refuses an expired session", async () => {
    const { client, accountId } = await signedUpClient();
    const hash = await sha256Hex(client.sessionToken!);
    const hourAgo = Date.now() - 3600_000;
    await env.DB.prepare("UPDATE sessions SET last_seen_at = ?, expires_at = ? WHERE token_hash = ?").bind(hourAgo, Date.now() + 60_000, hash).run();
    const page = await client.get("/app");
    expect(page.status).toBe(200);
    expect(page.headers.getSetCookie().some((c) => c.startsWith("__Host-session="))).toBe(true);
    const row = await env.DB.prepare("SELECT expires_at FROM sessions WHERE token_hash = ?").bind(hash).first<{ expires_at: number }>();
    expect(row!.expires_at).toBeGreaterThan(Date.now() + 6 * 24 * 3600_000);
    await env.DB.prepare("UPDATE sessions SET expires_at = ? WHERE account_id = ?").bind(Date.now() - 1, accountId).run();
    expect((await client.get("/app")).status).toBe(303);
  });

  it("refuses form posts without this origin (CSRF) and changes nothing", async () => {
    const { client, accountId } = await signedUpClient();
    for (const origin of [null, "https://evil.example"]) {
      const response = await client.post("/app/keys", { name: "csrf" }, origin);
      expect(response.status).toBe(403);
    }
    const keys = await env.DB.prepare("SELECT COUNT(*) AS n FROM api_keys WHERE account_id = ?").bind(accountId).first<{ n: number }>();
    expect(keys!.n).toBe(0);
    const signup = await new WebClient().post("/app/signup", { email: uniqueEmail(), password: PASSWORD }, "https://evil.example");
    expect(signup.status).toBe(403);
    // The pages opened by a link (a client's review, an assistant's upload page) refuse it with a page too.
    for (const path of ["/app/signup", "/review/any-token", "/upload/any-token"]) {
      const refused = await new WebClient().post(path, { decision: "approve" }, "https://evil.example");
      expect(refused.status, path).toBe(403);
      expect(refused.headers.get("content-type"), path).toMatch(/^text\/html/);
      const html = await refused.text();
      expect(html, path).toContain("This form was sent from another site");
      // A link's page names itself and sends its reader (a brand's client, an assistant's user)
      // nowhere near the developer area; the developer area's own pages link back to it.
      const section = { "/app/signup": "developer area", "/review/any-token": "post review", "/upload/any-token": "file upload" }[path];
      expect(html, path).toContain(`· ${section}</span>`);
      expect(html.includes("Back to the developer area"), path).toBe(path.startsWith("/app/"));
    }
    for (const [path, section] of [["/review/any-token", "post review"], ["/upload/any-token", "file upload"]]) {
      const gone = await new WebClient().get(path);
      const html = await gone.text();
      expect(html, path).toContain("Link not valid");
      expect(html, path).toContain(`· ${section}</span>`);
      expect(html, path).not.toContain("developer area");
    }
  });

  it("answers 400, never 500, to a form post whose body cannot be read, changing nothing", async () => {
    const { client, accountId } = await signedUpClient();
    const broken = { "content-type": "multipart/form-data; boundary=zzz", origin: client.base };
    const body = '--zzz\r\nContent-Disposition: form-data; name="email"\r\n\r\ncut he';
    const pages = ["/app/login", "/app/signup", "/app/reset", "/app/keys", "/app/billing/plan", "/app/billing/checkout", "/authorize", "/review/nothing"];
    for (const path of pages) {
      const response = await client.request(path, { method: "POST", headers: broken, body });
      expect(response.status, path).toBe(400);
      expect(await response.text(), path).toContain("The form could not be read");
    }
    const keys = await env.DB.prepare("SELECT COUNT(*) AS n FROM api_keys WHERE account_id = ?").bind(accountId).first<{ n: number }>();
    expect(keys!.n).toBe(0);
    expect((await accountRow(accountId)).plan).toBe("payg");
  });

  it("rate limits sign-in attempts per email", async () => {
    // The limiter counts in windows aligned to the wall clock's minute; twelve scrypt sign-ins
    // on a loaded machine can straddle a boundary, which resets the count. Such a run proves
    // nothing either way, so it is repeated once with a fresh account (then well inside a window).
    const minuteOf = (time: number) => Math.floor(time / 60_000);
    for (let run = 0; run < 2; run++) {
      const { email } = await signedUpClient();
      const started = Date.now();
      const statuses: number[] = [];
      for (let i = 0; i < 12; i++) {
        const response = await new WebClient().request("/app/login", {
          method: "POST",
          headers: { origin: "http://api.test", "cf-connecting-ip": `203.0.113.${i}` },
          body: new URLSearchParams({ email, password: "wrong password!!" }),
        });
        statuses.push(response.status);
        if (response.status === 429) {
          expect(await response.text()).toContain("Too many attempts");
          expect(response.headers.get("retry-after")).toBe("60");
        }
      }
      if (run === 0 && minuteOf(started) !== minuteOf(Date.now())) continue;
      expect(statuses.slice(0, 10).every((s) => s === 400)).toBe(true);
      expect(statuses.slice(10)).toEqual([429, 429]);
      return;
    }
  });

  it("protects every page of the area", async () => {
    for (const path of ["/app", "/app/keys", "/app/ledger", "/app/ledger.csv", "/app/jobs", "/app/voice", "/app/billing"]) {
      const response = await call(path, { redirect: "manual" });
      expect(response.status, path).toBe(303);
      expect(response.headers.get("location")).toMatch(/^\/app\/login\?next=/);
    }
  });
});

describe("password reset", () => {
  it("builds the mailed link on the configured public origin, not on the Host the request named", async () => {
    const { email } = await signedUpClient();
    await requestPasswordReset({ ...env, PUBLIC_BASE_URL: "https://media.example/" }, email, "http://forged.example:8787", Date.now());
    const outbox = await (await call("/app/dev/outbox")).text();
    expect(outbox).toMatch(/href="https:\/\/media\.example\/app\/reset\/[^"]+"/);
    expect(outbox).not.toContain("forged.example");
  });

  it("mails a signed single-use link that sets a new password and signs other sessions out", async () => {
    const { client, email, accountId } = await signedUpClient();
    const request = await new WebClient().post("/app/reset", { email });
    expect(request.status).toBe(200);
    expect(await request.text()).toContain("If an account uses this email");
    const unknown = await new WebClient().post("/app/reset", { email: uniqueEmail() });
    expect(unknown.status).toBe(200);
    const outbox = await (await call("/app/dev/outbox")).text();
    const link = new RegExp(`to ${email.replace(/[.+]/g, "\\$&")}`).test(outbox) ? outbox.match(/href="(http:\/\/api\.test\/app\/reset\/[^"]+)"/)![1] : "";
    expect(link).not.toBe("");
    const path = new URL(link).pathname;
    const token = path.split("/").pop()!;
    expect(await checkResetToken(env, token, Date.now() + 3600_001)).toBeNull();
    expect((await call(path)).status).toBe(200);
    const weak = await new WebClient().post(path, { password: "short" });
    expect(weak.status).toBe(400);
    // Two uses of the link at once: one sets the password, the other is told the link is used.
    const tries = [
      { client: new WebClient(), password: "a brand new password" },
      { client: new WebClient(), password: "a racing password!!" },
    ];
    const answers = await Promise.all(tries.map((t) => t.client.post(path, { password: t.password })));
    expect(answers.map((a) => a.status).sort()).toEqual([303, 400]);
    const winner = tries[answers.findIndex((a) => a.status === 303)]!;
    expect(winner.client.sessionToken).toBeDefined();
    expect((await client.get("/app")).status).toBe(303);
    expect((await call(path)).status).toBe(400);
    expect((await new WebClient().post(path, { password: "yet another password" })).status).toBe(400);
    expect((await new WebClient().post("/app/login", { email, password: PASSWORD })).status).toBe(400);
    expect((await new WebClient().post("/app/login", { email, password: winner.password })).status).toBe(303);
    expect((await accountRow(accountId)).password_hash).toMatch(/^scrypt/);
    const forged = await call(`/app/reset/${token.slice(0, -2)}xx`);
    expect(forged.status).toBe(400);
  });

  it("hides the dev outbox unless DEV_MODE is on", async () => {
    expect(env.DEV_MODE).toBe("true");
    expect((await call("/app/dev/outbox")).status).toBe(200);
  });
});
