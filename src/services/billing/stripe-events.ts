/**
 * Applies verified Stripe events to accounts, exactly once. Every change is one D1 batch that
 * also records the event id (unique), and every ledger entry has a unique key derived from the
 * order, invoice or subscription: a redelivered event, or a second event about the same order,
 * fails the batch on a UNIQUE constraint and changes nothing. Guards inside the statements
 * (the same WHERE in the ledger inserts and the balance update) keep the balance equal to the
 * ledger's sum whatever the order of delivery.
 */
import type Stripe from "stripe";
import { newId } from "../../lib/ids";
import { findOffer, isPaidPlan, offerName } from "./catalog";
import { firstPeriodEnd, isConstraintError, MONTH_MS as PLAN_PERIOD_MS } from "./credits";
import { planAllowance } from "./pricing";

export type EventOutcome = "applied" | "duplicate" | "ignored";

/** What an event needs to ask Stripe: `payments` of an invoice is not in webhook payloads. */
export interface StripeLookups {
  /** The invoice a PaymentIntent paid, if any. */
  invoiceOfPaymentIntent(paymentIntent: string): Promise<string | null>;
}

const ledgerInsert = (columns: string) =>
  `INSERT INTO ledger (id, account_id, kind, amount, plan_delta, purchased_delta, idempotency_key, reason, created_at) ${columns}`;

function recordEvent(db: D1Database, event: Stripe.Event, accountId: string | null, now: number) {
  return db
    .prepare("INSERT INTO stripe_events (id, type, account_id, processed_at) VALUES (?, ?, ?, ?)")
    .bind(event.id, event.type, accountId, now);
}

async function runOnce(db: D1Database, statements: D1PreparedStatement[]): Promise<EventOutcome> {
  try {
    await db.batch(statements);
    return "applied";
  } catch (error) {
    if (isConstraintError(error, "UNIQUE")) return "duplicate";
    throw error;
  }
}

const idOf = (value: string | { id: string } | null | undefined) =>
  typeof value === "string" ? value : (value?.id ?? null);

async function accountByCustomer(db: D1Database, customer: string | null): Promise<string | null> {
  if (!customer) return null;
  const row = await db
    .prepare("SELECT id FROM accounts WHERE stripe_customer_id = ?")
    .bind(customer)
    .first<{ id: string }>();
  return row?.id ?? null;
}

export async function applyStripeEvent(
  db: D1Database,
  event: Stripe.Event,
  now: number,
  lookups?: StripeLookups,
): Promise<EventOutcome> {
  if (await db.prepare("SELECT 1 FROM stripe_events WHERE id = ?").bind(event.id).first()) return "duplicate";
  switch (event.type) {
    case "checkout.session.completed":
    case "checkout.session.async_payment_succeeded":
      return checkoutCompleted(db, event, event.data.object, now);
    case "invoice.paid":
      return invoicePaid(db, event, event.data.object, now);
    case "customer.subscription.updated":
      return subscriptionUpdated(db, event.data.object);
    case "customer.subscription.deleted":
      return subscriptionDeleted(db, event, event.data.object, now);
    case "charge.refunded": {
      const charge = event.data.object;
      return reverseCredits(
        db,
        event,
        idOf(charge.payment_intent),
        charge.amount > 0 ? charge.amount_refunded / charge.amount : 1,
        now,
        lookups,
      );
    }
    case "charge.dispute.created": {
      const dispute = event.data.object;
      return reverseCredits(db, event, idOf(dispute.payment_intent), 1, now, lookups);
    }
    default:
      return "ignored";
  }
}

