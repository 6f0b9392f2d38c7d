import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { hashPassword, verifyPassword } from "../../src/lib/password";
import { sha256Hex } from "../../src/lib/hash";
import { checkResetToken, requestPasswordReset } from "../../src/services/accounts/auth";
import { getAccountWebhook, rotateAccountWebhookSecret } from "../../src/services/webhooks/settings";
import { BASE, call } from "../helpers/api";
import { accountRow, ledgerOf, mailedLink, PASSWORD, signedUpClient, uniqueEmail, WebClient } from "../helpers/web";

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
    const account = await env.DB.prepare("SELECT * FROM accounts WHERE email = ?")
      .bind(email)
      .first<Record<string, any>>();
    expect(account!.plan).toBe("payg");
    expect(account!.purchased_credits).toBe(100);
    expect(account!.password_hash).toMatch(/^scrypt\$/);
    const ledger = await ledgerOf(account!.id);
    expect(ledger.map((e) => [e.kind, e.amount])).toEqual([["grant", 100]]);
    // Only the token's hash is stored.
    const token = client.sessionToken!;
    const stored = await env.DB.prepare("SELECT token_hash FROM sessions WHERE account_id = ?")
      .bind(account!.id)
      .all<{ token_hash: string }>();
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
    const rows = await env.DB.prepare("SELECT COUNT(*) AS n FROM sessions WHERE account_id = ?")
      .bind(accountId)
      .first<{ n: number }>();
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
    await env.DB.prepare("UPDATE sessions SET last_seen_at = ?, expires_at = ? WHERE token_hash = ?")
      .bind(hourAgo, Date.now() + 60_000, hash)
      .run();
    const page = await client.get("/app");
    expect(page.status).toBe(200);
    expect(page.headers.getSetCookie().some((c) => c.startsWith("__Host-session="))).toBe(true);
    const row = await env.DB.prepare("SELECT expires_at FROM sessions WHERE token_hash = ?")
      .bind(hash)
      .first<{ expires_at: number }>();
    expect(row!.expires_at).toBeGreaterThan(Date.now() + 6 * 24 * 3600_000);
    await env.DB.prepare("UPDATE sessions SET expires_at = ? WHERE account_id = ?")
      .bind(Date.now() - 1, accountId)
      .run();
    expect((await client.get("/app")).status).toBe(303);
  });

  it("refuses form posts without this origin (CSRF) and changes nothing", async () => {
    const { client, accountId } = await signedUpClient();
    for (const origin of [null, "https://evil.example"]) {
      const response = await client.post("/app/keys", { name: "csrf" }, origin);
      expect(response.status).toBe(403);
    }
    const keys = await env.DB.prepare("SELECT COUNT(*) AS n FROM api_keys WHERE account_id = ?")
      .bind(accountId)
      .first<{ n: number }>();
    expect(keys!.n).toBe(0);
    const signup = await new WebClient().post(
      "/app/signup",
      { email: uniqueEmail(), password: PASSWORD },
      "https://evil.example",
    );
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
      const section = {
        "/app/signup": "developer area",
        "/review/any-token": "post review",
        "/upload/any-token": "file upload",
      }[path];
      expect(html, path).toContain(`· ${section}</span>`);
      expect(html.includes("Back to the developer area"), path).toBe(path.startsWith("/app/"));
    }
    for (const [path, section] of [
      ["/review/any-token", "post review"],
      ["/upload/any-token", "file upload"],
    ]) {
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
    const pages = [
      "/app/login",
      "/app/signup",
      "/app/reset",
      "/app/keys",
      "/app/billing/plan",
      "/app/billing/checkout",
      "/authorize",
      "/review/nothing",
    ];
    for (const path of pages) {
      const response = await client.request(path, { method: "POST", headers: broken, body });
      expect(response.status, path).toBe(400);
      expect(await response.text(), path).toContain("The form could not be read");
    }
    const keys = await env.DB.prepare("SELECT COUNT(*) AS n FROM api_keys WHERE account_id = ?")
      .bind(accountId)
      .first<{ n: number }>();
    expect(keys!.n).toBe(0);
    expect((await accountRow(accountId)).plan).toBe("payg");
  });

  it("limits sign-in attempts per address and email, and a stranger's failures never lock the owner out", async () => {
    // The limiter counts in windows aligned to the wall clock's minute; a run that straddles a
    // boundary proves nothing either way, so it is repeated once with a fresh account.
    const minuteOf = (time: number) => Math.floor(time / 60_000);
    for (let run = 0; run < 2; run++) {
      const { email } = await signedUpClient();
      const started = Date.now();
      // One stranger's address: ten wrong passwords, then refused.
      const stranger = new WebClient();
      const statuses: number[] = [];
      for (let i = 0; i < 12; i++) {
        const response = await stranger.post("/app/login", { email, password: "wrong password!!" });
        statuses.push(response.status);
        if (response.status === 429) {
          expect(await response.text()).toContain("Too many attempts");
          expect(response.headers.get("retry-after")).toBe("60");
        }
      }
      // Twelve more from as many addresses (a spread-out campaign): the email alone is not locked.
      const spread: number[] = [];
      for (let i = 0; i < 12; i++)
        spread.push((await new WebClient().post("/app/login", { email, password: "wrong password!!" })).status);
      // The owner, from their own address, still signs in.
      const owner = await new WebClient().post("/app/login", { email, password: PASSWORD });
      if (run === 0 && minuteOf(started) !== minuteOf(Date.now())) continue;
      expect(statuses.slice(0, 10).every((s) => s === 400)).toBe(true);
      expect(statuses.slice(10)).toEqual([429, 429]);
      expect(spread.every((s) => s === 400)).toBe(true);
      expect(owner.status).toBe(303);
      return;
    }
  });

  it("protects every page of the area", async () => {
    for (const path of [
      "/app",
      "/app/keys",
      "/app/ledger",
      "/app/ledger.csv",
      "/app/jobs",
      "/app/voice",
      "/app/billing",
    ]) {
      const response = await call(path, { redirect: "manual" });
      expect(response.status, path).toBe(303);
      expect(response.headers.get("location")).toMatch(/^\/app\/login\?next=/);
    }
  });
});

