/**
 * Operator API (/api/admin): accounts, keys and credits, behind the ADMIN_TOKEN secret.
 * Used by `npm run admin` and the dev command; the developer area will call the same services.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { createMiddleware } from "hono/factory";
import { createRouter, type AppEnv } from "../../http";
import { pickErrors, unauthorized } from "../../errors";
import { adjustPurchasedCredits } from "../../services/credits";
import { createAccount, createApiKey, revokeApiKey } from "../../services/accounts";
import { plans } from "../../services/pricing";
import { constantTimeEqual } from "../../lib/constant-time";
import { hashPassword } from "../../lib/password";
import { MIN_PASSWORD_LENGTH } from "../../services/auth";

export const requireAdmin = createMiddleware<AppEnv>(async (c, next) => {
  const expected = c.env.ADMIN_TOKEN;
  const given = /^Bearer\s+(\S+)$/i.exec(c.req.header("authorization") ?? "")?.[1];
  if (!expected || !given || !constantTimeEqual(given, expected)) throw unauthorized("Admin token missing or invalid.");
  await next();
});

const json = <T extends z.ZodType>(schema: T, description: string) => ({ description, content: { "application/json": { schema } } });
const security = [{ AdminToken: [] }];

const AccountInput = z.object({
  email: z.email(),
  credits: z.int().min(0).max(1_000_000_000).optional().openapi({ description: "Purchased credits to start with (never expire)" }),
  plan: z.enum(plans).optional().openapi({ description: "payg (default) or a monthly plan" }),
  password: z.string().min(MIN_PASSWORD_LENGTH).max(200).optional().openapi({ description: "Developer-area password (stored as a scrypt hash)" }),
});
const AccountOutput = z.object({ accountId: z.string(), email: z.string(), balance: z.int(), plan: z.enum(plans) });

const createAccountRoute = createRoute({
  method: "post",
  path: "/accounts",
  tags: ["Admin"],
  summary: "Create an account",
  security,
  request: { body: { required: true, content: { "application/json": { schema: AccountInput } } } },
  responses: { 200: json(AccountOutput, "Account created"), ...pickErrors(400, 401) },
});

const createKeyRoute = createRoute({
  method: "post",
  path: "/accounts/{accountId}/keys",
  tags: ["Admin"],
  summary: "Create a live API key (shown once)",
  security,
  request: { params: z.object({ accountId: z.string() }) },
  responses: { 200: json(z.object({ keyId: z.string(), apiKey: z.string() }), "Key created"), ...pickErrors(401, 404) },
});

const creditsRoute = createRoute({
  method: "post",
  path: "/accounts/{accountId}/credits",
  tags: ["Admin"],
  summary: "Give (or, negative, remove) purchased credits",
  security,
  request: {
    params: z.object({ accountId: z.string() }),
    body: {
      required: true,
      content: {
        "application/json": {
          schema: z.object({
            amount: z.int().refine((n) => n !== 0, "must not be 0").refine((n) => Math.abs(n) <= 1_000_000_000, "is too large"),
            reason: z.string().min(1).max(500),
          }),
        },
      },
    },
  },
  responses: { 200: json(z.object({ balance: z.int() }), "New balance"), ...pickErrors(400, 401, 404) },
});

const revokeRoute = createRoute({
  method: "delete",
  path: "/keys/{keyId}",
  tags: ["Admin"],
  summary: "Revoke an API key (effective on the next request)",
  security,
  request: { params: z.object({ keyId: z.string() }) },
  responses: { 200: json(z.object({ keyId: z.string(), revoked: z.literal(true) }), "Revoked"), ...pickErrors(401, 404) },
});

export function adminRoutes() {
  const router = createRouter();
  router.use("*", requireAdmin);
  router.openapi(createAccountRoute, async (c) => {
    const { password, ...input } = c.req.valid("json");
    const passwordHash = password === undefined ? undefined : await hashPassword(password);
    return c.json(await createAccount(c.env.DB, { ...input, passwordHash }, Date.now()), 200);
  });
  router.openapi(createKeyRoute, async (c) => c.json(await createApiKey(c.env.DB, c.req.valid("param").accountId, Date.now()), 200));
  router.openapi(creditsRoute, async (c) => {
    const { amount, reason } = c.req.valid("json");
    const balance = await adjustPurchasedCredits(c.env.DB, c.req.valid("param").accountId, amount, reason, Date.now());
    return c.json({ balance }, 200);
  });
  router.openapi(revokeRoute, async (c) => {
    const { keyId } = c.req.valid("param");
    await revokeApiKey(c.env.DB, keyId, Date.now());
    return c.json({ keyId, revoked: true as const }, 200);
  });
  return router;
}
