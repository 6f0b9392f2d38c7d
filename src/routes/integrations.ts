/**
 * Calls from a brand's own integration (no API key): engagement it measured on the networks it
 * publishes to, signed with the brand's webhook secret (Webhook-Timestamp, Webhook-Signature).
 */
import { Hono } from "hono";
import type { AppEnv } from "../http";
import { invalidRequest } from "../errors";
import { reportEngagement } from "../services/social/post-stats";

export const integrationRoutes = new Hono<AppEnv>().post("/engagement", async (c) => {
  const body = await c.req.text();
  if (body.length > 16_384) throw invalidRequest("Body too large.");
  await reportEngagement(c.env, body, c.req.header("webhook-timestamp"), c.req.header("webhook-signature"), Date.now());
  return c.json({ recorded: true }, 200);
});
