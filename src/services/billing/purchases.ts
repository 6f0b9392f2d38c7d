/**
 * Buying credits and plans. Checkout Sessions are created here with amounts from the catalog;
 * credits and plan changes happen only when Stripe's signed events arrive
 * (stripe-events.ts). Moves that cost nothing (to the free Solo plan, back to pay as you go)
 * happen at once, recorded in the ledger.
 */
import type Stripe from "stripe";
import type { Env } from "../../env";
import { AppError, invalidRequest } from "../../errors";
import { newId } from "../../lib/ids";
import { getAccountDetails, type AccountDetails } from "../accounts/accounts";
import { findOffer, isPaidPlan, planLookupKey, planNames, type PaidPlan } from "./catalog";
import { firstPeriodEnd, isConstraintError } from "./credits";
import { planAllowance } from "./pricing";
import { requireVerifiedEmail } from "../accounts/email-verification";
import { describeStripeError, stripeFor } from "./stripe-client";

async function withStripeErrors<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw describeStripeError(error) ?? error;
  }
}

/** The account's Stripe customer, created on first purchase. */
async function ensureCustomer(env: Env, stripe: Stripe, account: AccountDetails): Promise<string> {
  if (account.stripeCustomerId) return account.stripeCustomerId;
  const customer = await stripe.customers.create({ email: account.email, metadata: { account_id: account.accountId } });
  await env.DB.prepare("UPDATE accounts SET stripe_customer_id = COALESCE(stripe_customer_id, ?) WHERE id = ?")
    .bind(customer.id, account.accountId)
    .run();
  return (await getAccountDetails(env.DB, account.accountId)).stripeCustomerId ?? customer.id;
}

/**
 * Expires the customer's checkouts still open. Their prices belong to the form the account
 * leaves (packs are pay as you go's, top-ups a monthly plan's): one paid later would buy at them.
 */
async function expireOpenCheckouts(stripe: Stripe, customer: string): Promise<void> {
  for await (const open of stripe.checkout.sessions.list({ customer, status: "open", limit: 100 })) {
    await stripe.checkout.sessions.expire(open.id).catch(() => undefined);
  }
}

/** Before a move between the free forms: a customer that never opened a checkout has none to expire. */
async function expireCheckoutsOf(env: Env, account: AccountDetails): Promise<void> {
  const customer = account.stripeCustomerId;
  if (customer) await withStripeErrors(() => expireOpenCheckouts(stripeFor(env), customer));
}

const hasActiveSubscription = (account: AccountDetails) => account.stripeSubscriptionId !== null;
const PAYMENT_CONFIRMING = "A plan payment is being confirmed; reload the billing page in a moment to change the plan.";
const day = (at: number | null) => (at === null ? "the end of the period" : new Date(at).toISOString().slice(0, 10));

/** A Checkout Session (payment mode) for a pack (pay as you go) or a top-up (monthly plans). */
export async function startCreditCheckout(
  env: Env,
  accountId: string,
  offerId: unknown,
  origin: string,
  now: number,
): Promise<string> {
  const offer = findOffer(offerId);
  if (!offer) throw invalidRequest("Unknown offer.");
  await requireVerifiedEmail(env.DB, accountId, "buy credits");
  const account = await getAccountDetails(env.DB, accountId);
  if (offer.kind === "pack" && account.plan !== "payg")
    throw invalidRequest("Credit packs are for pay-as-you-go accounts; subscribers buy top-ups.");
  if (offer.kind === "topup" && account.plan === "payg")
    throw invalidRequest("Top-ups are for subscribers of a monthly plan; pay-as-you-go accounts buy packs.");
  const stripe = stripeFor(env);
  return withStripeErrors(async () => {
    const customer = await ensureCustomer(env, stripe, account);
    const metadata = { account_id: accountId, offer: offer.id };
    const session = await stripe.checkout.sessions.create({
      mode: "payment",
      customer,
      client_reference_id: accountId,
      line_items: [
        {
          quantity: 1,
          price_data: { currency: "eur", unit_amount: offer.amountCents, product_data: { name: offer.label } },
        },
      ],
      metadata,
      payment_intent_data: { metadata },
      success_url: `${origin}/app/billing?checkout=success&session_id={CHECKOUT_SESSION_ID}`,
      cancel_url: `${origin}/app/billing?checkout=cancelled`,
    });
    await env.DB.prepare(
      `INSERT INTO payments (id, account_id, kind, item, credits, amount_cents, currency, status, created_at)
       VALUES (?, ?, ?, ?, ?, ?, 'eur', 'pending', ?)`,
    )
      .bind(session.id, accountId, offer.kind, offer.id, offer.credits, offer.amountCents, now)
      .run();
    if (!session.url) throw new AppError("internal_error", "The payment provider gave no checkout page.");
    return session.url;
  });
}