/** A paid pack or top-up: its credits become purchased credits, once per Checkout Session. */
async function checkoutCompleted(
  db: D1Database,
  event: Stripe.Event,
  session: Stripe.Checkout.Session,
  now: number,
): Promise<EventOutcome> {
  const accountId =
    session.metadata?.account_id ??
    session.client_reference_id ??
    (await accountByCustomer(db, idOf(session.customer)));
  if (!accountId) return "ignored";
  if (session.mode === "subscription") {
    // The plan itself starts with the subscription's first invoice.paid. The subscription is
    // attached only to an account without one, and never once it has ended: a redelivered
    // checkout of a cancelled plan must not bring it back. Recorded as processed either way.
    return runOnce(db, [
      recordEvent(db, event, accountId, now),
      db
        .prepare(
          `UPDATE accounts SET stripe_customer_id = COALESCE(stripe_customer_id, ?1), stripe_subscription_id = ?2
           WHERE id = ?3 AND stripe_subscription_id IS NULL AND NOT EXISTS (SELECT 1 FROM ended_subscriptions WHERE id = ?2)`,
        )
        .bind(idOf(session.customer), idOf(session.subscription), accountId),
    ]);
  }
  const offer = findOffer(session.metadata?.offer);
  if (session.mode !== "payment" || session.payment_status !== "paid" || !offer) return "ignored";
  if (session.amount_total !== offer.amountCents || session.currency !== "eur") {
    console.error(
      `checkout ${session.id}: amount ${session.amount_total} ${session.currency} does not match ${offer.id}; no credits granted`,
    );
    return "ignored";
  }
  return runOnce(db, [
    recordEvent(db, event, accountId, now),
    db
      .prepare(ledgerInsert("SELECT ?1, id, 'purchase', ?2, 0, ?2, ?3, ?4, ?5 FROM accounts WHERE id = ?6"))
      .bind(
        newId("led", now),
        offer.credits,
        `stripe:order:${session.id}`,
        `${offerName(offer.id)} (Stripe ${session.id})`,
        now,
        accountId,
      ),
    db
      .prepare("UPDATE accounts SET purchased_credits = purchased_credits + ? WHERE id = ?")
      .bind(offer.credits, accountId),
    db
      .prepare(
        `INSERT INTO payments (id, account_id, kind, item, credits, amount_cents, currency, status, payment_intent, created_at, paid_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'paid', ?8, ?9, ?9)
         ON CONFLICT (id) DO UPDATE SET status = 'paid', payment_intent = ?8, paid_at = ?9`,
      )
      .bind(
        session.id,
        accountId,
        offer.kind,
        offer.id,
        offer.credits,
        offer.amountCents,
        "eur",
        idOf(session.payment_intent),
        now,
      ),
  ]);
}

/**
 * A paid subscription invoice. One that starts or renews the plan period (a later period end,
 * another subscription, or an account not yet on a paid plan) expires the unused plan credits
 * and grants the plan's allowance, as the monthly renewal does. One for a plan change within
 * the period (same subscription, same period end: Stripe's prorated `subscription_update`
 * invoice) grants only what the new plan's allowance adds over the largest one already
 * granted this period, and keeps the credits left: an upgrade adds the difference, a downgrade
 * adds nothing, and switching back and forth never refills. An invoice older than the period
 * already recorded (late delivery) changes nothing.
 */
