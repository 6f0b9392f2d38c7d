import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ADMIN, balanceOf, call, expectError, expectLedgerConsistent, newAccount, postJson } from "../helpers/api";

describe("operator API", () => {
  it("creates an account with credits and a plan, and a key that works once shown", async () => {
    const email = `Owner-${Date.now()}@Example.com`;
    const created = await postJson("/api/admin/accounts", { email, credits: 500, plan: "pro" }, ADMIN);
    expect(created.status).toBe(200);
    const account = (await created.json()) as { accountId: string; email: string; balance: number; plan: string };
    expect(account.accountId).toMatch(/^acct_/);
    expect(account.email).toBe(email.toLowerCase());
    expect(account.plan).toBe("pro");
    expect(account.balance).toBe(500 + 9000);

    const keyResponse = await call(`/api/admin/accounts/${account.accountId}/keys`, { method: "POST", headers: ADMIN });
    const { keyId, apiKey } = (await keyResponse.json()) as { keyId: string; apiKey: string };
    expect(keyId).toMatch(/^key_/);
    expect(apiKey).toMatch(/^mk_live_[A-Za-z0-9_-]{32}$/);
    // Only a hash is stored.
    const stored = await env.DB.prepare("SELECT * FROM api_keys WHERE id = ?")
      .bind(keyId)
      .first<Record<string, string>>();
    expect(JSON.stringify(stored)).not.toContain(apiKey);

    const me = await call("/api/v1/account", { headers: { authorization: `Bearer ${apiKey}` } });
    expect(await me.json()).toEqual({ balance: 9500, email: email.toLowerCase() });
  });

  it("adds and removes purchased credits, never below zero", async () => {
    const account = await newAccount({ credits: 10 });
    const add = await postJson(
      `/api/admin/accounts/${account.accountId}/credits`,
      { amount: 90, reason: "top-up" },
      ADMIN,
    );
    expect(await add.json()).toEqual({ balance: 100 });
    const remove = await postJson(
      `/api/admin/accounts/${account.accountId}/credits`,
      { amount: -101, reason: "correction" },
      ADMIN,
    );
    await expectError(
      remove,
      400,
      "invalid_request",
      /^amount: only purchased credits can be removed, and the account has 100 /,
    );
    expect(await balanceOf(account)).toBe(100);
    await expectLedgerConsistent(account);
    await expectError(
      await postJson(`/api/admin/accounts/${account.accountId}/credits`, { amount: "5", reason: "x" }, ADMIN),
      400,
      "invalid_request",
      /amount/,
    );
    await expectError(
      await postJson(`/api/admin/accounts/acct_nope/credits`, { amount: 5, reason: "x" }, ADMIN),
      404,
      "not_found",
    );
  });

  it("refuses duplicate emails, bad plans and a wrong admin token", async () => {
    const email = `dup-${Date.now()}@example.com`;
    expect((await postJson("/api/admin/accounts", { email }, ADMIN)).status).toBe(200);
    await expectError(await postJson("/api/admin/accounts", { email }, ADMIN), 400, "invalid_request", /email/);
    await expectError(
      await postJson("/api/admin/accounts", { email: "x@y.z", plan: "gold" }, ADMIN),
      400,
      "invalid_request",
      /plan/,
    );
    await expectError(
      await postJson("/api/admin/accounts", { email: "not-an-email" }, ADMIN),
      400,
      "invalid_request",
      /email/,
    );
    await expectError(
      await postJson("/api/admin/accounts", { email: "a@b.cd" }, { authorization: "Bearer wrong" }),
      401,
      "unauthorized",
    );
    await expectError(await postJson("/api/admin/accounts", { email: "a@b.cd" }), 401, "unauthorized");
  });
});

