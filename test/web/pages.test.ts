import { env } from "cloudflare:workers";
import { inject } from "vitest";
import { describe, expect, it } from "vitest";
import { ADMIN, call, callTool, fixtureBytes, postJson, uploadBytes } from "../helpers/api";
import { accountRow, expectLedgerMatches, PASSWORD, signedUpClient, uniqueEmail, WebClient } from "../helpers/web";
import { displayName } from "../../src/lib/display-name";

const KEY = /mk_live_[A-Za-z0-9_-]{32}/;

describe("API keys page", () => {
  it("creates a named key shown once, lists it by prefix with its last use, and revokes it", async () => {
    const { client } = await signedUpClient();
    const created = await client.createKey({ name: "laptop" });
    expect(created.status).toBe(200);
    const html = await created.text();
    const apiKey = html.match(KEY)![0];
    expect(html).toContain("shown only once");
    expect(html).toContain('data-copy="new-key"');
    const list = await (await client.get("/app/keys")).text();
    expect(list).not.toContain(apiKey);
    expect(list).toContain(apiKey.slice(0, 12));
    expect(list).toContain("laptop");
    expect(list).toContain("never");
    const account = await call("/api/v1/account", { headers: { authorization: `Bearer ${apiKey}` } });
    expect(account.status).toBe(200);
    expect(((await account.json()) as { balance: number }).balance).toBe(100);
    expect(await (await client.get("/app/keys")).text()).not.toContain(">never<");
    const keyId = list.match(/data-key-id="(key_[A-Z0-9]+)"/)![1];
    const revoke = await client.post(`/app/keys/${keyId}/revoke`, {});
    expect(revoke.status).toBe(303);
    expect((await call("/api/v1/account", { headers: { authorization: `Bearer ${apiKey}` } })).status).toBe(401);
    expect(await (await client.get("/app/keys?done=revoked")).text()).toContain("revoked");
    // Only the table's own messages: an inherited name is no notice.
    for (const done of ["constructor", "__proto__", "toString"])
      expect((await client.get(`/app/keys?done=${done}`)).status).toBe(200);
  });

  it("creates a test key next to live keys, listed as test, spending nothing", async () => {
    const { client, accountId } = await signedUpClient();
    const html = await (await client.createKey({ name: "staging", mode: "test" })).text();
    const apiKey = html.match(/mk_test_[A-Za-z0-9_-]{32}/)![0];
    expect(html).toContain("Test key “staging” created.");
    expect(html).toContain("results are marked TEST");
    const list = await (await client.get("/app/keys")).text();
    expect(list).toMatch(/<select name="mode">/);
    expect(list).toContain('<span class="badge queued">test</span>');
    const auth = { authorization: `Bearer ${apiKey}` };
    const upload = await uploadBytes(
      { accountId, keyId: "", apiKey, auth },
      await fixtureBytes("tone.mp3"),
      "tone.mp3",
    );
    const { uploadId } = (await upload.json()) as { uploadId: string };
    const job = await callTool({ accountId, keyId: "", apiKey, auth }, "extract-audio", { uploadId });
    const { jobId, creditsUsed } = (await job.json()) as { jobId: string; creditsUsed: number };
    expect(creditsUsed).toBe(0);
    // The jobs page tells a test key's job from a live one.
    const row = (await (await client.get("/app/jobs")).text()).match(
      new RegExp(`<tr data-job-id="${jobId}">([\\s\\S]*?)</tr>`),
    )![1];
    expect(row).toContain('<span class="badge queued">test</span>');
    expect(((await (await call("/api/v1/account", { headers: auth })).json()) as { balance: number }).balance).toBe(
      100,
    );
    expect((await client.createKey({ name: "odd", mode: "sandbox" })).status).toBe(400);
  });

  it("makes one key from one form: a reload or double submit of it creates nothing more, a form without its token is refused", async () => {
    const { client, accountId } = await signedUpClient();
    const page = await (await client.get("/app/keys")).text();
    const nonce = page.match(/name="nonce" value="([^"]+)"/)![1];
    const first = await client.post("/app/keys", { name: "laptop", nonce });
    expect(first.status).toBe(200);
    const apiKey = (await first.text()).match(KEY)![0];
    // The browser's "resubmit the form?" on reload sends the same body again.
    const again = await client.post("/app/keys", { name: "laptop", nonce });
    expect(again.status).toBe(303);
    expect(again.headers.get("location")).toBe("/app/keys?done=key-already-created");
    const notice = await (await client.get("/app/keys?done=key-already-created")).text();
    expect(notice).toContain("already created its key");
    expect(notice).not.toMatch(KEY);
    // Each rendering of the page carries a fresh token, so a second key is one more visit away.
    expect(notice.match(/name="nonce" value="([^"]+)"/)![1]).not.toBe(nonce);
    const missing = await client.post("/app/keys", { name: "no token" });
    expect(missing.status).toBe(400);
    expect(await missing.text()).toContain("reload the page");
    // Another account may send the same token: tokens are scoped to the account.
    const other = await signedUpClient();
    expect((await other.client.post("/app/keys", { name: "theirs", nonce })).status).toBe(200);
    const keys = await env.DB.prepare("SELECT key_hash FROM api_keys WHERE account_id = ?")
      .bind(accountId)
      .all<{ key_hash: string }>();
    expect(keys.results).toHaveLength(1);
    expect((await call("/api/v1/account", { headers: { authorization: `Bearer ${apiKey}` } })).status).toBe(200);
  });

  it("drops text-direction controls from key names (a name cannot read backwards), and refuses a name of nothing else", async () => {
    const { client, accountId } = await signedUpClient();
    const created = await client.createKey({ name: "\u202Egpj.exe\u202C backup" });
    expect(created.status).toBe(200);
    const row = await env.DB.prepare("SELECT name FROM api_keys WHERE account_id = ?")
      .bind(accountId)
      .first<{ name: string }>();
    expect(row!.name).toBe("gpj.exe backup");
    expect(await (await client.get("/app/keys")).text()).not.toContain("\u202E");
    // Arabic keeps its letters.
    expect((await client.createKey({ name: "مفتاح الإنتاج" })).status).toBe(200);
    expect((await client.createKey({ name: "\u2067\u202E" })).status).toBe(400);
    // Control characters read as a space, and the 60-character limit counts characters (60 emoji
    // are 120 UTF-16 units). A lone surrogate half is dropped (a form's encoding already makes it U+FFFD).
    expect((await client.createKey({ name: "nul\u0000x\ttab\nline end" })).status).toBe(200);
    expect(displayName("half \uD800pair\uDC00 \uD83C\uDFAC")).toBe("half pair 🎬");
    expect((await client.createKey({ name: "🎬".repeat(60) })).status).toBe(200);
    expect((await client.createKey({ name: "🎬".repeat(61) })).status).toBe(400);
    const names = await env.DB.prepare("SELECT name FROM api_keys WHERE account_id = ? ORDER BY rowid")
      .bind(accountId)
      .all<{ name: string }>();
    expect(names.results.map((r) => r.name)).toEqual([
      "gpj.exe backup",
      "مفتاح الإنتاج",
      "nul x tab line end",
      "🎬".repeat(60),
    ]);
  });

  it("cannot revoke another account's key, and refuses an empty name", async () => {
    const { client } = await signedUpClient();
    const other = await signedUpClient();
    const html = await (await other.client.createKey({ name: "theirs" })).text();
    const otherKey = html.match(KEY)![0];
    const otherId = (await env.DB.prepare("SELECT id FROM api_keys WHERE account_id = ?")
      .bind(other.accountId)
      .first<{ id: string }>())!.id;
    expect((await client.post(`/app/keys/${otherId}/revoke`, {})).status).toBe(400);
    expect((await call("/api/v1/account", { headers: { authorization: `Bearer ${otherKey}` } })).status).toBe(200);
    expect((await client.createKey({ name: "  " })).status).toBe(400);
  });

  it("refuses keys on plans without REST access, saying why", async () => {
    const { client, accountId } = await signedUpClient();
    const before = (await (await client.createKey({ name: "from payg" })).text()).match(KEY)![0];
    expect((await client.post("/app/billing/plan", { plan: "solo" })).status).toBe(303);
    expect((await accountRow(accountId)).plan).toBe("solo");
    const page = await (await client.get("/app/keys")).text();
    expect(page).toContain("REST API access is not included in the solo plan");
    // The key made on pay as you go stays listed, shown as paused by the plan, and answers 401.
    expect(page).toMatch(
      /<span class="badge" title="REST API access is not included in the solo plan[^"]*">\s*paused: plan/,
    );
    expect(page).not.toContain('class="badge active"');
    // The overview says so too, rather than counting the key as active.
    const overview = await (await client.get("/app")).text();
    expect(overview).toContain("1 API key, paused by the plan: REST API access is not included in the solo plan");
    expect(overview).not.toContain("active API key");
    expect((await call("/api/v1/account", { headers: { authorization: `Bearer ${before}` } })).status).toBe(401);
    const refused = await client.createKey({ name: "nope" });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain("not included in the solo plan");
    const keys = await env.DB.prepare("SELECT COUNT(*) AS n FROM api_keys WHERE account_id = ?")
      .bind(accountId)
      .first<{ n: number }>();
    expect(keys!.n).toBe(1);
  });
});

