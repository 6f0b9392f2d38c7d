import { env } from "cloudflare:workers";
import type { Env } from "../../src/env";
import { describe, expect, inject, it } from "vitest";
import { ADMIN, call, fixtureBytes, postJson } from "../helpers/api";
import {
  accountRow,
  expectLedgerMatches,
  ledgerOf,
  sendStripeEvent,
  signedUpClient,
  stripeEvent,
  stripeSignature,
} from "../helpers/web";

const paidSession = (accountId: string, sessionId: string, offer = "pack_10k", amount = 1900) => ({
  id: sessionId,
  object: "checkout.session",
  mode: "payment",
  status: "complete",
  payment_status: "paid",
  amount_total: amount,
  currency: "eur",
  customer: null,
  client_reference_id: accountId,
  metadata: { account_id: accountId, offer },
  payment_intent: `pi_${sessionId}`,
  subscription: null,
});

const DAY = 24 * 3600;
const paidInvoice = (
  accountId: string,
  id: string,
  plan: string,
  subscription: string,
  periodStart: number,
  amount = 3900,
) => ({
  id,
  object: "invoice",
  customer: "cus_test",
  status: "paid",
  billing_reason: "subscription_cycle",
  currency: "eur",
  amount_paid: amount,
  hosted_invoice_url: `https://invoice.example/${id}`,
  parent: {
    type: "subscription_details",
    subscription_details: { subscription, metadata: { account_id: accountId, plan } },
  },
  lines: {
    object: "list",
    data: [{ id: `il_${id}`, amount, period: { start: periodStart, end: periodStart + 30 * DAY } }],
  },
  payments: { data: [{ payment: { type: "payment_intent", payment_intent: `pi_${id}` } }] },
});

const uid = () => `${Date.now()}${Math.random().toString(36).slice(2, 8)}`;

describe("Stripe webhook signature", () => {
  it("accepts a good signature and refuses tampered, wrong-secret, old and missing ones with 400, changing nothing", async () => {
    const { accountId } = await signedUpClient();
    const event = stripeEvent("checkout.session.completed", paidSession(accountId, `cs_${uid()}`));
    const body = JSON.stringify(event);
    const refusals = [
      { body: body.replace("1900", "1901"), signature: await stripeSignature(body) },
      { body, signature: await stripeSignature(body, "whsec_wrong") },
      { body, signature: await stripeSignature(body, undefined, Math.floor(Date.now() / 1000) - 301) },
      { body, signature: undefined },
      { body, signature: "t=1,v1=zz" },
    ];
    for (const attempt of refusals) {
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (attempt.signature) headers["stripe-signature"] = attempt.signature;
      const response = await call("/api/webhooks/stripe", { method: "POST", headers, body: attempt.body });
      expect(response.status).toBe(400);
      const error = (await response.json()) as { error: { code: string; message: string } };
      expect(error.error.code).toBe("invalid_request");
    }
    expect((await accountRow(accountId)).purchased_credits).toBe(100);
    const ok = await call("/api/webhooks/stripe", {
      method: "POST",
      headers: { "content-type": "application/json", "stripe-signature": await stripeSignature(body) },
      body,
    });
    expect(ok.status).toBe(200);
    expect((await accountRow(accountId)).purchased_credits).toBe(10_100);
  });
});

