/**
 * A new customer in a real browser (Debian chromium driven by playwright-core) against
 * `wrangler dev` and the local Stripe: sign up, sign out and in, create a key and use it,
 * buy a pack on the checkout page, subscribe to a plan, revoke the key, sign out.
 * Screenshots of every page land in test-artifacts/screens (not committed).
 */
import { mkdirSync } from "node:fs";
import path from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { eventually } from "../helpers/eventually";
import { FIXTURES, untilMailed, upload } from "./client";

const base = inject("e2eMainUrl");
const stripeUrl = inject("e2eStripeUrl");
const shots = path.resolve(import.meta.dirname, "../../test-artifacts/screens");
const executablePath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

let browser: Browser;
beforeAll(async () => {
  mkdirSync(shots, { recursive: true });
  browser = await chromium.launch({
    executablePath,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
});
afterAll(async () => {
  await browser?.close();
});

const shot = (page: Page, name: string) => page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });

async function apiAccount(key: string) {
  const response = await fetch(`${base}/api/v1/account`, { headers: { authorization: `Bearer ${key}` } });
  return {
    status: response.status,
    body: (await response.json()) as { balance?: number; email?: string; error?: { message: string } },
  };
}

/** Webhooks are delivered before the checkout page redirects back, but allow for a slow machine. */
async function waitForText(page: Page, url: string, selector: string, expected: string) {
  await eventually(
    async () => {
      await page.goto(url);
      return page.locator(selector).innerText();
    },
    (text) => {
      expect(text).toContain(expected);
    },
    { timeoutMs: 10_000, intervalMs: 250, what: `${selector} at ${url} to show ${expected}` },
  );
}