describe("API key authentication", () => {
  it("answers 401 unauthorized for missing, malformed, unknown and revoked keys", async () => {
    const account = await newAccount({ credits: 5 });
    const missing = await call("/api/v1/account");
    // RFC 6750: the scheme, and error="invalid_token" when a token came and was refused.
    expect(missing.headers.get("www-authenticate")).toBe('Bearer realm="api"');
    await expectError(missing, 401, "unauthorized");
    const wrong = await call("/api/v1/account", { headers: { authorization: "Basic abc" } });
    expect(wrong.headers.get("www-authenticate")).toBe('Bearer realm="api", error="invalid_token"');
    await expectError(wrong, 401, "unauthorized");
    await expectError(
      await call("/api/v1/account", { headers: { authorization: "Bearer mk_live_short" } }),
      401,
      "unauthorized",
    );
    await expectError(
      await call("/api/v1/account", { headers: { authorization: `Bearer mk_live_${"A".repeat(32)}` } }),
      401,
      "unauthorized",
    );
    expect((await call("/api/v1/account", { headers: account.auth })).status).toBe(200);

    const revoke = await call(`/api/admin/keys/${account.keyId}`, { method: "DELETE", headers: ADMIN });
    expect(revoke.status).toBe(200);
    await expectError(await call("/api/v1/account", { headers: account.auth }), 401, "unauthorized", /revoked/);
  });

  it("gives REST access only to payg, pro and scale", async () => {
    for (const plan of ["payg", "pro", "scale"]) {
      const account = await newAccount({ plan });
      expect((await call("/api/v1/account", { headers: account.auth })).status).toBe(200);
    }
    for (const plan of ["solo", "starter"]) {
      const account = await newAccount({ plan });
      await expectError(
        await call("/api/v1/account", { headers: account.auth }),
        401,
        "unauthorized",
        new RegExp(plan),
      );
    }
  });

  it("checks the key before the body: 401 wins over 400", async () => {
    await expectError(await postJson("/api/v1/trim", { start: "x" }), 401, "unauthorized");
  });
});