describe("credits from Stripe events, exactly once", () => {
  it("grants a pack once under duplicate and concurrent deliveries, and once per order across events", async () => {
    const { accountId } = await signedUpClient();
    const sessionId = `cs_${uid()}`;
    const event = stripeEvent("checkout.session.completed", paidSession(accountId, sessionId));
    const responses = await Promise.all(Array.from({ length: 8 }, () => sendStripeEvent(event)));
    expect(responses.map((r) => r.status)).toEqual(Array(8).fill(200));
    expect((await sendStripeEvent(event)).status).toBe(200);
    // Another event about the same order (async payment succeeded) grants nothing more.
    expect(
      (
        await sendStripeEvent(
          stripeEvent("checkout.session.async_payment_succeeded", paidSession(accountId, sessionId)),
        )
      ).status,
    ).toBe(200);
    const account = await accountRow(accountId);
    expect(account.purchased_credits).toBe(100 + 10_000);
    const purchases = (await ledgerOf(accountId)).filter((e) => e.kind === "purchase");
    expect(purchases).toHaveLength(1);
    expect(purchases[0].idempotency_key).toBe(`stripe:order:${sessionId}`);
    const payment = await env.DB.prepare("SELECT status, credits FROM payments WHERE id = ?")
      .bind(sessionId)
      .first<Record<string, any>>();
    expect(payment).toEqual({ status: "paid", credits: 10_000 });
    await expectLedgerMatches(accountId);
  });

  it("ignores unpaid sessions, unknown offers and amounts that do not match the price table", async () => {
    const { accountId } = await signedUpClient();
    await sendStripeEvent(
      stripeEvent("checkout.session.completed", { ...paidSession(accountId, `cs_${uid()}`), payment_status: "unpaid" }),
    );
    await sendStripeEvent(
      stripeEvent("checkout.session.completed", paidSession(accountId, `cs_${uid()}`, "pack_1m", 100)),
    );
    await sendStripeEvent(
      stripeEvent("checkout.session.completed", paidSession(accountId, `cs_${uid()}`, "pack_100k", 1900)),
    );
    expect((await accountRow(accountId)).purchased_credits).toBe(100);
    await expectLedgerMatches(accountId);
  });

  it("starts, renews and ends a plan from invoice.paid and customer.subscription.deleted", async () => {
    const { accountId } = await signedUpClient();
    const subscription = `sub_${uid()}`;
    const start = Math.floor(Date.now() / 1000);
    const first = paidInvoice(accountId, `in_${uid()}`, "pro", subscription, start);
    expect((await sendStripeEvent(stripeEvent("invoice.paid", first))).status).toBe(200);
    let account = await accountRow(accountId);
    expect(account.plan).toBe("pro");
    expect(account.plan_credits).toBe(9000);
    expect(account.purchased_credits).toBe(100);
    expect(account.stripe_subscription_id).toBe(subscription);
    expect(account.plan_period_end).toBe((start + 30 * DAY) * 1000);
    // A key of a pro account works on /api/v1.
    const key = (await (
      await call(`/api/admin/accounts/${accountId}/keys`, { method: "POST", headers: ADMIN })
    ).json()) as { apiKey: string };
    expect((await call("/api/v1/account", { headers: { authorization: `Bearer ${key.apiKey}` } })).status).toBe(200);

    // Spend some plan credits, then the next period's invoice: unused plan credits expire, allowance granted.
    await env.DB.batch([
      env.DB.prepare("UPDATE accounts SET plan_credits = plan_credits - 1000 WHERE id = ?").bind(accountId),
      env.DB.prepare(
        "INSERT INTO ledger (id, account_id, kind, amount, plan_delta, purchased_delta, idempotency_key, reason, created_at) VALUES (?, ?, 'debit', -1000, -1000, 0, ?, 'convert', ?)",
      ).bind(`led_${uid()}`, accountId, `test:${uid()}`, Date.now()),
    ]);
    const second = paidInvoice(accountId, `in_${uid()}`, "pro", subscription, start + 30 * DAY);
    await Promise.all([
      sendStripeEvent(stripeEvent("invoice.paid", second)),
      sendStripeEvent(stripeEvent("invoice.paid", second)),
    ]);
    account = await accountRow(accountId);
    expect(account.plan_credits).toBe(9000);
    expect(account.plan_period_end).toBe((start + 60 * DAY) * 1000);
    // Entries of one batch share a timestamp: compare as a set.
    const kinds = (await ledgerOf(accountId)).map((e) => `${e.kind}:${e.amount}`).sort();
    expect(kinds).toEqual(["debit:-1000", "grant:100", "plan_expiry:-8000", "plan_grant:9000", "plan_grant:9000"]);
    // The first invoice redelivered late (older period) changes nothing.
    await sendStripeEvent(stripeEvent("invoice.paid", first));
    expect((await accountRow(accountId)).plan_period_end).toBe((start + 60 * DAY) * 1000);
    await expectLedgerMatches(accountId);

    // Cancelled: at the period end Stripe deletes the subscription and the account moves to solo.
    await sendStripeEvent(
      stripeEvent("customer.subscription.updated", {
        id: subscription,
        object: "subscription",
        cancel_at_period_end: true,
      }),
    );
    expect((await accountRow(accountId)).plan_cancel_at_period_end).toBe(1);
    const deleted = stripeEvent("customer.subscription.deleted", {
      id: subscription,
      object: "subscription",
      status: "canceled",
    });
    await Promise.all([sendStripeEvent(deleted), sendStripeEvent(deleted)]);
    account = await accountRow(accountId);
    expect(account.plan).toBe("solo");
    expect(account.plan_credits).toBe(300);
    expect(account.purchased_credits).toBe(100);
    expect(account.stripe_subscription_id).toBeNull();
    await expectLedgerMatches(accountId);
    // Solo has no REST access: the same key now answers 401 with the reason.
    const refused = await call("/api/v1/account", { headers: { authorization: `Bearer ${key.apiKey}` } });
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(
      /not included in the solo plan/,
    );
  });

  it("never attaches an ended subscription again: a late invoice.paid and a redelivered subscription checkout change nothing", async () => {
    const { accountId } = await signedUpClient();
    const subscription = `sub_${uid()}`;
    const start = Math.floor(Date.now() / 1000);
    const checkout = stripeEvent("checkout.session.completed", {
      id: `cs_${uid()}`,
      object: "checkout.session",
      mode: "subscription",
      status: "complete",
      payment_status: "paid",
      customer: "cus_test",
      client_reference_id: accountId,
      metadata: { account_id: accountId },
      subscription,
    });
    expect((await sendStripeEvent(checkout)).status).toBe(200);
    // The subscription checkout is recorded as processed.
    expect(await env.DB.prepare("SELECT type FROM stripe_events WHERE id = ?").bind(checkout.id).first()).toEqual({
      type: "checkout.session.completed",
    });
    expect((await accountRow(accountId)).stripe_subscription_id).toBe(subscription);
    await sendStripeEvent(
      stripeEvent("invoice.paid", paidInvoice(accountId, `in_${uid()}`, "pro", subscription, start)),
    );
    await sendStripeEvent(
      stripeEvent("customer.subscription.deleted", { id: subscription, object: "subscription", status: "canceled" }),
    );
    const ended = await accountRow(accountId);
    expect([ended.plan, ended.stripe_subscription_id]).toEqual(["solo", null]);
    const ledgerBefore = (await ledgerOf(accountId)).length;

    // Out of order: the next period's invoice of the ended subscription arrives late, then Stripe
    // delivers the original checkout again under a new event id.
    expect(
      (
        await sendStripeEvent(
          stripeEvent("invoice.paid", paidInvoice(accountId, `in_${uid()}`, "pro", subscription, start + 30 * DAY)),
        )
      ).status,
    ).toBe(200);
    expect((await sendStripeEvent(stripeEvent("checkout.session.completed", checkout.data.object))).status).toBe(200);
    const after = await accountRow(accountId);
    expect([after.plan, after.stripe_subscription_id, after.plan_credits]).toEqual(["solo", null, ended.plan_credits]);
    expect((await ledgerOf(accountId)).length).toBe(ledgerBefore);
    await expectLedgerMatches(accountId);
  });

  it("remembers a subscription deleted before the events that attach it, so they never attach it", async () => {
    const { accountId } = await signedUpClient();
    const subscription = `sub_${uid()}`;
    const start = Math.floor(Date.now() / 1000);
    const before = await accountRow(accountId);
    // Stripe does not keep order: the deletion comes first, then the checkout and the invoice.
    expect(
      (
        await sendStripeEvent(
          stripeEvent("customer.subscription.deleted", {
            id: subscription,
            object: "subscription",
            status: "canceled",
            metadata: { account_id: accountId },
          }),
        )
      ).status,
    ).toBe(200);
    expect(
      await env.DB.prepare("SELECT account_id FROM ended_subscriptions WHERE id = ?")
        .bind(subscription)
        .first("account_id"),
    ).toBe(accountId);
    const checkout = stripeEvent("checkout.session.completed", {
      id: `cs_${uid()}`,
      object: "checkout.session",
      mode: "subscription",
      status: "complete",
      payment_status: "paid",
      customer: "cus_test",
      client_reference_id: accountId,
      metadata: { account_id: accountId },
      subscription,
    });
    expect((await sendStripeEvent(checkout)).status).toBe(200);
    expect(
      (
        await sendStripeEvent(
          stripeEvent("invoice.paid", paidInvoice(accountId, `in_${uid()}`, "pro", subscription, start)),
        )
      ).status,
    ).toBe(200);
    const after = await accountRow(accountId);
    expect([after.plan, after.stripe_subscription_id, after.plan_credits]).toEqual([
      before.plan,
      null,
      before.plan_credits,
    ]);
    await expectLedgerMatches(accountId);
  });

  it("refunds plan credits into the plan only while the period that paid is current, otherwise into purchased credits", async () => {
    const { failAndRefund } = await import("../../src/services/billing/credits");
    const { accountId } = await signedUpClient();
    const subscription = `sub_${uid()}`;
    const start = Math.floor(Date.now() / 1000);
    await sendStripeEvent(
      stripeEvent("invoice.paid", paidInvoice(accountId, `in_${uid()}`, "pro", subscription, start)),
    );
    const key = (await (
      await call(`/api/admin/accounts/${accountId}/keys`, { method: "POST", headers: ADMIN })
    ).json()) as { apiKey: string };
    const auth = { authorization: `Bearer ${key.apiKey}` };
    const form = new FormData();
    form.append("file", new File([await fixtureBytes("long-61s.mp3")], "long.mp3"));
    const { uploadId } = (await (
      await call("/api/v1/uploads", { method: "POST", headers: auth, body: form })
    ).json()) as { uploadId: string };
    // Two clean-audio calls paid from this period's plan credits (11 credits each: 61 s at 10 a minute).
    // Held in the queue (a queue that drops its messages), so each fails when the test says.
    const { createToolJob } = await import("../../src/services/media-jobs/creation");
    const held = { ...env, JOBS_QUEUE: { send: async () => {} } } as unknown as Env;
    const caller = {
      accountId,
      keyId: "key_held",
      email: "held@example.com",
      plan: "pro" as const,
      mode: "live" as const,
    };
    const jobIds: string[] = [];
    for (let i = 0; i < 3; i++)
      jobIds.push((await createToolJob(held, caller, { tool: "clean-audio", params: { uploadId } }, Date.now())).jobId);
    expect((await accountRow(accountId)).plan_credits).toBe(9000 - 33);
    // Failed within the period: back into plan credits.
    expect(await failAndRefund(env.DB, jobIds[0]!, "failed in the period", Date.now(), 1000)).toBe(true);
    expect((await accountRow(accountId)).plan_credits).toBe(9000 - 22);
    // The next period starts (its invoice), then the second job fails: its plan credits expired
    // with their period, so the refund goes to purchased credits, and the new allowance stays whole.
    await sendStripeEvent(
      stripeEvent("invoice.paid", paidInvoice(accountId, `in_${uid()}`, "pro", subscription, start + 30 * DAY)),
    );
    const renewed = await accountRow(accountId);
    expect(renewed.plan_credits).toBe(9000);
    expect(await failAndRefund(env.DB, jobIds[1]!, "failed after the period", Date.now(), 1000)).toBe(true);
    const after = await accountRow(accountId);
    expect([after.plan_credits, after.purchased_credits]).toEqual([9000, renewed.purchased_credits + 11]);
    const refund = await env.DB.prepare("SELECT plan_delta, purchased_delta FROM ledger WHERE idempotency_key = ?")
      .bind(`refund:${jobIds[1]}`)
      .first();
    expect(refund).toEqual({ plan_delta: 0, purchased_delta: 11 });
    // Cancelled by the caller after its period ended: its plan credits come back and expire at once,
    // as they would have at the renewal; a job that straddles a renewal carries nothing over.
    expect(await failAndRefund(env.DB, jobIds[2]!, "cancelled", Date.now(), 1000, { cancelled: true })).toBe(true);
    const cancelled = await accountRow(accountId);
    expect([cancelled.plan_credits, cancelled.purchased_credits]).toEqual([
      after.plan_credits,
      after.purchased_credits,
    ]);
    const entries = await env.DB.prepare(
      "SELECT kind, amount, plan_delta, purchased_delta FROM ledger WHERE job_id = ? AND kind != 'debit' ORDER BY kind",
    )
      .bind(jobIds[2])
      .all();
    expect(entries.results).toEqual([
      { kind: "plan_expiry", amount: -11, plan_delta: -11, purchased_delta: 0 },
      { kind: "refund", amount: 11, plan_delta: 11, purchased_delta: 0 },
    ]);
    await expectLedgerMatches(accountId);
  });

  it("a plan change within the period grants only what a larger plan adds: switching back and forth never refills", async () => {
    const { accountId } = await signedUpClient();
    const subscription = `sub_${uid()}`;
    const start = Math.floor(Date.now() / 1000);
    // Stripe's prorated invoice of a plan change: billing_reason subscription_update, its lines end with the current period.
    const change = (plan: string, amount: number) => ({
      ...paidInvoice(accountId, `in_${uid()}`, plan, subscription, start, amount),
      billing_reason: "subscription_update",
    });
    await sendStripeEvent(
      stripeEvent("invoice.paid", paidInvoice(accountId, `in_${uid()}`, "starter", subscription, start, 1900)),
    );
    expect(await accountRow(accountId)).toMatchObject({ plan: "starter", plan_credits: 4000 });
    await env.DB.batch([
      env.DB.prepare("UPDATE accounts SET plan_credits = plan_credits - 3000 WHERE id = ?").bind(accountId),
      env.DB.prepare(
        "INSERT INTO ledger (id, account_id, kind, amount, plan_delta, purchased_delta, idempotency_key, reason, created_at) VALUES (?, ?, 'debit', -3000, -3000, 0, ?, 'convert', ?)",
      ).bind(`led_${uid()}`, accountId, `test:${uid()}`, Date.now()),
    ]);
    const upgrade = change("pro", 1000);
    await Promise.all([
      sendStripeEvent(stripeEvent("invoice.paid", upgrade)),
      sendStripeEvent(stripeEvent("invoice.paid", upgrade)),
    ]);
    // 1,000 left of the starter allowance, plus the 5,000 that pro adds over it.
    expect(await accountRow(accountId)).toMatchObject({
      plan: "pro",
      plan_credits: 6000,
      plan_period_end: (start + 30 * DAY) * 1000,
    });
    await sendStripeEvent(stripeEvent("invoice.paid", change("starter", 0)));
    expect(await accountRow(accountId)).toMatchObject({ plan: "starter", plan_credits: 6000 });
    await sendStripeEvent(stripeEvent("invoice.paid", change("pro", 1000)));
    expect(await accountRow(accountId)).toMatchObject({ plan: "pro", plan_credits: 6000 });
    await sendStripeEvent(stripeEvent("invoice.paid", change("scale", 2000)));
    expect(await accountRow(accountId)).toMatchObject({ plan: "scale", plan_credits: 17_000 });
    // A refund of the upgrade invoice takes back at most what it granted.
    const charge = {
      id: `ch_${uid()}`,
      object: "charge",
      amount: 1000,
      amount_refunded: 1000,
      payment_intent: `pi_${upgrade.id}`,
      refunded: true,
    };
    await sendStripeEvent(stripeEvent("charge.refunded", charge));
    expect((await accountRow(accountId)).plan_credits).toBe(12_000);
    // The next period starts afresh with the plan's allowance.
    await sendStripeEvent(
      stripeEvent("invoice.paid", paidInvoice(accountId, `in_${uid()}`, "scale", subscription, start + 30 * DAY, 7900)),
    );
    expect(await accountRow(accountId)).toMatchObject({
      plan: "scale",
      plan_credits: 20_000,
      plan_period_end: (start + 60 * DAY) * 1000,
    });
    const grants = (await ledgerOf(accountId))
      .filter((e) => e.kind === "plan_grant")
      .map((e) => e.amount)
      .sort((a, b) => a - b);
    expect(grants).toEqual([4000, 5000, 11_000, 20_000]);
    await expectLedgerMatches(accountId);
  });

  it("an upgrade late in the period adds its share of the larger allowance, as Stripe bills only the days left", async () => {
    const { accountId } = await signedUpClient();
    const subscription = `sub_${uid()}`;
    // Starter since 27 days: 3 of 30 days left.
    const start = Math.floor(Date.now() / 1000) - 27 * DAY;
    await sendStripeEvent(
      stripeEvent("invoice.paid", paidInvoice(accountId, `in_${uid()}`, "starter", subscription, start, 1900)),
    );
    const now = Math.floor(Date.now() / 1000);
    // Stripe's proration invoice: its lines run from the change to the end of the period.
    const upgrade = {
      ...paidInvoice(accountId, `in_${uid()}`, "scale", subscription, start, 600),
      billing_reason: "subscription_update",
    };
    upgrade.lines.data[0]!.period = { start: now, end: start + 30 * DAY };
    await sendStripeEvent(stripeEvent("invoice.paid", upgrade));
    // 16,000 more on Scale, a tenth of it: 1,600 (rounded up), not 16,000 for 6 euros.
    const row = await accountRow(accountId);
    expect(row).toMatchObject({ plan: "scale", plan_period_granted: 20_000 });
    expect(row.plan_credits - 4000).toBeGreaterThanOrEqual(1600);
    expect(row.plan_credits - 4000).toBeLessThanOrEqual(1601);
    // Down and up again in the same period: nothing more (the larger allowance was granted, in part).
    await sendStripeEvent(
      stripeEvent("invoice.paid", {
        ...paidInvoice(accountId, `in_${uid()}`, "scale", subscription, start, 600),
        billing_reason: "subscription_update",
      }),
    );
    expect((await accountRow(accountId)).plan_credits).toBe(row.plan_credits);
    await expectLedgerMatches(accountId);
  });

  it("a paid plan starts from its first invoice even when a Solo period ends later than Stripe's first period", async () => {
    const { accountId } = await signedUpClient();
    await env.DB.prepare(
      "UPDATE accounts SET plan = 'solo', plan_credits = 300, plan_period_granted = 300, plan_period_end = ? WHERE id = ?",
    )
      .bind(Date.now() + 40 * DAY * 1000, accountId)
      .run();
    await env.DB.prepare(
      "INSERT INTO ledger (id, account_id, kind, amount, plan_delta, purchased_delta, idempotency_key, reason, created_at) VALUES (?, ?, 'plan_grant', 300, 300, 0, ?, 'solo', ?)",
    )
      .bind(`led_${uid()}`, accountId, `test:${uid()}`, Date.now())
      .run();
    const subscription = `sub_${uid()}`;
    // Checkout completes first (it records the subscription), then the first invoice.
    await sendStripeEvent(
      stripeEvent("checkout.session.completed", {
        ...paidSession(accountId, `cs_${uid()}`),
        mode: "subscription",
        subscription,
        payment_intent: null,
      }),
    );
    await sendStripeEvent(
      stripeEvent(
        "invoice.paid",
        paidInvoice(accountId, `in_${uid()}`, "pro", subscription, Math.floor(Date.now() / 1000)),
      ),
    );
    expect(await accountRow(accountId)).toMatchObject({ plan: "pro", plan_credits: 9000 });
    await expectLedgerMatches(accountId);
  });

  it("takes back unspent credits after a refund or a dispute, once", async () => {
    const { accountId } = await signedUpClient();
    const sessionId = `cs_${uid()}`;
    await sendStripeEvent(
      stripeEvent("checkout.session.completed", paidSession(accountId, sessionId, "pack_25k", 4500)),
    );
    expect((await accountRow(accountId)).purchased_credits).toBe(25_100);
    const charge = {
      id: `ch_${uid()}`,
      object: "charge",
      amount: 4500,
      amount_refunded: 2250,
      payment_intent: `pi_${sessionId}`,
      refunded: false,
    };
    const half = stripeEvent("charge.refunded", charge);
    await Promise.all([sendStripeEvent(half), sendStripeEvent(half)]);
    expect((await accountRow(accountId)).purchased_credits).toBe(25_100 - 12_500);
    // Spend most of the rest, then a dispute on the whole payment: only what is left goes.
    await env.DB.batch([
      env.DB.prepare("UPDATE accounts SET purchased_credits = 50 WHERE id = ?").bind(accountId),
      env.DB.prepare(
        "INSERT INTO ledger (id, account_id, kind, amount, plan_delta, purchased_delta, idempotency_key, reason, created_at) VALUES (?, ?, 'debit', -12550, 0, -12550, ?, 'subtitles', ?)",
      ).bind(`led_${uid()}`, accountId, `test:${uid()}`, Date.now()),
    ]);
    await sendStripeEvent(
      stripeEvent("charge.dispute.created", {
        id: `dp_${uid()}`,
        object: "dispute",
        amount: 4500,
        payment_intent: `pi_${sessionId}`,
      }),
    );
    expect((await accountRow(accountId)).purchased_credits).toBe(0);
    const reversals = (await ledgerOf(accountId)).filter((e) => e.kind === "reversal").map((e) => e.amount);
    expect(reversals).toEqual([-12_500, -50]);
    const payment = await env.DB.prepare("SELECT status, credits_reversed FROM payments WHERE id = ?")
      .bind(sessionId)
      .first<Record<string, any>>();
    expect(payment).toEqual({ status: "refunded", credits_reversed: 25_000 });
    await expectLedgerMatches(accountId);
  });

  it("a refund of a plan invoice finds its payment through Stripe's invoice payments (webhook invoices carry no payments)", async () => {
    const stripe = inject("stripeBaseUrl");
    const stripeApi = async (path: string, init: RequestInit = {}) =>
      (
        await fetch(`${stripe}${path}`, {
          ...init,
          headers: { authorization: "Bearer sk_test_workers", ...(init.headers ?? {}) },
        })
      ).json() as Promise<any>;
    const { client, accountId } = await signedUpClient();
    const sessionId = (await client.post("/app/billing/plan", { plan: "pro" })).headers
      .get("location")!
      .split("/")
      .pop()!;
    expect((await fetch(`${stripe}/c/pay/${sessionId}/pay`, { method: "POST", redirect: "manual" })).status).toBe(303);
    // The events the local Stripe sent for this payment, delivered here as Stripe would.
    const mine = (type: string) => async () =>
      ((await stripeApi(`/v1/events?type=${type}&limit=100`)).data as any[]).filter(
        (e) => JSON.stringify(e.data.object).includes(accountId) || e.data.object.id === sessionId,
      );
    for (const event of [
      ...(await mine("checkout.session.completed")()),
      ...(await mine("invoice.paid")()),
    ].reverse()) {
      expect((await sendStripeEvent(event)).status).toBe(200);
    }
    const invoice = (await mine("invoice.paid")())[0].data.object;
    expect(invoice.payments).toBeUndefined();
    expect(await accountRow(accountId)).toMatchObject({ plan: "pro", plan_credits: 9000 });
    const recorded = await env.DB.prepare("SELECT payment_intent, credits FROM payments WHERE id = ?")
      .bind(invoice.id)
      .first<Record<string, any>>();
    expect(recorded).toEqual({ payment_intent: null, credits: 9000 });
    const paymentIntent = (await stripeApi(`/v1/invoice_payments?invoice=${invoice.id}`)).data[0].payment
      .payment_intent;
    const refund = await stripeApi(`/_test/payment_intents/${paymentIntent}/refund`, { method: "POST" });
    expect(refund.type).toBe("charge.refunded");
    expect((await sendStripeEvent(refund)).status).toBe(200);
    expect((await accountRow(accountId)).plan_credits).toBe(0);
    const payment = await env.DB.prepare("SELECT payment_intent, status, credits_reversed FROM payments WHERE id = ?")
      .bind(invoice.id)
      .first<Record<string, any>>();
    expect(payment).toEqual({ payment_intent: paymentIntent, status: "refunded", credits_reversed: 9000 });
    await expectLedgerMatches(accountId);
  });

  it("a downgrade waits for the end of the paid period (no proration credit for granted credits); choosing the plan again undoes it", async () => {
    const stripe = inject("stripeBaseUrl");
    const stripeApi = async (path: string, init: RequestInit = {}) =>
      (
        await fetch(`${stripe}${path}`, {
          ...init,
          headers: { authorization: "Bearer sk_test_workers", ...(init.headers ?? {}) },
        })
      ).json() as Promise<any>;
    const { client, accountId } = await signedUpClient();
    const delivered = new Set<string>();
    /** Delivers, oldest first, the events the local Stripe emitted for this account since the last call. */
    const deliverNew = async (only?: string) => {
      const customer = (await accountRow(accountId)).stripe_customer_id;
      const events = ((await stripeApi("/v1/events?limit=100")).data as any[]).filter(
        (e) =>
          !delivered.has(e.id) &&
          (!only || e.type === only) &&
          (e.data.object.customer === customer || JSON.stringify(e.data.object).includes(accountId)),
      );
      for (const event of events.reverse()) {
        delivered.add(event.id);
        expect((await sendStripeEvent(event)).status).toBe(200);
      }
      return events.map((e) => e.type);
    };
    const sessionId = (await client.post("/app/billing/plan", { plan: "scale" })).headers
      .get("location")!
      .split("/")
      .pop()!;
    expect((await fetch(`${stripe}/c/pay/${sessionId}/pay`, { method: "POST", redirect: "manual" })).status).toBe(303);
    // The checkout is confirmed, its first invoice not yet: no change until the plan is known.
    await deliverNew("checkout.session.completed");
    const early = await client.post("/app/billing/plan", { plan: "starter" });
    expect(early.status).toBe(400);
    expect(await early.text()).toContain("being confirmed");
    await deliverNew();
    const { stripe_subscription_id: subscription, plan_period_end: periodEnd } = await accountRow(accountId);
    expect(await accountRow(accountId)).toMatchObject({ plan: "scale", plan_credits: 20_000, plan_next: null });
    const invoicesOf = async () =>
      ((await stripeApi("/v1/events?type=invoice.paid&limit=100")).data as any[]).filter(
        (e) => e.data.object.parent.subscription_details.subscription === subscription,
      );
    const until = new Date(periodEnd).toISOString().slice(0, 10);

    // Scale -> Pro: nothing invoiced or credited now, the account keeps Scale and its credits until the period ends.
    const down = await client.post("/app/billing/plan", { plan: "pro" });
    expect(down.status).toBe(303);
    expect(await (await client.get(down.headers.get("location")!)).text()).toContain(
      `Pro starts on ${until}, when the paid period ends`,
    );
    expect(await deliverNew()).toEqual(["customer.subscription.updated"]);
    expect(await invoicesOf()).toHaveLength(1);
    expect(await accountRow(accountId)).toMatchObject({ plan: "scale", plan_credits: 20_000, plan_next: "pro" });
    const page = await (await client.get("/app/billing")).text();
    expect(page).toContain(`moves to Pro on ${until}`);
    expect(page).toContain(">Keep this plan<");
    // Another change waits until the pending one is undone.
    const other = await client.post("/app/billing/plan", { plan: "starter" });
    expect(other.status).toBe(400);
    expect(await other.text()).toContain("Pro is already chosen from");
    // Scale again: the downgrade is undone, nothing invoiced (the period is paid).
    const keep = await client.post("/app/billing/plan", { plan: "scale" });
    expect(await (await client.get(keep.headers.get("location")!)).text()).toContain("You stay on Scale");
    await deliverNew();
    expect(await invoicesOf()).toHaveLength(1);
    expect((await stripeApi(`/v1/subscriptions/${subscription}`)).items.data[0].price.lookup_key).toMatch(/scale/);
    expect(await accountRow(accountId)).toMatchObject({ plan: "scale", plan_next: null });

    // Down again, then the period ends: the renewal invoice is Pro's price and starts Pro with its allowance.
    expect((await client.post("/app/billing/plan", { plan: "pro" })).status).toBe(303);
    await deliverNew();
    // Once the period has ended, until the renewal is paid, no change (the renewal invoice may still be a draft).
    await env.DB.prepare("UPDATE accounts SET plan_period_end = ? WHERE id = ?")
      .bind(Date.now() - 1000, accountId)
      .run();
    const renewing = await client.post("/app/billing/plan", { plan: "scale" });
    expect(renewing.status).toBe(400);
    expect(await renewing.text()).toContain("renewing right now");
    await env.DB.prepare("UPDATE accounts SET plan_period_end = ? WHERE id = ?").bind(periodEnd, accountId).run();
    const renewal = await stripeApi(`/_test/subscriptions/${subscription}/advance`, { method: "POST" });
    expect(renewal.amount_paid).toBe(3900);
    await deliverNew();
    expect(await accountRow(accountId)).toMatchObject({ plan: "pro", plan_credits: 9000, plan_next: null });
    expect(await (await client.get("/app/billing")).text()).not.toContain("moves to Pro");
    await expectLedgerMatches(accountId);
  });

  it("one plan checkout at a time: opening a second (another tab) expires the first, so two subscriptions cannot both be paid", async () => {
    const stripe = inject("stripeBaseUrl");
    const stripeApi = async (path: string) =>
      (
        await fetch(`${stripe}${path}`, { headers: { authorization: "Bearer sk_test_workers" } })
      ).json() as Promise<any>;
    const { client } = await signedUpClient();
    // A pack checkout left open on pay as you go goes too: its prices are not a plan's.
    const pack = (await client.post("/app/billing/checkout", { offer: "pack_10k" })).headers
      .get("location")!
      .split("/")
      .pop()!;
    const starter = (await client.post("/app/billing/plan", { plan: "starter" })).headers
      .get("location")!
      .split("/")
      .pop()!;
    const pro = (await client.post("/app/billing/plan", { plan: "pro" })).headers.get("location")!.split("/").pop()!;
    expect((await stripeApi(`/v1/checkout/sessions/${pack}`)).status).toBe("expired");
    expect((await stripeApi(`/v1/checkout/sessions/${starter}`)).status).toBe("expired");
    expect((await stripeApi(`/v1/checkout/sessions/${pro}`)).status).toBe("open");
    // The first tab's Pay now meets an expired session; the second pays.
    const late = await fetch(`${stripe}/c/pay/${starter}/pay`, { method: "POST", redirect: "manual" });
    expect(late.status).toBe(400);
    expect((await fetch(`${stripe}/c/pay/${pro}/pay`, { method: "POST", redirect: "manual" })).status).toBe(303);
    const customer = (await stripeApi(`/v1/checkout/sessions/${pro}`)).customer;
    const created = ((await stripeApi("/v1/events?type=customer.subscription.created&limit=100")).data as any[]).filter(
      (e) => e.data.object.customer === customer,
    );
    expect(created).toHaveLength(1);
    // Paid, its confirmation not delivered yet: a third checkout is refused rather than opened.
    const again = await client.post("/app/billing/plan", { plan: "starter" });
    expect(again.status).toBe(400);
    expect(await again.text()).toContain("being confirmed");
  });

  it("moving to Solo or back to pay as you go expires the checkouts still open, whose prices were the other form's", async () => {
    const stripe = inject("stripeBaseUrl");
    const stripeApi = async (path: string) =>
      (
        await fetch(`${stripe}${path}`, { headers: { authorization: "Bearer sk_test_workers" } })
      ).json() as Promise<any>;
    const { client, accountId } = await signedUpClient();
    const sessionOf = (response: Response) => response.headers.get("location")!.split("/").pop()!;
    const pack = sessionOf(await client.post("/app/billing/checkout", { offer: "pack_10k" }));
    expect((await client.post("/app/billing/plan", { plan: "solo" })).status).toBe(303);
    expect((await stripeApi(`/v1/checkout/sessions/${pack}`)).status).toBe("expired");
    expect((await fetch(`${stripe}/c/pay/${pack}/pay`, { method: "POST", redirect: "manual" })).status).toBe(400);
    const topup = sessionOf(await client.post("/app/billing/checkout", { offer: "topup_7k" }));
    expect((await client.post("/app/billing/plan", { plan: "payg" })).status).toBe(303);
    expect((await stripeApi(`/v1/checkout/sessions/${topup}`)).status).toBe("expired");
    expect((await fetch(`${stripe}/c/pay/${topup}/pay`, { method: "POST", redirect: "manual" })).status).toBe(400);
    expect(await accountRow(accountId)).toMatchObject({ plan: "payg", purchased_credits: 100 });
    await expectLedgerMatches(accountId);
  });

  it("answers 200 to events it does not handle", async () => {
    const response = await sendStripeEvent(stripeEvent("customer.created", { id: "cus_x", object: "customer" }));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ received: true, outcome: "ignored" });
  });
});

describe("operator accounts keep working", () => {
  it("admin-created accounts and keys are unchanged", async () => {
    const created = await postJson("/api/admin/accounts", { email: `op${uid()}@example.com`, credits: 5 }, ADMIN);
    expect(created.status).toBe(200);
  });
});