describe("developer area in a browser", () => {
  it("takes a new customer from sign-up to a paid plan and back out", async () => {
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    page.on("dialog", (dialog) => dialog.accept());
    const email = `buyer${Date.now()}@example.com`;
    const password = "a password that is long";

    await page.goto(`${base}/app`);
    expect(page.url()).toBe(`${base}/app/login?next=%2Fapp`);
    await shot(page, "01-login");
    await page.click("text=Create an account");
    await page.fill('input[name="email"]', email);
    await page.fill('input[name="password"]', "short");
    await page.locator('input[name="password"]').evaluate((el) => el.removeAttribute("minlength"));
    await page.click('button[type="submit"]');
    await expect.poll(() => page.locator(".notice.error").innerText()).toContain("at least 10 characters");
    await shot(page, "02-signup-error");
    await page.fill('input[name="password"]', password);
    await page.click('button[type="submit"]');
    await page.waitForURL(`${base}/app`);
    expect(await page.getByTestId("balance").innerText()).toBe("100");
    expect(await page.getByTestId("plan").innerText()).toBe("Pay as you go");
    // Until the email is confirmed, keys, webhooks and payments are closed: the page says so.
    expect(await page.getByTestId("verify-email").innerText()).toContain(email);
    await shot(page, "03-overview-unconfirmed");
    // The mailbox (the dev outbox) holds the link; opening it confirms the address.
    // The mail leaves after the sign-up's answer: the outbox is read again until it is there.
    const mailed = page.locator(`div[data-mail-to="${email}"] a[href*="/app/verify/"]`);
    await untilMailed(page, `${base}/app/dev/outbox`, mailed);
    const confirm = await mailed.first().getAttribute("href");
    await page.goto(confirm!);
    expect(await page.locator("h1").innerText()).toBe("Email confirmed");
    await page.goto(`${base}/app`);
    expect(await page.getByTestId("verify-email").count()).toBe(0);
    await shot(page, "03-overview");

    // Sign out and back in.
    await page.click('header button:has-text("Sign out")');
    await page.waitForURL(/\/app\/login\?signed_out/);
    await page.fill('input[name="email"]', email);
    await page.fill('input[name="password"]', "not the password");
    await page.click('button[type="submit"]');
    expect(await page.locator(".notice.error").innerText()).toContain("Email or password is incorrect.");
    await page.fill('input[name="password"]', password);
    await page.click('button[type="submit"]');
    await page.waitForURL(`${base}/app`);

    // A key, shown once, used from outside.
    await page.click("nav >> text=API keys");
    await page.fill('input[name="name"]', "my laptop");
    // A double click sends the form once: the page shows the new key, not "already created".
    await page.dblclick('button:has-text("Create key")');
    await page.waitForSelector("#new-key");
    const apiKey = await page.locator("#new-key").inputValue();
    expect(apiKey).toMatch(/^mk_live_[A-Za-z0-9_-]{32}$/);
    expect(await page.locator("tbody tr").count()).toBe(1);
    await shot(page, "04-key-created");
    expect(await apiAccount(apiKey)).toEqual({ status: 200, body: { balance: 100, email } });

    // Buy a pack on the checkout page.
    await page.click("nav >> text=Billing");
    await shot(page, "05-billing-payg");
    await page.locator('form:has(input[value="pack_10k"]) button').click();
    await page.waitForURL(new RegExp(`^${stripeUrl}/c/pay/cs_test_`));
    expect(await page.locator(".amount").innerText()).toBe("19.00 EUR");
    await shot(page, "06-stripe-checkout");
    await page.click('button:has-text("Pay")');
    await page.waitForURL(/\/app\/billing\?checkout=success/);
    expect(await page.locator(".notice.ok").innerText()).toContain(
      "Back from checkout. Once Stripe confirms the payment",
    );
    await waitForText(page, `${base}/app`, '[data-testid="balance"]', "10,100");
    expect(await page.getByTestId("purchased-credits").innerText()).toBe("10,100");
    await page.goto(`${base}/app/ledger?kind=purchase`);
    expect(await page.locator('tr[data-kind="purchase"]').innerText()).toContain("+10,000");
    // In the customer's words, not the offer's id (pack_10k).
    expect(await page.locator('tr[data-kind="purchase"]').innerText()).toContain("Credit pack of 10,000 credits");
    await shot(page, "07-ledger");
    expect((await apiAccount(apiKey)).body.balance).toBe(10_100);

    // Subscribe to Pro: plan credits arrive with the first invoice.
    await page.goto(`${base}/app/billing`);
    await page.locator('form:has(input[value="pro"]) button').click();
    await page.waitForURL(new RegExp(`^${stripeUrl}/c/pay/`));
    expect(await page.locator(".amount").innerText()).toBe("39.00 EUR / month");
    await page.click('button:has-text("Pay")');
    await page.waitForURL(/\/app\/billing/);
    await waitForText(page, `${base}/app`, '[data-testid="plan"]', "Pro");
    expect(await page.getByTestId("plan-credits").innerText()).toBe("9,000");
    expect(await page.getByTestId("balance").innerText()).toBe("19,100");
    await shot(page, "08-overview-pro");
    await page.goto(`${base}/app/billing`);
    expect(await page.locator("table").innerText()).toContain("Pro plan");
    expect(await page.locator("table").innerText()).toContain("Credit pack of 10,000 credits");
    expect(await page.locator('a:has-text("View invoice")').count()).toBe(1);
    expect(await page.locator("h2", { hasText: "Top up" }).count()).toBe(1);
    await shot(page, "09-billing-pro");
    expect((await apiAccount(apiKey)).body.balance).toBe(19_100);

    // Cancel: the plan stays until the period ends.
    await page.click('button:has-text("Cancel the plan")');
    await page.waitForURL(/done=cancelled/);
    expect(await page.getByTestId("current-plan").innerText()).toContain("moves to Solo");

    // A pipeline through the API: the Jobs page lists its steps with their states.
    const api = { base, auth: { authorization: `Bearer ${apiKey}` }, accountId: "" };
    const tone = await upload(api, path.join(FIXTURES, "tone.mp3"));
    const started = await fetch(`${base}/api/v1/pipelines`, {
      method: "POST",
      headers: { ...api.auth, "content-type": "application/json" },
      body: JSON.stringify({
        steps: [{ tool: "trim", params: { start: 0, end: 1 } }, { tool: "clean-audio" }],
        uploadId: tone.uploadId,
      }),
    });
    expect(started.status).toBe(200);
    const { jobId } = (await started.json()) as { jobId: string };
    await eventually(
      async () =>
        (await (await fetch(`${base}/api/v1/jobs/${jobId}?wait=20`, { headers: api.auth })).json()) as {
          status: string;
        },
      (job) => job.status === "completed" || job.status === "failed",
      { timeoutMs: 120_000, intervalMs: 250, what: `pipeline ${jobId} to end` },
    );
    await page.goto(`${base}/app/jobs`);
    expect(await page.locator(`tr[data-job-id="${jobId}"] ol.steps`).innerText()).toMatch(
      /trim\s+completed\s+clean-audio\s+completed/,
    );

    // Templates saved through the API, listed in the page, one deleted there (the confirm is accepted).
    for (const template of [
      {
        name: "Weekly show",
        description: "Cut, clean and subtitle the recording",
        steps: [
          { tool: "trim", params: { start: "{{start}}", end: "{{end}}" } },
          { tool: "clean-audio" },
          { tool: "watermark", params: { watermarkText: "{{brand}} · {{date}}", opacity: 60 } },
          { tool: "convert", params: { format: "webm" } },
        ],
      },
      { name: "Podcast audio", steps: [{ tool: "extract-audio", params: { format: "{{format}}" } }] },
      { name: "Throwaway", steps: [{ tool: "convert" }] },
    ]) {
      const saved = await fetch(`${base}/api/v1/templates`, {
        method: "POST",
        headers: { ...api.auth, "content-type": "application/json" },
        body: JSON.stringify(template),
      });
      expect(saved.status, await saved.clone().text()).toBe(200);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.click("nav >> text=Templates");
    await page.waitForURL(`${base}/app/templates`);
    expect(await page.locator("tbody tr").count()).toBe(3);
    expect(await page.locator('tr:has-text("Weekly show")').innerText()).toMatch(/start\s+end\s+brand\s+date/);
    await shot(page, "16-templates");
    await page.locator('tr:has-text("Throwaway") button:has-text("Delete")').click();
    await page.waitForURL(/done=template-deleted/);
    expect(await page.locator(".notice.ok").innerText()).toContain("Template deleted");
    expect(await page.locator("tbody tr").count()).toBe(2);
    await page.setViewportSize({ width: 1200, height: 900 });

    // Other pages render.
    for (const [name, pathname] of [
      ["10-jobs", "/app/jobs"],
      ["11-voice", "/app/voice"],
    ] as const) {
      await page.goto(`${base}${pathname}`);
      await shot(page, name);
    }

    // Revoke the key: the next call is refused.
    await page.goto(`${base}/app/keys`);
    await page.click('button:has-text("Revoke")');
    await page.waitForURL(/done=revoked/);
    expect(await page.locator("tbody").innerText()).toContain("revoked");
    await shot(page, "12-key-revoked");
    expect((await apiAccount(apiKey)).status).toBe(401);

    // Phone-sized rendering of the overview and billing.
    const phone = await browser.newPage({ viewport: { width: 390, height: 844 }, isMobile: true });
    await phone.context().addCookies(await page.context().cookies());
    await phone.goto(`${base}/app`);
    expect(await phone.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
    await shot(phone, "13-phone-overview");
    await phone.goto(`${base}/app/billing`);
    await shot(phone, "14-phone-billing");
    // Tables become cards on a phone: every cell on screen under its column's name.
    await phone.goto(`${base}/app/ledger`);
    expect(await phone.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
    const detail = (await phone.locator("tbody tr td:nth-child(6)").first().boundingBox())!;
    expect(detail.x + detail.width).toBeLessThanOrEqual(390);
    expect(
      await phone.evaluate(`getComputedStyle(document.querySelector("tbody td:nth-child(6)"), "::before").content`),
    ).toBe('"Detail"');
    await shot(phone, "15-phone-ledger");
    // Templates and a pipeline's steps fit a phone too, the Delete button on screen.
    await phone.goto(`${base}/app/templates`);
    expect(await phone.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
    const remove = (await phone.locator('tbody tr button:has-text("Delete")').first().boundingBox())!;
    expect(remove.x + remove.width).toBeLessThanOrEqual(390);
    await shot(phone, "17-phone-templates");
    await phone.goto(`${base}/app/jobs`);
    expect(await phone.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
    await shot(phone, "18-phone-jobs");
    await phone.close();

    await page.click('header button:has-text("Sign out")');
    await page.goto(`${base}/app/keys`);
    expect(page.url()).toContain("/app/login?next=");
    await page.close();
  });
});