async function invoicePaid(
  db: D1Database,
  event: Stripe.Event,
  invoice: Stripe.Invoice,
  now: number,
): Promise<EventOutcome> {
  const details = invoice.parent?.subscription_details;
  const subscription = idOf(details?.subscription);
  if (!details || !subscription) return "ignored";
  const plan = details.metadata?.plan;
  const accountId = details.metadata?.account_id ?? (await accountByCustomer(db, idOf(invoice.customer)));
  if (!accountId || !isPaidPlan(plan)) return "ignored";
  const periodEnd = Math.max(0, ...invoice.lines.data.map((line) => line.period.end)) * 1000 || firstPeriodEnd(now);
  const allowance = planAllowance[plan];
  const paidPlan = "plan IN ('starter', 'pro', 'scale')";
  // An invoice of a subscription that has ended (paid late, or redelivered) changes nothing.
  const live = "NOT EXISTS (SELECT 1 FROM ended_subscriptions WHERE id = ?3)";
  const newPeriod = `id = ?1 AND ${live} AND (plan_period_end IS NULL OR plan_period_end < ?2 OR stripe_subscription_id IS NOT ?3 OR NOT ${paidPlan})`;
  const samePeriod = `id = ?1 AND ${live} AND plan_period_end = ?2 AND stripe_subscription_id = ?3 AND ${paidPlan}`;
  const paymentIntent = idOf(invoice.payments?.data?.[0]?.payment?.payment_intent);
  // An upgrade within the period is billed for the days left (Stripe's proration, its lines start
  // at the change): it adds that share of what the larger allowance adds, rounded up. The full
  // difference for a last-day upgrade of a few euros was the cheapest way to credits.
  const changedAt = Math.min(now, ...invoice.lines.data.map((line) => line.period.start * 1000));
  const share = Math.min(1, Math.max(0, (periodEnd - changedAt) / PLAN_PERIOD_MS));
  const added = (param: string) => {
    const exact = `((?5 - plan_period_granted) * ${param})`;
    return `(CAST(${exact} AS INTEGER) + (${exact} > CAST(${exact} AS INTEGER)))`;
  };
  return runOnce(db, [
    recordEvent(db, event, accountId, now),
    // The plan change within the period first: the new period's statements below change what it tests.
    db
      .prepare(
        ledgerInsert(
          `SELECT ?4, id, 'plan_grant', ${added("?9")}, ${added("?9")}, 0, ?6, ?7, ?8 FROM accounts WHERE ${samePeriod} AND ?5 > plan_period_granted`,
        ),
      )
      .bind(
        accountId,
        periodEnd,
        subscription,
        newId("led", now),
        allowance,
        `stripe:invoice:${invoice.id}:upgrade`,
        `${plan} plan: credits added by the upgrade (Stripe ${invoice.id})`,
        now,
        share,
      ),
    db
      .prepare(
        `UPDATE accounts SET plan = ?4, plan_credits = plan_credits + MAX(0, ${added("?6")}), plan_period_granted = MAX(plan_period_granted, ?5),
           plan_cancel_at_period_end = 0 WHERE ${samePeriod}`,
      )
      .bind(accountId, periodEnd, subscription, plan, allowance, share),
    db
      .prepare(
        ledgerInsert(
          `SELECT ?4, id, 'plan_expiry', -plan_credits, -plan_credits, 0, ?5, 'plan period ended', ?6 FROM accounts WHERE ${newPeriod} AND plan_credits > 0`,
        ),
      )
      .bind(accountId, periodEnd, subscription, newId("led", now), `stripe:invoice:${invoice.id}:expiry`, now),
    db
      .prepare(ledgerInsert(`SELECT ?4, id, 'plan_grant', ?5, ?5, 0, ?6, ?7, ?8 FROM accounts WHERE ${newPeriod}`))
      .bind(
        accountId,
        periodEnd,
        subscription,
        newId("led", now),
        allowance,
        `stripe:invoice:${invoice.id}:grant`,
        `${plan} plan credits (Stripe ${invoice.id})`,
        now,
      ),
    db
      .prepare(
        `UPDATE accounts SET plan = ?4, plan_credits = ?5, plan_period_granted = ?5, plan_period_end = ?2, stripe_subscription_id = ?3,
           stripe_customer_id = COALESCE(stripe_customer_id, ?6), plan_cancel_at_period_end = 0, plan_next = NULL WHERE ${newPeriod}`,
      )
      .bind(accountId, periodEnd, subscription, plan, allowance, idOf(invoice.customer)),
    // The payment's credits are what this invoice granted (a refund takes back at most that).
    db
      .prepare(
        `INSERT INTO payments (id, account_id, kind, item, credits, amount_cents, currency, status, payment_intent, invoice_url, created_at, paid_at)
         SELECT ?1, ?2, 'plan', ?3, (SELECT COALESCE(SUM(amount), 0) FROM ledger WHERE idempotency_key IN (?4, ?5)), ?6, ?7, 'paid', ?8, ?9, ?10, ?10
         WHERE true ON CONFLICT (id) DO NOTHING`,
      )
      .bind(
        invoice.id,
        accountId,
        plan,
        `stripe:invoice:${invoice.id}:grant`,
        `stripe:invoice:${invoice.id}:upgrade`,
        invoice.amount_paid,
        invoice.currency,
        paymentIntent,
        invoice.hosted_invoice_url ?? null,
        now,
      ),
  ]);
}

async function subscriptionUpdated(db: D1Database, subscription: Stripe.Subscription): Promise<EventOutcome> {
  const result = await db
    .prepare("UPDATE accounts SET plan_cancel_at_period_end = ? WHERE stripe_subscription_id = ?")
    .bind(subscription.cancel_at_period_end ? 1 : 0, subscription.id)
    .run();
  return result.meta.changes > 0 ? "applied" : "ignored";
}