async function planPrice(stripe: Stripe, plan: PaidPlan): Promise<Stripe.Price> {
  const prices = await stripe.prices.list({ lookup_keys: [planLookupKey(plan)], active: true, limit: 1 });
  const price = prices.data[0];
  if (!price) throw new AppError("internal_error", `No Stripe price with lookup key ${planLookupKey(plan)}.`);
  return price;
}

export type PlanChoice = { redirect: string } | { done: string };

/**
 * Choose or change the plan. A paid plan without a subscription goes through Checkout
 * (subscription mode); with one, the subscription's price changes and the prorated invoice's
 * `invoice.paid` applies the new plan. Solo (free) needs no payment.
 */
export async function choosePlan(
  env: Env,
  accountId: string,
  plan: unknown,
  origin: string,
  now: number,
): Promise<PlanChoice> {
  await requireVerifiedEmail(env.DB, accountId, "choose a plan");
  const account = await getAccountDetails(env.DB, accountId);
  if (plan === "solo") {
    if (hasActiveSubscription(account)) {
      throw invalidRequest(
        account.planCancelAtPeriodEnd
          ? `The paid plan is cancelled already: the account moves to Solo on ${day(account.planPeriodEnd)}.`
          : "Cancel the paid plan to move to Solo at the end of its period.",
      );
    }
    if (account.plan === "solo") throw invalidRequest("The account is already on Solo.");
    await expireCheckoutsOf(env, account);
    const { granted, periodEnd } = await switchFreePlan(env.DB, account, "solo", now);
    if (granted > 0)
      return { done: `You are on the Solo plan: ${granted} credits now, ${planAllowance.solo} every month.` };
    return {
      done: `You are back on the Solo plan. This period's credits were already granted; the next ${planAllowance.solo} come on ${day(periodEnd)}.`,
    };
  }
  if (plan === "payg") {
    if (hasActiveSubscription(account)) {
      // A paid plan ends on Solo; pay as you go is one more choice from there.
      const ends = account.planCancelAtPeriodEnd
        ? `The paid plan is cancelled: the account moves to Solo on ${day(account.planPeriodEnd)}`
        : "Cancel the paid plan first: the account moves to Solo when it ends";
      throw invalidRequest(`${ends}, and can switch to pay as you go from there.`);
    }
    if (account.plan === "payg") throw invalidRequest("The account is already on pay as you go.");
    await expireCheckoutsOf(env, account);
    await switchFreePlan(env.DB, account, "payg", now);
    return { done: "You are on pay as you go: purchased credits never expire." };
  }
  if (!isPaidPlan(plan)) throw invalidRequest("Unknown plan.");
  const stripe = stripeFor(env);
  return withStripeErrors(async () => {
    const price = await planPrice(stripe, plan);
    if (account.stripeSubscriptionId) return await changeSubscribedPlan(env, stripe, account, plan, price, now);
    const metadata = { account_id: accountId, plan };
    const customer = await ensureCustomer(env, stripe, account);
    // One subscription per account: a second tab paid after the first would start a second one
    // the account does not track (billed, but not cancellable from here). A checkout paid whose
    // confirmation has not arrived yet shows as an active subscription; other checkouts still
    // open are expired (one that completes meanwhile cannot be expired: the check above catches
    // it on the next try), pack checkouts too: their prices are pay as you go's, which a plan's
    // top-ups replace.
    const active = await stripe.subscriptions.list({ customer, status: "active", limit: 1 });
    if (active.data.length > 0) throw invalidRequest(PAYMENT_CONFIRMING);
    await expireOpenCheckouts(stripe, customer);
    const session = await stripe.checkout.sessions.create({
      mode: "subscription",
      customer,
      client_reference_id: accountId,
      line_items: [{ price: price.id, quantity: 1 }],
      metadata,
      subscription_data: { metadata },
      success_url: `${origin}/app/billing?checkout=success&session_id={CHECKOUT_SESSION_ID}`,
      cancel_url: `${origin}/app/billing?checkout=cancelled`,
    });
    if (!session.url) throw new AppError("internal_error", "The payment provider gave no checkout page.");
    return { redirect: session.url };
  });
}

/**
 * A subscriber changes plan. An upgrade applies at once: the prorated invoice's `invoice.paid`
 * grants what the larger allowance adds. A downgrade waits for the end of the paid period (the
 * subscription's next invoice is at the smaller price, and that invoice moves the plan): prorated
 * at once, Stripe would credit the unused part of the larger plan whose credits were already
 * granted and spent, so upgrade, spend, downgrade would cost nothing. Choosing the current plan
 * again undoes a pending downgrade or cancellation; another change waits until a pending
 * downgrade is undone, so the period's price is always the plan in use.
 */
