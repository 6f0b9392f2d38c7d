/**
 * POST /api/webhooks/stripe: the signature is checked on the raw body before anything is
 * parsed; a bad or missing one answers 400 and changes nothing. A verified event is applied
 * exactly once (stripe-events.ts); redeliveries answer 200.
 */
import { Hono } from "hono";
import type { AppEnv } from "../http";
import { invalidRequest } from "../errors";
import { applyStripeEvent } from "../services/billing/stripe-events";
import { stripeLookups, verifyStripeEvent } from "../services/billing/stripe-client";

/** Stripe's events stay well under this; a larger body is refused before verification. */
const MAX_EVENT_BYTES = 1024 * 1024;

export const webhookRoutes = new Hono<AppEnv>().post("/stripe", async (c) => {
  if (Number(c.req.header("content-length") ?? 0) > MAX_EVENT_BYTES) throw invalidRequest("Webhook body too large.");
  const rawBody = await c.req.text();
  if (rawBody.length > MAX_EVENT_BYTES) throw invalidRequest("Webhook body too large.");
  const event = await verifyStripeEvent(c.env, rawBody, c.req.header("stripe-signature"));
  if (!event) throw invalidRequest("Missing or invalid Stripe-Signature.");
  const outcome = await applyStripeEvent(c.env.DB, event, Date.now(), stripeLookups(c.env));
  return c.json({ received: true, outcome }, 200);
});