/** The paid plan ended (cancelled at period end, or unpaid): the account moves to Solo. */
async function subscriptionDeleted(
  db: D1Database,
  event: Stripe.Event,
  subscription: Stripe.Subscription,
  now: number,
): Promise<EventOutcome> {
  const account = await db
    .prepare("SELECT id FROM accounts WHERE stripe_subscription_id = ?")
    .bind(subscription.id)
    .first<{ id: string }>();
  if (!account) {
    // Ahead of the events that attach it (Stripe does not keep their order): still remembered as
    // ended, so a late checkout or invoice.paid never attaches it to the account.
    await db
      .prepare(
        "INSERT INTO ended_subscriptions (id, account_id, ended_at) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING",
      )
      .bind(subscription.id, subscription.metadata?.account_id ?? "", now)
      .run();
    return "ignored";
  }
  const guard = "id = ?1 AND stripe_subscription_id = ?2";
  const allowance = planAllowance.solo;
  const tag = `stripe:subscription_deleted:${subscription.id}`;
  return runOnce(db, [
    recordEvent(db, event, account.id, now),
    db
      .prepare(
        "INSERT INTO ended_subscriptions (id, account_id, ended_at) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING",
      )
      .bind(subscription.id, account.id, now),
    db
      .prepare(
        ledgerInsert(
          `SELECT ?3, id, 'plan_expiry', -plan_credits, -plan_credits, 0, ?4, 'paid plan ended', ?5 FROM accounts WHERE ${guard} AND plan_credits > 0`,
        ),
      )
      .bind(account.id, subscription.id, newId("led", now), `${tag}:expiry`, now),
    db
      .prepare(
        ledgerInsert(
          `SELECT ?3, id, 'plan_grant', ?4, ?4, 0, ?5, 'solo plan credits', ?6 FROM accounts WHERE ${guard}`,
        ),
      )
      .bind(account.id, subscription.id, newId("led", now), allowance, `${tag}:grant`, now),
    db
      .prepare(
        `UPDATE accounts SET plan = 'solo', plan_credits = ?3, plan_period_granted = ?3, plan_period_end = ?4, stripe_subscription_id = NULL,
           plan_cancel_at_period_end = 0, plan_next = NULL WHERE ${guard}`,
      )
      .bind(account.id, subscription.id, allowance, firstPeriodEnd(now)),
  ]);
}

type PaymentRow = { id: string; account_id: string; kind: string; credits: number };

const paymentByIntent = (db: D1Database, paymentIntent: string) =>
  db
    .prepare("SELECT id, account_id, kind, credits FROM payments WHERE payment_intent = ? AND status != 'pending'")
    .bind(paymentIntent)
    .first<PaymentRow>();

/**
 * A plan invoice's payment recorded without its PaymentIntent (the webhook's invoice carries no
 * `payments`): Stripe says which invoice the PaymentIntent paid, and the row learns it.
 */
async function planPaymentByInvoice(
  db: D1Database,
  paymentIntent: string,
  lookups: StripeLookups | undefined,
): Promise<PaymentRow | null> {
  const invoiceId = await lookups?.invoiceOfPaymentIntent(paymentIntent);
  if (!invoiceId) return null;
  await db
    .prepare("UPDATE payments SET payment_intent = ? WHERE id = ? AND kind = 'plan' AND payment_intent IS NULL")
    .bind(paymentIntent, invoiceId)
    .run();
  return paymentByIntent(db, paymentIntent);
}

/**
 * A refund or dispute takes back the credits of that payment that are still unspent: the
 * share refunded of the order's credits, less what earlier events already took, capped by
 * what the bucket holds. Pack and top-up credits come from purchased credits, a plan
 * invoice's from plan credits.
 */
async function reverseCredits(
  db: D1Database,
  event: Stripe.Event,
  paymentIntent: string | null,
  share: number,
  now: number,
  lookups?: StripeLookups,
): Promise<EventOutcome> {
  if (!paymentIntent) return "ignored";
  const payment =
    (await paymentByIntent(db, paymentIntent)) ?? (await planPaymentByInvoice(db, paymentIntent, lookups));
  if (!payment) return "ignored";
  const target = Math.min(payment.credits, Math.ceil(payment.credits * Math.min(1, Math.max(0, share))));
  const bucket = payment.kind === "plan" ? "plan_credits" : "purchased_credits";
  const [planDelta, purchasedDelta] = payment.kind === "plan" ? ["-taken", "0"] : ["0", "-taken"];
  const taken = `MIN(${bucket}, MAX(0, ?2 - (SELECT credits_reversed FROM payments WHERE id = ?3)))`;
  return runOnce(db, [
    recordEvent(db, event, payment.account_id, now),
    db
      .prepare(
        ledgerInsert(
          `SELECT ?4, id, 'reversal', -taken, ${planDelta}, ${purchasedDelta}, ?5, ?6, ?7
           FROM (SELECT id, ${taken} AS taken FROM accounts WHERE id = ?1) WHERE taken > 0`,
        ),
      )
      .bind(
        payment.account_id,
        target,
        payment.id,
        newId("led", now),
        `stripe:reversal:${event.id}`,
        `${event.type} (${payment.id})`,
        now,
      ),
    db
      .prepare(`UPDATE accounts SET ${bucket} = ${bucket} - ${taken} WHERE id = ?1`)
      .bind(payment.account_id, target, payment.id),
    db
      .prepare(
        "UPDATE payments SET credits_reversed = MAX(credits_reversed, ?2), status = CASE WHEN ?2 >= credits THEN 'refunded' ELSE status END WHERE id = ?1",
      )
      .bind(payment.id, target),
  ]);
}