async function changeSubscribedPlan(
  env: Env,
  stripe: Stripe,
  account: AccountDetails,
  plan: PaidPlan,
  price: Stripe.Price,
  now: number,
): Promise<PlanChoice> {
  const subscriptionId = account.stripeSubscriptionId!;
  const metadata = { account_id: account.accountId, plan };
  const name = planNames[plan];
  const periodEnd = day(account.planPeriodEnd);
  // Paid but not yet confirmed (the first invoice still to come), or a renewal invoice still a
  // draft (Stripe finalises it up to an hour after the period ends, with the metadata of then):
  // a change now could be billed as one plan and granted as another.
  const confirming = invalidRequest(PAYMENT_CONFIRMING);
  if (!isPaidPlan(account.plan)) throw confirming;
  if (account.planPeriodEnd !== null && account.planPeriodEnd <= now)
    throw invalidRequest("The plan is renewing right now; change it again in a few minutes.");
  const subscription = await stripe.subscriptions.retrieve(subscriptionId);
  const item = subscription.items.data[0];
  // Stripe's price must be the one this account believes in: another tab may have changed it.
  if (item.price.lookup_key !== planLookupKey(account.planNext ?? account.plan)) throw confirming;
  const setPrice = (proration: "always_invoice" | "none") =>
    stripe.subscriptions.update(subscription.id, {
      items: [{ id: item.id, price: price.id }],
      proration_behavior: proration,
      cancel_at_period_end: false,
      metadata,
    });
  if (account.plan === plan) {
    if (!account.planNext && !account.planCancelAtPeriodEnd) throw invalidRequest(`The account is already on ${name}.`);
    // Same plan: the period is paid already, nothing to invoice.
    await setPrice("none");
    await env.DB.prepare(
      "UPDATE accounts SET plan_next = NULL, plan_cancel_at_period_end = 0 WHERE id = ? AND stripe_subscription_id = ?",
    )
      .bind(account.accountId, subscriptionId)
      .run();
    return { done: `You stay on ${name}: it renews as usual on ${periodEnd}.` };
  }
  if (account.planNext) {
    throw invalidRequest(
      `${planNames[account.planNext]} is already chosen from ${periodEnd}. Choose ${planNames[account.plan]} again to undo that first.`,
    );
  }
  if (planAllowance[plan] < planAllowance[account.plan]) {
    await setPrice("none");
    await env.DB.prepare(
      "UPDATE accounts SET plan_next = ?, plan_cancel_at_period_end = 0 WHERE id = ? AND stripe_subscription_id = ?",
    )
      .bind(plan, account.accountId, subscriptionId)
      .run();
    return {
      done: `${name} starts on ${periodEnd}, when the paid period ends; until then the account stays on ${planNames[account.plan]} with its credits.`,
    };
  }
  await setPrice("always_invoice");
  await env.DB.prepare("UPDATE accounts SET plan_cancel_at_period_end = 0 WHERE id = ? AND stripe_subscription_id = ?")
    .bind(account.accountId, subscriptionId)
    .run();
  return { done: `Change to ${name} requested; it applies as soon as Stripe confirms the payment.` };
}

/** Cancels the paid plan at the end of the period (Stripe then sends customer.subscription.deleted). */
export async function cancelPlan(env: Env, accountId: string): Promise<void> {
  const account = await getAccountDetails(env.DB, accountId);
  if (!account.stripeSubscriptionId) throw invalidRequest("There is no paid plan to cancel.");
  await withStripeErrors(() =>
    stripeFor(env).subscriptions.update(account.stripeSubscriptionId!, { cancel_at_period_end: true }),
  );
  await env.DB.prepare("UPDATE accounts SET plan_cancel_at_period_end = 1 WHERE id = ? AND stripe_subscription_id = ?")
    .bind(accountId, account.stripeSubscriptionId)
    .run();
}

/** Undoes a pending cancellation. */
export async function resumePlan(env: Env, accountId: string): Promise<void> {
  const account = await getAccountDetails(env.DB, accountId);
  if (!account.stripeSubscriptionId || !account.planCancelAtPeriodEnd)
    throw invalidRequest("There is no cancellation to undo.");
  await withStripeErrors(() =>
    stripeFor(env).subscriptions.update(account.stripeSubscriptionId!, { cancel_at_period_end: false }),
  );
  await env.DB.prepare("UPDATE accounts SET plan_cancel_at_period_end = 0 WHERE id = ?").bind(accountId).run();
}