describe("overview, ledger and jobs", () => {
  it("shows balance buckets, a usage chart, the ledger with filter and CSV, and recent jobs", async () => {
    const { client, accountId } = await signedUpClient();
    const apiKey = (await (await client.createKey({ name: "ci" })).text()).match(KEY)![0];
    const auth = { authorization: `Bearer ${apiKey}` };
    const upload = (await (
      await uploadBytes({ accountId, keyId: "", apiKey, auth }, await fixtureBytes("clip.mp4"), "clip.mp4")
    ).json()) as { uploadId: string };
    const job = (await (
      await callTool({ accountId, keyId: "", apiKey, auth }, "extract-audio", { uploadId: upload.uploadId })
    ).json()) as { jobId: string };

    const overview = await (await client.get("/app")).text();
    expect(overview).toMatch(/data-testid="balance">97</);
    expect(overview).toMatch(/data-testid="purchased-credits">97</);
    expect(overview).toMatch(/data-testid="plan-credits">0</);
    expect(overview).toContain("<svg");
    expect(overview).toMatch(/data-tool="extract-audio"[^>]*data-day="\d{4}-\d{2}-\d{2}"/);
    expect(overview).toContain("extract-audio (3)");

    const ledger = await (await client.get("/app/ledger")).text();
    expect(ledger).toContain('data-kind="debit"');
    expect(ledger).toContain('data-kind="grant"');
    const debits = await (await client.get("/app/ledger?kind=debit")).text();
    expect(debits).toContain('data-kind="debit"');
    expect(debits).not.toContain('data-kind="grant"');
    const csv = await client.get("/app/ledger.csv");
    expect(csv.headers.get("content-type")).toMatch(/text\/csv/);
    expect(csv.headers.get("content-disposition")).toMatch(/attachment; filename="ledger-/);
    const lines = (await csv.text()).trim().split("\r\n");
    expect(lines[0]).toBe("id,created_at,kind,amount,plan_delta,purchased_delta,job_id,reason");
    expect(lines.slice(1).map((l) => l.split(",")[2])).toEqual(['"grant"', '"debit"']);
    expect(lines[2]).toContain(`"${job.jobId}"`);

    const jobs = await (await client.get("/app/jobs")).text();
    expect(jobs).toContain(`data-job-id="${job.jobId}"`);
    expect(jobs).toContain("extract-audio");
    await expectLedgerMatches(accountId);
  });

  it("pages the ledger", async () => {
    const { client, accountId } = await signedUpClient();
    for (let i = 0; i < 55; i++)
      await postJson(`/api/admin/accounts/${accountId}/credits`, { amount: 1, reason: `gift ${i}` }, ADMIN);
    const first = await (await client.get("/app/ledger")).text();
    expect(first.match(/data-kind=/g)).toHaveLength(50);
    const older = first.match(/href="(\/app\/ledger\?before=[^"]+)"/)![1].replace(/&amp;/g, "&");
    const second = await (await client.get(older)).text();
    expect(second.match(/data-kind=/g)).toHaveLength(6);
  });
});

