/**
 * A local Stripe for development and tests (no machine here reaches api.stripe.com). It
 * speaks Stripe's wire format for what the project calls: form-encoded requests with a
 * Bearer secret key, JSON objects shaped as the API version of the `stripe` package, lists,
 * and errors `{error: {type, code, message, param}}`. It hosts a checkout page with Pay and
 * Cancel, sends signed webhooks (`Stripe-Signature: t=...,v1=HMAC-SHA256(secret, t.body)`)
 * and has test controls under /_test to advance a subscription, refund, dispute or redeliver.
 *
 *   node scripts/local-stripe/server.ts --port 8789 --webhook http://127.0.0.1:8787/api/webhooks/stripe
 *   (STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET from the environment)
 */
import { createHmac, randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { decodeStripeForm, type FormValue } from "./form.ts";

const API_VERSION = "2026-10-28.endive";
const MONTH_S = 30 * 24 * 3600;

type Obj = Record<string, any>;

export interface LocalStripeOptions {
  port?: number;
  host?: string;
  secretKey: string;
  webhookSecret: string;
  webhookUrl?: string;
  /** Plan prices in cents by lookup key (defaults: plan_starter 19 €, plan_pro 39 €, plan_scale 79 €). */
  planPrices?: Record<string, number>;
}

export interface LocalStripe {
  url: string;
  close(): Promise<void>;
  setWebhookUrl(url: string | undefined): void;
  /** Every event sent, oldest first, with its deliveries (HTTP status or error). */
  events(): Obj[];
}

class StripeError extends Error {
  status: number;
  body: Obj;
  constructor(status: number, type: string, message: string, extra: Obj = {}) {
    super(message);
    this.status = status;
    this.body = { error: { type, message, ...extra } };
  }
}

const missing = (param: string) =>
  new StripeError(400, "invalid_request_error", `Missing required param: ${param}.`, {
    code: "parameter_missing",
    param,
  });
const invalid = (param: string, message: string) =>
  new StripeError(400, "invalid_request_error", message, { code: "parameter_invalid", param });
const noSuch = (kind: string, id: string) =>
  new StripeError(404, "invalid_request_error", `No such ${kind}: '${id}'`, { code: "resource_missing", param: "id" });

const newId = (prefix: string) => `${prefix}_test_${randomBytes(12).toString("base64url").replace(/[-_]/g, "x")}`;
const nowS = () => Math.floor(Date.now() / 1000);
const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export async function startLocalStripe(options: LocalStripeOptions): Promise<LocalStripe> {
  let webhookUrl = options.webhookUrl;
  const customers = new Map<string, Obj>();
  const prices = new Map<string, Obj>();
  const sessions = new Map<string, Obj>();
  const subscriptions = new Map<string, Obj>();
  const invoices = new Map<string, Obj>();
  const charges = new Map<string, Obj>();
  const invoicePayments: Obj[] = [];
  const events: Obj[] = [];
  const idempotent = new Map<string, { status: number; body: string }>();
  let base = "";

  for (const [lookupKey, cents] of Object.entries(
    options.planPrices ?? { plan_starter: 1900, plan_pro: 3900, plan_scale: 7900 },
  )) {
    const id = newId("price");
    prices.set(id, {
      id,
      object: "price",
      active: true,
      currency: "eur",
      lookup_key: lookupKey,
      unit_amount: cents,
      type: "recurring",
      recurring: { interval: "month", interval_count: 1 },
      product: newId("prod"),
      created: nowS(),
      livemode: false,
      metadata: {},
    });
  }

  const list = (url: string, data: Obj[]) => ({ object: "list", url, has_more: false, data });

  function sign(payload: string, timestamp = nowS()): string {
    const v1 = createHmac("sha256", options.webhookSecret).update(`${timestamp}.${payload}`).digest("hex");
    return `t=${timestamp},v1=${v1}`;
  }

  async function deliver(event: Obj): Promise<void> {
    if (!webhookUrl) return;
    const payload = JSON.stringify(event, null, 2);
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const response = await fetch(webhookUrl, {
          method: "POST",
          headers: {
            "content-type": "application/json; charset=utf-8",
            "stripe-signature": sign(payload),
            "user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
          },
          body: payload,
        });
        event._deliveries.push(response.status);
        await response.arrayBuffer();
        if (response.ok) return;
      } catch (error) {
        event._deliveries.push(String(error));
      }
      await new Promise((resolve) => setTimeout(resolve, 300 * 2 ** attempt));
    }
  }

  async function emit(type: string, object: Obj): Promise<Obj> {
    const event: Obj = {
      id: newId("evt"),
      object: "event",
      api_version: API_VERSION,
      created: nowS(),
      data: { object: structuredClone(object) },
      livemode: false,
      pending_webhooks: webhookUrl ? 1 : 0,
      request: { id: null, idempotency_key: null },
      type,
    };
    Object.defineProperty(event, "_deliveries", { value: [], enumerable: false });
    events.push(event);
    await deliver(event);
    return event;
  }

  const metadataOf = (value: FormValue | undefined): Record<string, string> =>
    value && typeof value === "object" && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, String(v)]))
      : {};

  function lineAmount(item: Obj): { amount: number; currency: string; name: string; price?: Obj } {
    if (item.price) {
      const price = prices.get(item.price);
      if (!price) throw noSuch("price", item.price);
      return {
        amount: price.unit_amount * Number(item.quantity ?? 1),
        currency: price.currency,
        name: price.lookup_key,
        price,
      };
    }
    const data = item.price_data;
    if (!data) throw missing("line_items[0][price_data]");
    if (!data.currency) throw missing("line_items[0][price_data][currency]");
    const unit = Number(data.unit_amount);
    if (!Number.isInteger(unit) || unit < 0)
      throw invalid("line_items[0][price_data][unit_amount]", "Invalid integer: unit_amount");
    return {
      amount: unit * Number(item.quantity ?? 1),
      currency: data.currency,
      name: data.product_data?.name ?? "item",
    };
  }

  function createCheckoutSession(params: Obj): Obj {
    if (!params.mode) throw missing("mode");
    if (!["payment", "subscription"].includes(params.mode))
      throw invalid("mode", `Invalid mode: must be one of payment, setup, or subscription`);
    if (!params.success_url) throw missing("success_url");
    const items: Obj[] = params.line_items ?? [];
    if (items.length === 0) throw missing("line_items");
    if (params.customer && !customers.has(params.customer)) throw noSuch("customer", params.customer);
    const lines = items.map(lineAmount);
    if (params.mode === "subscription" && lines.some((l) => !l.price || l.price.type !== "recurring")) {
      throw invalid(
        "line_items",
        "You must provide at least one recurring price in `subscription` mode when using prices.",
      );
    }
    const id = newId("cs");
    const session: Obj = {
      id,
      object: "checkout.session",
      mode: params.mode,
      status: "open",
      payment_status: "unpaid",
      amount_subtotal: lines.reduce((s, l) => s + l.amount, 0),
      amount_total: lines.reduce((s, l) => s + l.amount, 0),
      currency: lines[0].currency,
      customer: params.customer ?? null,
      customer_email: params.customer ? customers.get(params.customer)!.email : (params.customer_email ?? null),
      client_reference_id: params.client_reference_id ?? null,
      metadata: metadataOf(params.metadata),
      success_url: params.success_url,
      cancel_url: params.cancel_url ?? null,
      payment_intent: null,
      subscription: null,
      invoice: null,
      url: `${base}/c/pay/${id}`,
      created: nowS(),
      expires_at: nowS() + 24 * 3600,
      livemode: false,
    };
    Object.defineProperty(session, "_lines", { value: lines, enumerable: false });
    Object.defineProperty(session, "_subscriptionData", { value: params.subscription_data ?? {}, enumerable: false });
    Object.defineProperty(session, "_paymentIntentData", {
      value: params.payment_intent_data ?? {},
      enumerable: false,
    });
    sessions.set(id, session);
    return session;
  }

  function newCharge(customer: string | null, amount: number, currency: string, metadata: Obj): Obj {
    const paymentIntent = newId("pi");
    const charge = {
      id: newId("ch"),
      object: "charge",
      amount,
      amount_refunded: 0,
      currency,
      customer,
      payment_intent: paymentIntent,
      paid: true,
      refunded: false,
      status: "succeeded",
      metadata,
      created: nowS(),
      livemode: false,
    };
    charges.set(paymentIntent, charge);
    return charge;
  }

  function newInvoice(
    subscription: Obj,
    amount: number,
    billingReason: string,
    periodStart: number,
    periodEnd: number,
  ): Obj {
    const charge = newCharge(subscription.customer, amount, "eur", {});
    const id = newId("in");
    const price = subscription.items.data[0].price;
    const invoice = {
      id,
      object: "invoice",
      customer: subscription.customer,
      status: "paid",
      billing_reason: billingReason,
      currency: "eur",
      amount_due: amount,
      amount_paid: amount,
      amount_remaining: 0,
      total: amount,
      hosted_invoice_url: `${base}/i/${id}`,
      invoice_pdf: `${base}/i/${id}/pdf`,
      period_start: periodStart,
      period_end: periodStart,
      parent: {
        type: "subscription_details",
        quote_details: null,
        subscription_details: { subscription: subscription.id, metadata: { ...subscription.metadata } },
      },
      lines: {
        object: "list",
        has_more: false,
        url: `/v1/invoices/${id}/lines`,
        data: [
          {
            id: newId("il"),
            object: "line_item",
            amount,
            currency: "eur",
            description: `1 × ${price.lookup_key}`,
            period: { start: periodStart, end: periodEnd },
            pricing: { type: "price_details", price_details: { price: price.id, product: price.product } },
          },
        ],
      },
      created: nowS(),
      livemode: false,
    };
    // As in Stripe, `payments` is an includable property: absent from webhook payloads and
    // from a plain retrieve; GET /v1/invoices/:id?expand[]=payments and /v1/invoice_payments give it.
    invoicePayments.push({
      id: newId("inpay"),
      object: "invoice_payment",
      invoice: id,
      amount_paid: amount,
      amount_requested: amount,
      currency: "eur",
      is_default: true,
      payment: { type: "payment_intent", payment_intent: charge.payment_intent },
      status: "paid",
      status_transitions: { paid_at: nowS(), canceled_at: null },
      created: nowS(),
      livemode: false,
    });
    invoices.set(id, invoice);
    return invoice;
  }

  async function pay(session: Obj): Promise<void> {
    if (session.status !== "open") throw invalid("id", "This Checkout Session is no longer open.");
    session.status = "complete";
    session.payment_status = "paid";
    if (session.mode === "payment") {
      const charge = newCharge(
        session.customer,
        session.amount_total,
        session.currency,
        metadataOf(session._paymentIntentData.metadata),
      );
      session.payment_intent = charge.payment_intent;
      await emit("checkout.session.completed", session);
      return;
    }
    const start = nowS();
    const line = session._lines[0];
    const subscription: Obj = {
      id: newId("sub"),
      object: "subscription",
      customer: session.customer,
      status: "active",
      cancel_at_period_end: false,
      canceled_at: null,
      metadata: metadataOf(session._subscriptionData.metadata),
      items: {
        object: "list",
        has_more: false,
        data: [
          {
            id: newId("si"),
            object: "subscription_item",
            price: line.price,
            quantity: 1,
            current_period_start: start,
            current_period_end: start + MONTH_S,
          },
        ],
      },
      created: start,
      livemode: false,
    };
    subscriptions.set(subscription.id, subscription);
    const invoice = newInvoice(subscription, line.amount, "subscription_create", start, start + MONTH_S);
    subscription.latest_invoice = invoice.id;
    session.subscription = subscription.id;
    session.invoice = invoice.id;
    await emit("checkout.session.completed", session);
    await emit("customer.subscription.created", subscription);
    await emit("invoice.paid", invoice);
  }

  async function updateSubscription(subscription: Obj, params: Obj): Promise<Obj> {
    if (subscription.status === "canceled")
      throw invalid("subscription", "A canceled subscription can only update its cancellation_details and metadata.");
    if (params.metadata) subscription.metadata = { ...subscription.metadata, ...metadataOf(params.metadata) };
    if (params.cancel_at_period_end !== undefined)
      subscription.cancel_at_period_end = params.cancel_at_period_end === "true";
    const item = subscription.items.data[0];
    const change = params.items?.[0];
    let invoice: Obj | undefined;
    if (change?.price && change.price !== item.price.id) {
      if (change.id && change.id !== item.id) throw noSuch("subscription_item", change.id);
      const price = prices.get(change.price);
      if (!price) throw noSuch("price", change.price);
      const old = item.price;
      item.price = price;
      if (params.proration_behavior === "always_invoice") {
        const remaining = (item.current_period_end - nowS()) / MONTH_S;
        const amount = Math.max(0, Math.round((price.unit_amount - old.unit_amount) * remaining));
        invoice = newInvoice(subscription, amount, "subscription_update", nowS(), item.current_period_end);
        subscription.latest_invoice = invoice.id;
      }
    }
    await emit("customer.subscription.updated", subscription);
    if (invoice) await emit("invoice.paid", invoice);
    return subscription;
  }

  /** Test control: the subscription reaches the end of its period. */
  async function advance(subscription: Obj): Promise<Obj> {
    const item = subscription.items.data[0];
    if (subscription.status === "canceled") throw invalid("subscription", "The subscription is canceled.");
    if (subscription.cancel_at_period_end) {
      subscription.status = "canceled";
      subscription.canceled_at = nowS();
      subscription.ended_at = nowS();
      await emit("customer.subscription.deleted", subscription);
      return subscription;
    }
    item.current_period_start = item.current_period_end;
    item.current_period_end += MONTH_S;
    const invoice = newInvoice(
      subscription,
      item.price.unit_amount,
      "subscription_cycle",
      item.current_period_start,
      item.current_period_end,
    );
    subscription.latest_invoice = invoice.id;
    await emit("invoice.paid", invoice);
    return invoice;
  }

  async function refund(paymentIntent: string, amount: number | undefined, dispute: boolean): Promise<Obj> {
    const charge = charges.get(paymentIntent);
    if (!charge) throw noSuch("payment_intent", paymentIntent);
    if (dispute) {
      const disputeObject = {
        id: newId("dp"),
        object: "dispute",
        amount: charge.amount,
        charge: charge.id,
        payment_intent: paymentIntent,
        currency: charge.currency,
        reason: "fraudulent",
        status: "needs_response",
        created: nowS(),
        livemode: false,
      };
      return emit("charge.dispute.created", disputeObject);
    }
    const value = amount ?? charge.amount - charge.amount_refunded;
    if (value <= 0 || charge.amount_refunded + value > charge.amount)
      throw invalid("amount", "Refund amount is greater than the unrefunded amount on the charge.");
    charge.amount_refunded += value;
    charge.refunded = charge.amount_refunded === charge.amount;
    return emit("charge.refunded", charge);
  }

  const checkoutPage = (
    session: Obj,
  ) => `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>Local Stripe Checkout</title>
<style>body{font:16px system-ui,sans-serif;background:#f6f9fc;margin:0}main{max-width:420px;margin:40px auto;background:#fff;border-radius:12px;padding:24px;box-shadow:0 2px 12px #0001}
.amount{font-size:2rem;font-weight:700}button{font:inherit;width:100%;padding:12px;border-radius:8px;border:0;margin-top:10px;cursor:pointer}.pay{background:#635bff;color:#fff}.cancel{background:#eee}small{color:#666}</style></head>
<body><main><small>LOCAL STRIPE · test mode</small><h1>${escapeHtml(session._lines.map((l: Obj) => l.name).join(", "))}</h1>
<p class="amount">${(session.amount_total / 100).toFixed(2)} ${String(session.currency).toUpperCase()}${session.mode === "subscription" ? " / month" : ""}</p>
<p>${escapeHtml(session.customer_email ?? "")}</p>
${
  session.status === "open"
    ? `<form method="post" action="/c/pay/${session.id}/pay"><button class="pay" type="submit">Pay</button></form>