describe("password reset", () => {
  it("builds the mailed link on the configured public origin, not on the Host the request named", async () => {
    const { email } = await signedUpClient();
    await requestPasswordReset(
      { ...env, PUBLIC_BASE_URL: "https://media.example/" },
      email,
      "http://forged.example:8787",
      Date.now(),
    );
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
    const link = new RegExp(`to ${email.replace(/[.+]/g, "\\$&")}`).test(outbox)
      ? outbox.match(/href="(http:\/\/api\.test\/app\/reset\/[^"]+)"/)![1]
      : "";
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

describe("email verification", () => {
  it("keeps keys, webhooks and payments closed until the mailed link is opened, for that address only", async () => {
    const { client, email, accountId } = await signedUpClient(uniqueEmail(), PASSWORD, BASE, { verified: false });
    const overview = await (await client.get("/app")).text();
    expect(overview).toContain("Confirm your email");
    // Refused before anything is made or any payment page opened.
    const key = await client.createKey({ name: "too early", mode: "live" });
    expect(key.status).toBe(400);
    expect(await key.text()).toContain("Confirm the account&#39;s email first");
    expect(
      (await env.DB.prepare("SELECT COUNT(*) AS n FROM api_keys WHERE account_id = ?")
        .bind(accountId)
        .first<{ n: number }>())!.n,
    ).toBe(0);
    const checkout = await client.post("/app/billing/checkout", { offer: "pack_10k" });
    expect(checkout.status).toBe(400);
    expect(
      (await env.DB.prepare("SELECT COUNT(*) AS n FROM payments WHERE account_id = ?")
        .bind(accountId)
        .first<{ n: number }>())!.n,
    ).toBe(0);
    const hook = await client.post("/app/webhooks", { url: "https://example.com/hook", mode: "live" });
    expect(hook.status).toBe(400);
    expect((await accountRow(accountId)).webhook_url).toBeNull();

    const link = await mailedLink(email, "/app/verify/");
    const token = new URL(link).pathname.split("/").pop()!;
    // A tampered link, or one for another address, verifies nothing.
    expect((await call(`/app/verify/${token.slice(0, -2)}xx`)).status).toBe(400);
    expect((await accountRow(accountId)).email_verified_at).toBeNull();
    // Opened in any browser, the link confirms the address; a second opening changes nothing.
    expect((await call(new URL(link).pathname)).status).toBe(200);
    const verifiedAt = (await accountRow(accountId)).email_verified_at;
    expect(verifiedAt).toBeGreaterThan(0);
    expect((await call(new URL(link).pathname)).status).toBe(200);
    expect((await accountRow(accountId)).email_verified_at).toBe(verifiedAt);
    expect(await (await client.get("/app")).text()).not.toContain("Confirm your email");
    expect((await client.createKey({ name: "now", mode: "live" })).status).toBe(200);
  });

  it("sends the link again on request, and not to anyone else", async () => {
    const { client, email } = await signedUpClient(uniqueEmail(), PASSWORD, BASE, { verified: false });
    await mailedLink(email, "/app/verify/");
    const before = (await env.DB.prepare("SELECT COUNT(*) AS n FROM dev_outbox WHERE to_email = ?")
      .bind(email)
      .first<{ n: number }>())!.n;
    const again = await client.post("/app/verify/send", {});
    expect(again.status).toBe(303);
    expect(again.headers.get("location")).toBe("/app?done=verification-sent");
    const after = (await env.DB.prepare("SELECT COUNT(*) AS n FROM dev_outbox WHERE to_email = ?")
      .bind(email)
      .first<{ n: number }>())!.n;
    expect(after).toBe(before + 1);
    // Without a session the form only leads to sign-in.
    expect((await new WebClient().post("/app/verify/send", {})).status).toBe(303);
  });

  it("lets the owner of an email take it back from whoever signed up with it: the reset signs them out and clears what they set", async () => {
    // A stranger signs up with the owner's address; unverified, the account can make nothing that
    // lasts, but an operator key and webhook URLs stand in for anything set before this existed.
    const {
      client: stranger,
      email,
      accountId,
    } = await signedUpClient(uniqueEmail(), "the stranger's password", BASE, { verified: false });
    const key = await call(`/api/admin/accounts/${accountId}/keys`, {
      method: "POST",
      headers: { authorization: "Bearer test-admin-token" },
    });
    const { apiKey } = (await key.json()) as { apiKey: string };
    await env.DB.prepare(
      "UPDATE accounts SET webhook_url = 'https://attacker.example/live', test_webhook_url = 'https://attacker.example/test' WHERE id = ?",
    )
      .bind(accountId)
      .run();
    const brandId = `brd_recover_${Date.now()}`;
    await env.DB.prepare(
      "INSERT INTO brands (id, account_id, name, time_zone, requires_approval, webhook_url, created_at) VALUES (?, ?, 'Owner brand', 'UTC', 0, 'https://attacker.example/brand', ?)",
    )
      .bind(brandId, accountId, Date.now())
      .run();
    await env.DB.prepare(
      "INSERT INTO brand_channels (id, brand_id, network, config, created_at) VALUES (?, ?, 'webhook', '{\"url\":\"https://attacker.example/posts\"}', ?)",
    )
      .bind(`chn_recover_${Date.now()}`, brandId, Date.now())
      .run();
    // The stranger read both signing secrets, and rotated the live one (its previous one would sign for 24 h more).
    const secretsBefore = [
      (await getAccountWebhook(env, accountId, "live")).secret,
      (await getAccountWebhook(env, accountId, "test")).secret,
    ];
    await rotateAccountWebhookSecret(env, accountId, Date.now());

    // The owner reads the mailbox: reset, with the default box (revoke keys, clear webhooks) checked.
    expect((await new WebClient().post("/app/reset", { email })).status).toBe(200);
    const link = await mailedLink(email, "/app/reset/");
    const page = await (await call(new URL(link).pathname)).text();
    expect(page).toMatch(/<input type="checkbox" name="secure" checked=""\s*\/?>/);
    const owner = new WebClient();
    expect(
      (await owner.post(new URL(link).pathname, { password: "the owner's new password", secure: "on" })).status,
    ).toBe(303);

    expect((await stranger.get("/app")).status).toBe(303);
    expect((await call("/api/v1/account", { headers: { authorization: `Bearer ${apiKey}` } })).status).toBe(401);
    const row = await accountRow(accountId);
    expect([row.webhook_url, row.test_webhook_url, row.email_verified_at > 0]).toEqual([null, null, true]);
    const brand = await env.DB.prepare("SELECT webhook_url FROM brands WHERE account_id = ?")
      .bind(accountId)
      .first<{ webhook_url: string | null }>();
    expect(brand!.webhook_url).toBeNull();
    expect(
      await env.DB.prepare("SELECT COUNT(*) AS n FROM brand_channels WHERE brand_id = ?").bind(brandId).first("n"),
    ).toBe(0);
    // New secrets in both modes, and no overlap: what the stranger read signs nothing any more.
    const live = await getAccountWebhook(env, accountId, "live");
    const test = await getAccountWebhook(env, accountId, "test");
    expect([live.secret, test.secret]).not.toContain(secretsBefore[0]);
    expect([live.secret, test.secret]).not.toContain(secretsBefore[1]);
    expect([row.webhook_secret_rotated_at, row.test_webhook_secret_rotated_at]).toEqual([null, null]);
    // The owner is in, and sees where webhooks go (nowhere now).
    const hooks = await (await owner.get("/app/webhooks")).text();
    expect(hooks).toContain("Live keys");
    expect(hooks).not.toContain("attacker.example");
  });

  it("needs PUBLIC_BASE_URL for mailed links outside local development", async () => {
    const { requestPasswordReset } = await import("../../src/services/accounts/auth");
    const { email } = await signedUpClient();
    const production = { ...env, DEV_MODE: "false", PUBLIC_BASE_URL: undefined } as typeof env;
    await expect(requestPasswordReset(production, email, "https://attacker.example", Date.now())).rejects.toThrow(
      /PUBLIC_BASE_URL/,
    );
  });
});