describe("billing against the local Stripe", () => {
  it("starts a Checkout Session for a pack with amounts from the catalog, and lists no pending order as paid", async () => {
    const { client, accountId } = await signedUpClient();
    const response = await client.post("/app/billing/checkout", { offer: "pack_25k", amount: "1" });
    expect(response.status).toBe(303);
    const location = response.headers.get("location")!;
    expect(location.startsWith(`${inject("stripeBaseUrl")}/c/pay/cs_test_`)).toBe(true);
    const sessionId = location.split("/").pop()!;
    const session = (await (
      await fetch(`${inject("stripeBaseUrl")}/v1/checkout/sessions/${sessionId}`, {
        headers: { authorization: "Bearer sk_test_workers" },
      })
    ).json()) as Record<string, any>;
    expect(session.amount_total).toBe(4500);
    expect(session.mode).toBe("payment");
    expect(session.metadata).toEqual({ account_id: accountId, offer: "pack_25k" });
    const account = await accountRow(accountId);
    expect(account.stripe_customer_id).toMatch(/^cus_test_/);
    expect(account.purchased_credits).toBe(100);
    const billing = await (await client.get("/app/billing")).text();
    expect(billing).toContain("No payments yet.");
    expect(billing).toContain("39 € / month");
  });

  it("refuses a top-up on pay as you go, a pack on a plan, an unknown offer, and makes no session", async () => {
    const { client, accountId } = await signedUpClient();
    const topup = await client.post("/app/billing/checkout", { offer: "topup_3k" });
    expect(topup.status).toBe(400);
    expect(await topup.text()).toContain("Top-ups are for subscribers");
    expect((await client.post("/app/billing/checkout", { offer: "pack_1m" })).status).toBe(400);
    await client.post("/app/billing/plan", { plan: "solo" });
    const pack = await client.post("/app/billing/checkout", { offer: "pack_10k" });
    expect(pack.status).toBe(400);
    const count = await env.DB.prepare("SELECT COUNT(*) AS n FROM payments WHERE account_id = ?")
      .bind(accountId)
      .first<{ n: number }>();
    expect(count!.n).toBe(0);
    const topupOnPlan = await client.post("/app/billing/checkout", { offer: "topup_3k" });
    expect(topupOnPlan.status).toBe(303);
  });

  it("sends a paid plan through subscription Checkout with the price found by lookup key", async () => {
    const { client, accountId } = await signedUpClient();
    const response = await client.post("/app/billing/plan", { plan: "scale" });
    expect(response.status).toBe(303);
    const sessionId = response.headers.get("location")!.split("/").pop()!;
    const session = (await (
      await fetch(`${inject("stripeBaseUrl")}/v1/checkout/sessions/${sessionId}`, {
        headers: { authorization: "Bearer sk_test_workers" },
      })
    ).json()) as Record<string, any>;
    expect(session.mode).toBe("subscription");
    expect(session.amount_total).toBe(7900);
    expect(session.metadata).toEqual({ account_id: accountId, plan: "scale" });
    expect((await accountRow(accountId)).plan).toBe("payg");
    expect((await client.post("/app/billing/plan", { plan: "platinum" })).status).toBe(400);
  });

  it("moves between Solo and pay as you go with ledger entries", async () => {
    const { client, accountId } = await signedUpClient();
    // The answer is a redirect (a reload does not post again) carrying the notice signed for this account.
    const chosen = await client.post("/app/billing/plan", { plan: "solo" });
    expect(chosen.status).toBe(303);
    const location = chosen.headers.get("location")!;
    expect(location).toMatch(/^\/app\/billing\?notice=/);
    expect(await (await client.get(location)).text()).toContain("You are on the Solo plan: 300 credits now");
    // Another account, a tampered or garbled token: the billing page without the notice.
    const billingWithout = async (page: Response) => {
      expect(page.status).toBe(200);
      const html = await page.text();
      expect(html).toContain("<h1>Billing</h1>");
      expect(html).not.toContain("You are on the Solo plan");
    };
    const other = await signedUpClient();
    await billingWithout(await other.client.get(location));
    for (const garbage of [
      `${location.slice("/app/billing?notice=".length, -3)}abc`,
      "abc",
      "a.b",
      "%FF",
      "%FF.%FF",
      "..",
      "a.b.c",
      "x".repeat(5000),
    ]) {
      await billingWithout(await client.get(`/app/billing?notice=${garbage}`));
    }
    let account = await accountRow(accountId);
    expect([account.plan, account.plan_credits, account.purchased_credits]).toEqual(["solo", 300, 100]);
    expect(account.plan_period_end).toBeGreaterThan(Date.now());
    expect((await client.post("/app/billing/plan", { plan: "solo" })).status).toBe(400);
    await client.post("/app/billing/plan", { plan: "payg" });
    account = await accountRow(accountId);
    expect([account.plan, account.plan_credits, account.purchased_credits]).toEqual(["payg", 0, 100]);
    await expectLedgerMatches(accountId);
    expect((await client.post("/app/billing/cancel", {})).status).toBe(400);
  });

  it("grants Solo's allowance once per period: leaving Solo and coming back does not refill it", async () => {
    const { client, accountId } = await signedUpClient();
    await client.post("/app/billing/plan", { plan: "solo" });
    const firstPeriodEnd = (await accountRow(accountId)).plan_period_end;
    for (let round = 0; round < 2; round++) {
      await client.post("/app/billing/plan", { plan: "payg" });
      const back = await client.post("/app/billing/plan", { plan: "solo" });
      expect(back.status).toBe(303);
      expect(await (await client.get(back.headers.get("location")!)).text()).toContain("already granted");
      const account = await accountRow(accountId);
      // The period goes on where it was; no second 300.
      expect([account.plan, account.plan_credits, account.purchased_credits, account.plan_period_end]).toEqual([
        "solo",
        0,
        100,
        firstPeriodEnd,
      ]);
    }
    const grants = await env.DB.prepare("SELECT COUNT(*) AS n FROM ledger WHERE account_id = ? AND kind = 'plan_grant'")
      .bind(accountId)
      .first<{ n: number }>();
    expect(grants?.n).toBe(1);
    await expectLedgerMatches(accountId);
    // Once the period is over (the cron has not run yet), coming back starts a new one with the allowance.
    await client.post("/app/billing/plan", { plan: "payg" });
    await env.DB.prepare("UPDATE accounts SET plan_period_end = ? WHERE id = ?")
      .bind(Date.now() - 1000, accountId)
      .run();
    await client.post("/app/billing/plan", { plan: "solo" });
    const renewed = await accountRow(accountId);
    expect([renewed.plan, renewed.plan_credits]).toEqual(["solo", 300]);
    expect(renewed.plan_period_end).toBeGreaterThan(Date.now());
    await expectLedgerMatches(accountId);
  });

  it("remembers only a Solo period: a plan set by the operator that moves to Solo gets Solo's allowance", async () => {
    for (const via of [[], ["payg"]]) {
      const { client, accountId } = await signedUpClient();
      await env.DB.prepare(
        "UPDATE accounts SET plan = 'pro', plan_credits = 9000, plan_period_granted = 9000, plan_period_end = ? WHERE id = ?",
      )
        .bind(Date.now() + 10 * 24 * 3600 * 1000, accountId)
        .run();
      for (const plan of [...via, "solo"]) expect((await client.post("/app/billing/plan", { plan })).status).toBe(303);
      const account = await accountRow(accountId);
      expect([account.plan, account.plan_credits, account.plan_period_granted]).toEqual(["solo", 300, 300]);
    }
  });
});