describe("errors and documentation", () => {
  it("uses the error shape for unknown routes and malformed JSON", async () => {
    const account = await newAccount({ credits: 5 });
    await expectError(await call("/nope"), 404, "not_found");
    await expectError(await call("/api/v1/nope", { headers: account.auth }), 404, "not_found");
    // A path that names no route is 404 with or without a key; a route's own path still asks for one.
    await expectError(await call("/api/v1/nope"), 404, "not_found");
    await expectError(
      await call("/api/v1/jobs/job_1/nope", { headers: { authorization: "Bearer mk_live_wrong" } }),
      404,
      "not_found",
    );
    await expectError(await call("/api/v1/account", { method: "DELETE" }), 404, "not_found");
    await expectError(await call("/api/v1/account"), 401, "unauthorized");
    await expectError(await call("/api/v1/jobs/job_1"), 401, "unauthorized");
    await expectError(await call("/api/v1/posts/post_1/media"), 401, "unauthorized");
    await expectError(
      await call("/api/v1/uploads/multipart/up_1/parts/1", { method: "PUT", body: "x" }),
      401,
      "unauthorized",
    );
    expect((await call("/api/v1/account", { method: "HEAD" })).status).toBe(401);
    const malformed = await call("/api/v1/trim", {
      method: "POST",
      headers: { ...account.auth, "content-type": "application/json" },
      body: "{",
    });
    await expectError(malformed, 400, "invalid_request", /JSON/);
  });

  it("publishes an OpenAPI 3.1 document without a key, every tool and error included", async () => {
    const response = await call("/api/v1/openapi.json");
    expect(response.status).toBe(200);
    const doc = (await response.json()) as {
      openapi: string;
      info: { version: string };
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
    };
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.info.version).toBe("1.0.0");
    for (const tool of [
      "subtitles",
      "transcribe",
      "clean-audio",
      "extract-audio",
      "convert",
      "merge",
      "watermark",
      "trim",
      "text-to-speech",
      "voice-change",
    ]) {
      const op = doc.paths[`/api/v1/${tool}`].post;
      expect(Object.keys(op.responses).sort()).toEqual(["200", "400", "401", "402", "429", "500"]);
    }
    expect(doc.paths["/api/v1/uploads"].post).toBeDefined();
    expect(doc.paths["/api/v1/jobs/{id}"].get.responses["404"]).toBeDefined();
    expect(doc.paths["/api/v1/account"].get).toBeDefined();
    // Only the contract's paths; the operator's routes have their own document, behind the admin token.
    expect(Object.keys(doc.paths).filter((path) => !path.startsWith("/api/v1/"))).toEqual([]);
    expect((await call("/api/admin/openapi.json")).status).toBe(401);
    const admin = (await (await call("/api/admin/openapi.json", { headers: ADMIN })).json()) as {
      paths: Record<string, unknown>;
    };
    expect(Object.keys(admin.paths)).toEqual(
      expect.arrayContaining([
        "/api/admin/accounts",
        "/api/admin/accounts/{accountId}/keys",
        "/api/admin/accounts/{accountId}/credits",
      ]),
    );
    expect(Object.keys(admin.paths).every((path) => path.startsWith("/api/admin/"))).toBe(true);
    // Every operation is named once across both documents, so generated clients get stable method names.
    const operationIds = [doc, admin].flatMap((document) =>
      Object.values(document.paths as Record<string, Record<string, { operationId?: string }>>).flatMap((item) =>
        Object.values(item).map((op) => op.operationId),
      ),
    );
    expect(operationIds.every((id) => typeof id === "string" && /^[a-z][A-Za-z]+$/.test(id))).toBe(true);
    expect(new Set(operationIds).size).toBe(operationIds.length);
    expect(doc.paths["/api/v1/clean-audio"].post).toMatchObject({ operationId: "cleanAudio" });
    expect(doc.paths["/api/v1/jobs/{id}"].get).toMatchObject({ operationId: "getJob" });
    // /docs is rendered on the server from that document: every operation, its fields, no script, no CDN.
    const docs = await call("/docs");
    expect(docs.status).toBe(200);
    expect(docs.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    const html = await docs.text();
    expect(html).toContain('href="/api/v1/openapi.json"');
    expect(html).not.toMatch(/<script|https?:\/\/cdn/i);
    const operations = Object.values(doc.paths as Record<string, Record<string, unknown>>).reduce(
      (n, item) => n + Object.keys(item).filter((m) => ["get", "post", "put", "patch", "delete"].includes(m)).length,
      0,
    );
    expect(html.match(/<section /g)).toHaveLength(operations);
    expect(html).toContain("<code>POST /api/v1/trim</code>");
    expect(html).toMatch(/<code>opacity<\/code><\/td><td>integer, 10 to 100, default 80<\/td>/);
    // How to authenticate, the error shape once, each success answer's fields (nested ones by
    // their path) and the document's examples.
    expect(html).toContain("<code>Authorization: Bearer mk_live_...</code>");
    expect(html).toMatch(/<code>error\.code<\/code> \(required\)<\/td><td>string, one of &quot;invalid_request&quot;/);
    expect(html).toContain("<td><code>publishedAt</code> (required)</td><td>string or null</td>");
    const trim = html.slice(
      html.indexOf("<code>POST /api/v1/trim</code>"),
      html.indexOf("</section>", html.indexOf("<code>POST /api/v1/trim</code>")),
    );
    expect(trim).toContain("<code>creditsRemaining</code>");
    expect(trim).toContain("<code>jobId</code>");
    const job = html.slice(
      html.indexOf("<code>GET /api/v1/jobs/{id}</code>"),
      html.indexOf("</section>", html.indexOf("<code>GET /api/v1/jobs/{id}</code>")),
    );
    expect(job).toContain("<code>result.url</code> (required)");
    expect(html).toMatch(/Example: <code>&quot;keynote\.mp4&quot;<\/code>/);
    // Markdown code spans of the descriptions are shown as code, not as backticks.
    expect(html).toContain("<code>rate_limited</code>");
    expect(html).not.toMatch(/`rate_limited`/);
  });
});
