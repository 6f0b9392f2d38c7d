/**
 * The Stripe SDK on workerd: fetch HTTP client, SubtleCrypto for webhook signatures. With
 * STRIPE_API_BASE (local development and tests) it talks to scripts/local-stripe/server.ts, which
 * speaks the same wire format; otherwise to api.stripe.com.
 */
import Stripe from "stripe";
import type { Env } from "../../env";
import { AppError } from "../../errors";
import type { StripeLookups } from "./stripe-events";

export function stripeFor(env: Env): Stripe {
  if (!env.STRIPE_SECRET_KEY) throw new AppError("internal_error", "Payments are not configured (STRIPE_SECRET_KEY).");
  const base = env.STRIPE_API_BASE ? new URL(env.STRIPE_API_BASE) : undefined;
  return new Stripe(env.STRIPE_SECRET_KEY, {
    httpClient: Stripe.createFetchHttpClient(),
    maxNetworkRetries: 2,
    timeout: 20_000,
    ...(base && {
      host: base.hostname,
      port: Number(base.port || (base.protocol === "https:" ? 443 : 80)),
      protocol: base.protocol === "https:" ? "https" : "http",
    }),
  });
}

/** Look-ups the webhook's events need from Stripe's API (stripe-events.ts). */
export function stripeLookups(env: Env): StripeLookups {
  return {
    async invoiceOfPaymentIntent(paymentIntent) {
      const page = await stripeFor(env).invoicePayments.list({
        payment: { type: "payment_intent", payment_intent: paymentIntent },
        limit: 1,
      });
      const invoice = page.data[0]?.invoice;
      return typeof invoice === "string" ? invoice : (invoice?.id ?? null);
    },
  };
}

const cryptoProvider = Stripe.createSubtleCryptoProvider();

/**
 * Verifies `Stripe-Signature` over the raw body before anything parses it; null when the
 * header is missing, the timestamp is older than the tolerance or the signature is wrong.
 */
export async function verifyStripeEvent(
  env: Env,
  rawBody: string,
  signature: string | undefined,
): Promise<Stripe.Event | null> {
  if (!env.STRIPE_WEBHOOK_SECRET || !signature) return null;
  try {
    return await Stripe.webhooks.constructEventAsync(
      rawBody,
      signature,
      env.STRIPE_WEBHOOK_SECRET,
      300,
      cryptoProvider,
    );
  } catch {
    return null;
  }
}

/** Stripe's own refusals (bad parameters, unknown ids) become a clear 400, never a 500. */
export function describeStripeError(error: unknown): AppError | null {
  if (error instanceof Stripe.errors.StripeInvalidRequestError || error instanceof Stripe.errors.StripeCardError) {
    return new AppError("invalid_request", `Payment provider refused the request: ${error.message}`);
  }
  return null;
}