describe("cloned voice page", () => {
  it("refuses a too-short sample with a clear message and registers nothing", async () => {
    const { client, accountId } = await signedUpClient();
    const form = new FormData();
    form.append("file", new File([await fixtureBytes("clip.mp4")], "clip.mp4"));
    const response = await client.post("/app/voice", form);
    expect(response.status).toBe(400);
    const short = await response.text();
    expect(short).toContain("at least 10 s of speech");
    expect(short).toMatch(/The sample lasts [\d.]+ s/);
    // In the form's words: no API field names, no image formats.
    const empty = await client.post("/app/voice", new FormData());
    expect(await empty.text()).toContain("Choose a sample file: audio, or a video with sound.");
    const text = new FormData();
    text.append("file", new File([new TextEncoder().encode("not a sound at all, just words")], "notes.txt"));
    const refused = await (await client.post("/app/voice", text)).text();
    const notice = refused.match(/class="notice error"[^>]*>([^<]*)</)![1];
    expect(notice).toMatch(/^The file is not a recognised audio, video or image file\. Accepted are MP4/);
    expect(notice).not.toMatch(/PNG|multipart/);
    expect(await env.DB.prepare("SELECT 1 FROM cloned_voices WHERE account_id = ?").bind(accountId).first()).toBeNull();
    expect(await (await client.get("/app/voice")).text()).toContain("No cloned voice registered.");
    // Deleting the voice the account does not have says so.
    const deleted = await client.post("/app/voice/delete", {});
    expect([deleted.status, deleted.headers.get("location")]).toEqual([303, "/app/voice?done=no-voice"]);
    expect(await (await client.get("/app/voice?done=no-voice")).text()).toContain(
      "There is no cloned voice to delete: nothing was changed.",
    );
  });
});