<form method="post" action="/c/pay/${session.id}/cancel"><button class="cancel" type="submit">Cancel</button></form>`
    : `<p>This session is ${escapeHtml(session.status)}.</p>`
}
</main></body></html>`;

  const invoicePage = (
    invoice: Obj,
  ) => `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>Invoice ${invoice.id}</title></head>
<body style="font:16px system-ui;max-width:560px;margin:40px auto"><h1>Invoice</h1><p>${invoice.id} · ${escapeHtml(invoice.billing_reason)}</p>
<p>Paid ${(invoice.amount_paid / 100).toFixed(2)} EUR for ${escapeHtml(invoice.lines.data[0].description)}</p></body></html>`;

  async function readBody(req: http.IncomingMessage): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString("utf8");
  }

  async function route(
    req: http.IncomingMessage,
    url: URL,
    body: string,
  ): Promise<{ status: number; json?: unknown; html?: string; redirect?: string }> {
    const method = req.method ?? "GET";
    const parts = url.pathname.split("/").filter(Boolean);
    const params =
      method === "GET" || method === "DELETE" ? decodeStripeForm(url.search.slice(1)) : decodeStripeForm(body);

    // Pages a browser visits (no API key).
    if (parts[0] === "c" && parts[1] === "pay" && parts[2]) {
      const session = sessions.get(parts[2]);
      if (!session) return { status: 404, html: "<h1>Unknown checkout session</h1>" };
      if (method === "GET") return { status: 200, html: checkoutPage(session) };
      if (parts[3] === "pay") {
        await pay(session);
        return { status: 303, redirect: session.success_url.replace("{CHECKOUT_SESSION_ID}", session.id) };
      }
      if (parts[3] === "cancel")
        return {
          status: 303,
          redirect: (session.cancel_url ?? session.success_url).replace("{CHECKOUT_SESSION_ID}", session.id),
        };
    }
    if (parts[0] === "i" && parts[1]) {
      const invoice = invoices.get(parts[1]);
      return invoice ? { status: 200, html: invoicePage(invoice) } : { status: 404, html: "<h1>Unknown invoice</h1>" };
    }

    // Test controls (not part of Stripe's API).
    if (parts[0] === "_test") {
      if (parts[1] === "subscriptions" && parts[3] === "advance") {
        const subscription = subscriptions.get(parts[2]);
        if (!subscription) throw noSuch("subscription", parts[2]);
        return { status: 200, json: await advance(subscription) };
      }
      if (parts[1] === "events" && parts[3] === "resend") {
        const event = events.find((e) => e.id === parts[2]);
        if (!event) throw noSuch("event", parts[2]);
        await deliver(event);
        return { status: 200, json: { id: event.id, deliveries: event._deliveries } };
      }
      if (parts[1] === "payment_intents" && (parts[3] === "refund" || parts[3] === "dispute")) {
        return {
          status: 200,
          json: await refund(parts[2], params.amount ? Number(params.amount) : undefined, parts[3] === "dispute"),
        };
      }
      if (parts[1] === "webhook") {
        webhookUrl = typeof params.url === "string" && params.url ? params.url : undefined;
        return { status: 200, json: { url: webhookUrl ?? null } };
      }
      if (parts[1] === "deliveries")
        return { status: 200, json: events.map((e) => ({ id: e.id, type: e.type, deliveries: e._deliveries })) };
    }

    if (parts[0] !== "v1")
      throw new StripeError(404, "invalid_request_error", `Unrecognized request URL (${method}: ${url.pathname}).`);
    const auth = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
    if (auth !== options.secretKey) {
      throw new StripeError(
        401,
        "invalid_request_error",
        auth ? `Invalid API Key provided: ${auth.slice(0, 8)}****` : "You did not provide an API key.",
      );
    }
    const [, resource, id, sub] = parts;
    const key = `${method} ${resource}${id ? " id" : ""}${sub ? ` ${sub}` : ""}`;
    switch (key) {
      case "POST customers": {
        const customer = {
          id: newId("cus"),
          object: "customer",
          email: params.email ?? null,
          metadata: metadataOf(params.metadata),
          created: nowS(),
          livemode: false,
        };
        customers.set(customer.id, customer);
        return { status: 200, json: customer };
      }
      case "GET customers id": {
        const customer = customers.get(id);
        if (!customer) throw noSuch("customer", id);
        return { status: 200, json: customer };
      }
      case "GET prices": {
        const keys = Array.isArray(params.lookup_keys) ? params.lookup_keys : [];
        const data = [...prices.values()].filter(
          (p) =>
            (keys.length === 0 || keys.includes(p.lookup_key)) &&
            (params.active === undefined || String(p.active) === params.active),
        );
        return { status: 200, json: list("/v1/prices", data.slice(0, Number(params.limit ?? 10))) };
      }
      case "GET subscriptions": {
        const data = [...subscriptions.values()]
          .filter(
            (x) =>
              (!params.customer || x.customer === params.customer) && (!params.status || x.status === params.status),
          )
          .reverse();
        return { status: 200, json: list("/v1/subscriptions", data.slice(0, Number(params.limit ?? 10))) };
      }
      case "GET subscriptions id": {
        const subscription = subscriptions.get(id);
        if (!subscription) throw noSuch("subscription", id);
        return { status: 200, json: subscription };
      }
      case "POST subscriptions id": {
        const subscription = subscriptions.get(id);
        if (!subscription) throw noSuch("subscription", id);
        return { status: 200, json: await updateSubscription(subscription, params) };
      }
      case "DELETE subscriptions id": {
        const subscription = subscriptions.get(id);
        if (!subscription) throw noSuch("subscription", id);
        subscription.status = "canceled";
        subscription.canceled_at = nowS();
        await emit("customer.subscription.deleted", subscription);
        return { status: 200, json: subscription };
      }
      case "GET invoices": {
        const data = [...invoices.values()].filter((i) => !params.customer || i.customer === params.customer).reverse();
        return { status: 200, json: list("/v1/invoices", data.slice(0, Number(params.limit ?? 10))) };
      }
      case "GET invoices id": {
        const invoice = invoices.get(id);
        if (!invoice) throw noSuch("invoice", id);
        const expand = Array.isArray(params.expand) ? params.expand : [];
        if (!expand.includes("payments")) return { status: 200, json: invoice };
        return {
          status: 200,
          json: {
            ...invoice,
            payments: list(
              `/v1/invoice_payments?invoice=${id}`,
              invoicePayments.filter((p) => p.invoice === id),
            ),
          },
        };
      }
      case "GET invoice_payments": {
        const wanted =
          typeof params.payment === "object" && !Array.isArray(params.payment) ? (params.payment as Obj) : {};
        const data = invoicePayments
          .filter(
            (p) =>
              (!params.invoice || p.invoice === params.invoice) &&
              (!wanted.payment_intent || p.payment.payment_intent === wanted.payment_intent) &&
              (!params.status || p.status === params.status),
          )
          .slice()
          .reverse();
        return { status: 200, json: list("/v1/invoice_payments", data.slice(0, Number(params.limit ?? 10))) };
      }
      case "GET events": {
        const data = events
          .filter((e) => !params.type || e.type === params.type)
          .slice()
          .reverse();
        return { status: 200, json: list("/v1/events", data.slice(0, Math.min(100, Number(params.limit ?? 10)))) };
      }
      case "GET events id": {
        const event = events.find((e) => e.id === id);
        if (!event) throw noSuch("event", id);
        return { status: 200, json: event };
      }
    }
    if (resource === "checkout" && id === "sessions" && method === "POST" && !sub)
      return { status: 200, json: createCheckoutSession(params) };
    if (resource === "checkout" && id === "sessions" && method === "GET" && !sub) {
      const data = [...sessions.values()]
        .filter(
          (x) => (!params.customer || x.customer === params.customer) && (!params.status || x.status === params.status),
        )
        .reverse();
      return { status: 200, json: list("/v1/checkout/sessions", data.slice(0, Number(params.limit ?? 10))) };
    }
    if (resource === "checkout" && id === "sessions" && method === "POST" && sub && parts[4] === "expire") {
      const session = sessions.get(sub);
      if (!session) throw noSuch("checkout.session", sub);
      if (session.status !== "open")
        throw invalid(
          "session",
          `Only Checkout Sessions with a status in ["open"] can be expired. This Checkout Session has a status of "${session.status}".`,
        );
      session.status = "expired";
      await emit("checkout.session.expired", session);
      return { status: 200, json: session };
    }
    if (resource === "checkout" && id === "sessions" && method === "GET" && sub) {
      const session = sessions.get(sub);
      if (!session) throw noSuch("checkout.session", sub);
      return { status: 200, json: session };
    }
    throw new StripeError(404, "invalid_request_error", `Unrecognized request URL (${method}: ${url.pathname}).`);
  }

  const server = http.createServer(async (req, res) => {
    try {
      const url = new URL(req.url ?? "/", base);
      const body = await readBody(req);
      const idemKey =
        req.method === "POST" && url.pathname.startsWith("/v1/") ? req.headers["idempotency-key"] : undefined;
      const cached = typeof idemKey === "string" ? idempotent.get(idemKey) : undefined;
      if (cached) {
        res
          .writeHead(cached.status, { "content-type": "application/json", "idempotent-replayed": "true" })
          .end(cached.body);
        return;
      }
      const result = await route(req, url, body);
      if (result.redirect) res.writeHead(303, { location: result.redirect }).end();
      else if (result.html !== undefined)
        res.writeHead(result.status, { "content-type": "text/html; charset=utf-8" }).end(result.html);
      else {
        const text = JSON.stringify(result.json, null, 2);
        if (typeof idemKey === "string") idempotent.set(idemKey, { status: result.status, body: text });
        res
          .writeHead(result.status, {
            "content-type": "application/json",
            "request-id": newId("req"),
            "stripe-version": API_VERSION,
          })
          .end(text);
      }
    } catch (error) {
      const stripeError =
        error instanceof StripeError
          ? error
          : new StripeError(500, "api_error", error instanceof Error ? error.message : String(error));
      res.writeHead(stripeError.status, { "content-type": "application/json" }).end(JSON.stringify(stripeError.body));
    }
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, options.host ?? "127.0.0.1", resolve));
  const address = server.address() as AddressInfo;
  base = `http://${options.host ?? "127.0.0.1"}:${address.port}`;
  return {
    url: base,
    close: () => new Promise((resolve) => server.close(() => resolve())),
    setWebhookUrl: (url) => {
      webhookUrl = url;
    },
    events: () => events,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = (name: string) => {
    const index = process.argv.indexOf(`--${name}`);
    return index > 0 ? process.argv[index + 1] : undefined;
  };
  const secretKey = process.env.STRIPE_SECRET_KEY;
  const webhookSecret = process.env.STRIPE_WEBHOOK_SECRET;
  if (!secretKey || !webhookSecret) {
    console.error("local Stripe needs STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET in the environment");
    process.exit(1);
  }
  const stripe = await startLocalStripe({
    port: Number(arg("port") ?? 8789),
    secretKey,
    webhookSecret,
    webhookUrl: arg("webhook"),
  });
  console.log(`local Stripe listening on ${stripe.url}`);
  const stop = () => stripe.close().then(() => process.exit(0));
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}
