/**
 * Operator API (/api/admin): accounts, keys and credits, behind the ADMIN_TOKEN secret.
 * Used by `npm run admin` and the dev command; the developer area will call the same services.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { createMiddleware } from "hono/factory";
import { createRouter, type AppEnv } from "../../http";
import { notFound, pickErrors, unauthorized } from "../../errors";
import { auditAccount, findOrphans, maintainNow } from "../../services/billing/audit";
import { adjustPurchasedCredits } from "../../services/billing/credits";
import { createAccount, createApiKey, keyModes, revokeApiKey } from "../../services/accounts/accounts";
import { plans } from "../../services/billing/pricing";
import { constantTimeEqual } from "../../lib/constant-time";
import { hashPassword } from "../../lib/password";
import { MIN_PASSWORD_LENGTH } from "../../services/accounts/auth";
import { jsonContent, queryInteger } from "../../lib/openapi";

export const requireAdmin = createMiddleware<AppEnv>(async (c, next) => {
  const expected = c.env.ADMIN_TOKEN;
  const given = /^Bearer\s+(\S+)$/i.exec(c.req.header("authorization") ?? "")?.[1];
  if (!expected || !given || !constantTimeEqual(given, expected)) throw unauthorized("Admin token missing or invalid.");
  await next();
});

const security = [{ AdminToken: [] }];

const AccountInput = z.object({
  email: z.email(),
  credits: z
    .int()
    .min(0)
    .max(1_000_000_000)
    .optional()
    .openapi({ description: "Purchased credits to start with (never expire)" }),
  plan: z.enum(plans).optional().openapi({ description: "payg (default) or a monthly plan" }),
  password: z
    .string()
    .min(MIN_PASSWORD_LENGTH)
    .max(200)
    .optional()
    .openapi({ description: "Developer-area password (stored as a scrypt hash)" }),
});
const AccountOutput = z.object({ accountId: z.string(), email: z.string(), balance: z.int(), plan: z.enum(plans) });

const createAccountRoute = createRoute({
  method: "post",
  path: "/accounts",
  operationId: "adminCreateAccount",
  tags: ["Admin"],
  summary: "Create an account",
  security,
  request: { body: { required: true, content: { "application/json": { schema: AccountInput } } } },
  responses: { 200: jsonContent(AccountOutput, "Account created"), ...pickErrors(400, 401) },
});

const createKeyRoute = createRoute({
  method: "post",
  path: "/accounts/{accountId}/keys",
  operationId: "adminCreateKey",
  tags: ["Admin"],
  summary: "Create an API key (shown once): live, or test with ?mode=test",
  security,
  request: {
    params: z.object({ accountId: z.string() }),
    query: z.object({
      mode: z
        .enum(keyModes)
        .default("live")
        .openapi({ description: "test: an mk_test_ key (no credits spent, results marked TEST, test data apart)" }),
    }),
  },
  responses: {
    200: jsonContent(z.object({ keyId: z.string(), apiKey: z.string(), mode: z.enum(keyModes) }), "Key created"),
    ...pickErrors(400, 401, 404),
  },
});

const creditsRoute = createRoute({
  method: "post",
  path: "/accounts/{accountId}/credits",
  operationId: "adminGrantCredits",
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
            amount: z
              .int()
              .refine((n) => n !== 0, "must not be 0")
              .refine((n) => Math.abs(n) <= 1_000_000_000, "is too large"),
            reason: z.string().min(1).max(500),
          }),
        },
      },
    },
  },
  responses: { 200: jsonContent(z.object({ balance: z.int() }), "New balance"), ...pickErrors(400, 401, 404) },
});

const revokeRoute = createRoute({
  method: "delete",
  path: "/keys/{keyId}",
  operationId: "adminRevokeKey",
  tags: ["Admin"],
  summary: "Revoke an API key (effective on the next request)",
  security,
  request: { params: z.object({ keyId: z.string() }) },
  responses: {
    200: jsonContent(z.object({ keyId: z.string(), revoked: z.literal(true) }), "Revoked"),
    ...pickErrors(401, 404),
  },
});

const AuditOutput = z.object({
  accountId: z.string(),
  balance: z.int(),
  ledgerTotal: z.int(),
  jobs: z.object({ queued: z.int(), processing: z.int(), completed: z.int(), failed: z.int() }),
  completedCost: z.int().openapi({ description: "Credits of the completed jobs" }),
  failedNotRefunded: z.int(),
  refundedNotFailed: z.int(),
  paidNotDebited: z.int(),
  consistent: z.boolean().openapi({
    description: "balance = ledger sum, every failed job refunded once, no other refund, every paid job debited",
  }),
});

const auditRoute = createRoute({
  method: "get",
  path: "/accounts/{accountId}/audit",
  operationId: "adminAuditAccount",
  tags: ["Admin"],
  summary: "Check an account's balance against its ledger and its jobs",
  security,
  request: { params: z.object({ accountId: z.string().max(64) }) },
  responses: { 200: jsonContent(AuditOutput, "Audit"), ...pickErrors(401, 404) },
});

const orphansRoute = createRoute({
  method: "get",
  path: "/storage/orphans",
  operationId: "adminListOrphans",
  tags: ["Admin"],
  summary:
    "Objects of the media store that no upload or job refers to (older than 10 minutes); the maintenance run deletes them",
  security,
  request: {
    query: z.object({
      graceSeconds: queryInteger(0, 86_400)
        .optional()
        .openapi({ description: "Age below which an object is not counted (default 600: a write may be in flight)" }),
    }),
  },
  responses: {
    200: jsonContent(
      z.object({
        scanned: z.int(),
        count: z.int(),
        orphans: z.array(z.string()).openapi({ description: "The first 100 keys" }),
      }),
      "Report",
    ),
    ...pickErrors(401),
  },
});

const maintenanceRoute = createRoute({
  method: "post",
  path: "/maintenance",
  operationId: "adminRunMaintenance",
  tags: ["Admin"],
  summary:
    "Run the cron's maintenance now: fail and refund jobs past their deadline, delete expired and orphaned objects",
  security,
  request: {
    query: z.object({
      orphanGraceSeconds: queryInteger(0, 86_400).optional().openapi({
        description: "Orphans younger than this are kept (default 600); 0 only when no write is in flight",
      }),
    }),
  },
  responses: { 200: jsonContent(z.record(z.string(), z.number()), "What it did"), ...pickErrors(401) },
});

export function adminRoutes() {
  const router = createRouter();
  router.use("*", requireAdmin);
  router.openapi(createAccountRoute, async (c) => {
    const { password, ...input } = c.req.valid("json");
    const passwordHash = password === undefined ? undefined : await hashPassword(password);
    return c.json(await createAccount(c.env.DB, { ...input, passwordHash }, Date.now()), 200);
  });
  router.openapi(createKeyRoute, async (c) =>
    c.json(
      await createApiKey(c.env.DB, c.req.valid("param").accountId, Date.now(), "", c.req.valid("query").mode),
      200,
    ),
  );
  router.openapi(creditsRoute, async (c) => {
    const { amount, reason } = c.req.valid("json");
    const balance = await adjustPurchasedCredits(c.env.DB, c.req.valid("param").accountId, amount, reason, Date.now());
    return c.json({ balance }, 200);
  });
  router.openapi(auditRoute, async (c) => {
    const audit = await auditAccount(c.env.DB, c.req.valid("param").accountId);
    if (!audit) throw notFound("No such account.");
    return c.json(audit, 200);
  });
  router.openapi(orphansRoute, async (c) => {
    const { graceSeconds } = c.req.valid("query");
    const report = await findOrphans(c.env.DB, c.env.MEDIA, Date.now(), {
      graceMs: graceSeconds === undefined ? undefined : graceSeconds * 1000,
    });
    return c.json(
      { scanned: report.scanned, count: report.orphans.length, orphans: report.orphans.slice(0, 100) },
      200,
    );
  });
  router.openapi(maintenanceRoute, async (c) => {
    const { orphanGraceSeconds } = c.req.valid("query");
    const orphanGraceMs = orphanGraceSeconds === undefined ? undefined : orphanGraceSeconds * 1000;
    return c.json(await maintainNow(c.env.DB, c.env.MEDIA, Date.now(), c.env, orphanGraceMs), 200);
  });
  router.openapi(revokeRoute, async (c) => {
    const { keyId } = c.req.valid("param");
    await revokeApiKey(c.env.DB, keyId, Date.now());
    return c.json({ keyId, revoked: true as const }, 200);
  });
  return router;
}