describe("templates page", () => {
  /** A signed-up owner with a live key, and a template saved through the API. */
  async function ownerWithTemplate(name = "Cut <and> clean") {
    const { client, accountId } = await signedUpClient();
    const apiKey = (await (await client.createKey({ name: "ci" })).text()).match(KEY)![0];
    const auth = { authorization: `Bearer ${apiKey}` };
    const saved = await postJson(
      "/api/v1/templates",
      {
        name,
        description: "For the weekly show",
        steps: [
          { tool: "trim", params: { start: "{{start}}", end: "{{end}}" } },
          { tool: "clean-audio" },
          { tool: "subtitles", params: { srtContent: `1\n00:00:00,000 --> 00:00:01,000\n${"{{title}} ".repeat(20)}` } },
        ],
      },
      auth,
    );
    expect(saved.status).toBe(200);
    const { templateId } = (await saved.json()) as { templateId: string };
    return { client, accountId, apiKey, auth, templateId };
  }

  it("lists each template's name, steps, variables and date, linked from the navigation", async () => {
    const { client, templateId } = await ownerWithTemplate();
    const response = await client.get("/app/templates");
    expect(response.status).toBe(200);
    const html = await response.text();
    expect(html).toContain('<a href="/app/templates" aria-current="page">Templates</a>');
    const row = html.match(new RegExp(`<tr data-template-id="${templateId}">([\\s\\S]*?)</tr>`))![1];
    // The name is text, never markup.
    expect(row).toContain("Cut &lt;and&gt; clean");
    expect(row).toContain("For the weekly show");
    expect(row).toContain(`<code>${templateId}</code>`);
    expect(row).toMatch(
      /<ol class="steps"><li><strong>trim<\/strong>.*start \{\{start\}\}, end \{\{end\}\}.*<\/li><li><strong>clean-audio<\/strong><\/li><li><strong>subtitles<\/strong>/,
    );
    // A long parameter is cut on the page.
    expect(row).toContain("…");
    expect(row).toContain("<code>start</code> <code>end</code> <code>title</code>");
    expect(row).toMatch(/\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC/);
    expect(row).toContain(`action="/app/templates/${templateId}/delete"`);
    // An account without templates is told so; other pages link here too.
    const { client: empty } = await signedUpClient();
    expect(await (await empty.get("/app/templates")).text()).toContain("No templates yet.");
    expect(await (await empty.get("/app")).text()).toContain('<a href="/app/templates">Templates</a>');
    // Signed out: the sign-in page.
    const anonymous = await new WebClient().get("/app/templates");
    expect([anonymous.status, anonymous.headers.get("location")]).toEqual([303, "/app/login?next=%2Fapp%2Ftemplates"]);
  });

  it("deletes a template with a form post (no script), once; another account's and a forged form change nothing", async () => {
    const { client, auth, templateId } = await ownerWithTemplate("Weekly");
    // A form from another site: refused by the CSRF check.
    const forged = await client.post(`/app/templates/${templateId}/delete`, {}, "https://evil.example");
    expect(forged.status).toBe(403);
    // Another account's owner cannot delete it: said as not there.
    const { client: stranger } = await signedUpClient();
    const foreign = await stranger.post(`/app/templates/${templateId}/delete`, {});
    expect([foreign.status, foreign.headers.get("location")]).toEqual([303, "/app/templates?done=no-template"]);
    expect((await call(`/api/v1/templates/${templateId}`, { headers: auth })).status).toBe(200);

    const deleted = await client.post(`/app/templates/${templateId}/delete`, {});
    expect([deleted.status, deleted.headers.get("location")]).toEqual([303, "/app/templates?done=template-deleted"]);
    expect((await call(`/api/v1/templates/${templateId}`, { headers: auth })).status).toBe(404);
    const page = await (await client.get("/app/templates?done=template-deleted")).text();
    expect(page).toContain("Template deleted: jobs already started from it go on.");
    expect(page).not.toContain(`data-template-id="${templateId}"`);
    // A second click (another tab) finds it gone.
    const again = await client.post(`/app/templates/${templateId}/delete`, {});
    expect(again.headers.get("location")).toBe("/app/templates?done=no-template");
    expect(await (await client.get("/app/templates?done=no-template")).text()).toContain(
      "That template is not there (any more): nothing was changed.",
    );
  });

  it("shows a pipeline job's steps and their states on the jobs page", async () => {
    const { client, accountId, apiKey, auth } = await ownerWithTemplate();
    const upload = (await (
      await uploadBytes({ accountId, keyId: "", apiKey, auth }, await fixtureBytes("tone.mp3"), "tone.mp3")
    ).json()) as { uploadId: string };
    const started = await postJson(
      "/api/v1/pipelines",
      { steps: [{ tool: "trim", params: { start: 0, end: 1 } }, { tool: "clean-audio" }], uploadId: upload.uploadId },
      auth,
    );
    const { jobId } = (await started.json()) as { jobId: string };
    expect(started.status).toBe(200);
    const rowOf = async () =>
      (await (await client.get("/app/jobs")).text()).match(
        new RegExp(`<tr data-job-id="${jobId}">([\\s\\S]*?)</tr>`),
      )![1];
    const row = await rowOf();
    expect(row).toMatch(
      /pipeline[\s\S]*<ol class="steps" aria-label="Steps"><li data-step-status="\w+">trim <span class="badge \w+">\w+<\/span><\/li><li data-step-status="\w+">clean-audio /,
    );
    // Cancelled before it ended: the job failed and refunded; the step it stopped failed, any after it skipped.
    const cancelled = await call(`/api/v1/jobs/${jobId}/cancel`, { method: "POST", headers: auth });
    if (cancelled.status === 200) {
      const after = await rowOf();
      expect(after).toContain('<span class="badge failed">failed</span>');
      expect(after).not.toMatch(/data-step-status="(queued|processing)"/);
      expect(after).toMatch(
        /<li data-step-status="(failed|skipped)">clean-audio <span class="badge (failed|skipped)">/,
      );
    }
    await expectLedgerMatches(accountId);
  });
});