/**
 * Moves between the free forms: to Solo (300 plan credits, renewed every 30 days by the cron) or
 * back to pay as you go (plan credits expire). Ledger and balance in one batch.
 *
 * A Solo allowance is granted once per period: pay as you go keeps the end of the last Solo period
 * and what it granted, so leaving Solo and coming back within that period resumes it without
 * credits; only a period that has ended (or none) starts a new one with the allowance.
 */
async function switchFreePlan(
  db: D1Database,
  account: AccountDetails,
  plan: "solo" | "payg",
  now: number,
): Promise<{ granted: number; periodEnd: number | null }> {
  const period = await db
    .prepare("SELECT plan_period_end, plan_period_granted FROM accounts WHERE id = ?")
    .bind(account.accountId)
    .first<{ plan_period_end: number | null; plan_period_granted: number }>();
  const previousEnd = period?.plan_period_end ?? null;
  const previousGranted = period?.plan_period_granted ?? 0;
  let periodEnd: number | null;
  let granted: number;
  let periodGranted: number;
  if (plan === "payg") {
    // Only a Solo period is remembered; another plan's (set by the operator) ends here.
    const remembered = account.plan === "solo";
    [periodEnd, granted, periodGranted] = remembered ? [previousEnd, 0, previousGranted] : [null, 0, 0];
  } else if (account.plan === "payg" && previousEnd !== null && previousEnd > now) {
    // Back from pay as you go within the Solo period it left: what is left of the allowance, if anything.
    granted = Math.max(0, planAllowance.solo - previousGranted);
    [periodEnd, periodGranted] = [previousEnd, previousGranted + granted];
  } else {
    [periodEnd, granted, periodGranted] = [firstPeriodEnd(now), planAllowance.solo, planAllowance.solo];
  }
  const tag = `switch:${account.accountId}:${plan}:${now}`;
  // The period read above must still be the account's: a concurrent switch or renewal changes it.
  const guard = "id = ?1 AND plan = ?2 AND stripe_subscription_id IS NULL AND plan_period_end IS ?3";
  let changed: number;
  try {
    const [, , update] = await db.batch([
      db
        .prepare(
          `INSERT INTO ledger (id, account_id, kind, amount, plan_delta, purchased_delta, idempotency_key, reason, created_at)
           SELECT ?4, id, 'plan_expiry', -plan_credits, -plan_credits, 0, ?5, 'plan changed', ?6 FROM accounts WHERE ${guard} AND plan_credits > 0`,
        )
        .bind(account.accountId, account.plan, previousEnd, newId("led", now), `${tag}:expiry`, now),
      db
        .prepare(
          `INSERT INTO ledger (id, account_id, kind, amount, plan_delta, purchased_delta, idempotency_key, reason, created_at)
           SELECT ?4, id, 'plan_grant', ?5, ?5, 0, ?6, 'solo plan credits', ?7 FROM accounts WHERE ${guard} AND ?5 > 0`,
        )
        .bind(account.accountId, account.plan, previousEnd, newId("led", now), granted, `${tag}:grant`, now),
      db
        .prepare(
          `UPDATE accounts SET plan = ?4, plan_credits = ?5, plan_period_granted = ?6, plan_period_end = ?7, plan_cancel_at_period_end = 0 WHERE ${guard}`,
        )
        .bind(account.accountId, account.plan, previousEnd, plan, granted, periodGranted, periodEnd),
    ]);
    changed = update!.meta.changes;
  } catch (error) {
    if (isConstraintError(error, "UNIQUE")) throw invalidRequest("The plan changed meanwhile; try again.");
    throw error;
  }
  if (changed === 0) throw invalidRequest("The plan changed meanwhile; try again.");
  return { granted, periodEnd };
}

export interface PaymentView {
  id: string;
  kind: "pack" | "topup" | "plan";
  item: string;
  credits: number;
  amountCents: number | null;
  currency: string;
  status: string;
  invoiceUrl: string | null;
  creditsReversed: number;
  createdAt: number;
}

export async function listPayments(db: D1Database, accountId: string, limit = 50): Promise<PaymentView[]> {
  const rows = await db
    .prepare(
      `SELECT id, kind, item, credits, amount_cents, currency, status, invoice_url, credits_reversed, created_at
       FROM payments WHERE account_id = ? AND status != 'pending' ORDER BY created_at DESC LIMIT ?`,
    )
    .bind(accountId, limit)
    .all<Record<string, never>>();
  return rows.results.map((r: Record<string, unknown>) => ({
    id: r.id as string,
    kind: r.kind as PaymentView["kind"],
    item: r.item as string,
    credits: r.credits as number,
    amountCents: r.amount_cents as number | null,
    currency: r.currency as string,
    status: r.status as string,
    invoiceUrl: r.invoice_url as string | null,
    creditsReversed: r.credits_reversed as number,
    createdAt: r.created_at as number,
  }));
}