describe("sign-up from a connection in progress", () => {
  it("carries next through sign-up and back, and frames no page", async () => {
    const next = "/authorize?response_type=code&client_id=abc";
    const login = await new WebClient().get(`/app/login?next=${encodeURIComponent(next)}`);
    expect(await login.text()).toContain(`href="/app/signup?next=${encodeURIComponent(next).replace(/&/g, "&amp;")}"`);
    const page = await (await new WebClient().get(`/app/signup?next=${encodeURIComponent(next)}`)).text();
    expect(page).toContain(`name="next" value="${next.replace(/&/g, "&amp;")}"`);
    const created = await new WebClient().post("/app/signup", { email: uniqueEmail(), password: PASSWORD, next });
    expect(created.status).toBe(303);
    expect(created.headers.get("location")).toBe(next);
    for (const path of ["/app/login", "/authorize", "/review/nothing", "/upload/nothing"]) {
      const response = await new WebClient().get(path);
      expect(response.headers.get("x-frame-options"), path).toBe("DENY");
      expect(response.headers.get("content-security-policy"), path).toContain("frame-ancestors 'none'");
    }
  });
});

describe("sign-in form", () => {
  it("keeps a safe next path only", async () => {
    const { email } = await signedUpClient();
    const evil = await new WebClient().post("/app/login", { email, password: PASSWORD, next: "//evil.example/x" });
    expect(evil.headers.get("location")).toBe("/app");
    // Browsers drop tabs and newlines and read a backslash as a slash: each of these is another origin.
    for (const next of [
      "/\t/evil.example",
      "/\n/evil.example",
      "/\\evil.example",
      "/%09/evil.example".replace("%09", "\t"),
      "/\r\n/evil.example",
    ]) {
      const response = await new WebClient().post("/app/login", { email, password: PASSWORD, next });
      expect(response.headers.get("location"), JSON.stringify(next)).toBe("/app");
    }
    const kept = await new WebClient().post("/app/login", { email, password: PASSWORD, next: "/app/keys?x=1#top" });
    expect(kept.headers.get("location")).toBe("/app/keys?x=1#top");
    const fresh = uniqueEmail();
    expect(fresh).toMatch(/@example\.com$/);
  });

  it("refuses a next path whose dot segments normalise to another site, at sign-in and at sign-up", async () => {
    const { email } = await signedUpClient();
    for (const next of ["/app/..//evil.example/phish", "/./..//evil.example", "/x/../..//evil.example/login"]) {
      const response = await new WebClient().post("/app/login", { email, password: PASSWORD, next });
      expect(response.status).toBe(303);
      expect(response.headers.get("location"), next).not.toMatch(/^\/\/|evil/);
    }
    const signup = await new WebClient().post("/app/signup", {
      email: uniqueEmail(),
      password: PASSWORD,
      next: "/x/../..//evil.example/login",
    });
    expect(signup.status).toBe(303);
    expect(signup.headers.get("location")).toBe("/app");
    const kept = await new WebClient().post("/app/login", { email, password: PASSWORD, next: "/app/jobs/../keys" });
    expect(kept.headers.get("location")).toBe("/app/keys");
  });
});
