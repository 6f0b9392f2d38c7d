/**
 * Job webhooks over HTTP: the account's default URL and signing secret, and a job's delivery
 * log. Validation and shaping only; src/services/webhooks/ signs, schedules and records.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { createRouter } from "../../http";
import { pickErrors } from "../../errors";
import {
  getAccountWebhook,
  MAX_WEBHOOK_URL_LENGTH,
  rotateAccountWebhookSecret,
  setAccountWebhookUrl,
} from "../../services/webhooks/settings";
import { webhookLogForKey } from "../../services/webhooks/delivery-log";
import { jsonContent } from "../../lib/openapi";

const AccountWebhookSchema = z
  .object({
    url: z.string().nullable().openapi({
      description:
        "Default URL notified when a job of this account ends; a call's webhookUrl wins. Null: none. Live and test keys have settings of their own: a test key reads and sets the URL and secret its test jobs use, never the live ones.",
    }),
    secret: z.string().openapi({
      description: "Signing secret (whsec_<base64>): verify webhook-signature with it (Standard Webhooks)",
      example: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    }),
    secretVersion: z.int().openapi({ description: "Increases at each rotation" }),
  })
  .openapi("AccountWebhook");

const AttemptSchema = z.object({
  attempt: z.int().openapi({ description: "1 for the first attempt" }),
  at: z.string().openapi({ description: "ISO time the attempt started" }),
  durationMs: z.int(),
  responseStatus: z
    .int()
    .nullable()
    .openapi({ description: "HTTP status answered; null when no answer (error says why)" }),
  error: z.string().nullable(),
});

const WebhookLogSchema = z
  .object({
    jobId: z.string(),
    deliveries: z.array(
      z.object({
        id: z.string().openapi({ description: "The webhook-id header, the same on every attempt (deduplicate on it)" }),
        event: z.enum(["job.completed", "job.failed"]),
        url: z.string(),
        status: z
          .enum(["pending", "delivered", "failed"])
          .openapi({ description: "failed: every attempt of the schedule was refused or unanswered" }),
        nextAttemptAt: z.string().nullable(),
        attempts: z.array(AttemptSchema),
      }),
    ),
  })
  .openapi("WebhookLog");

const common = { tags: ["Webhooks"], security: [{ ApiKey: [] }] };

const getRoute = createRoute({
  ...common,
  method: "get",
  path: "/account/webhook",
  operationId: "getAccountWebhook",
  summary: "The account's default webhook URL and signing secret",
  responses: { 200: jsonContent(AccountWebhookSchema, "Webhook settings"), ...pickErrors(400, 401, 500) },
});

const putRoute = createRoute({
  ...common,
  method: "put",
  path: "/account/webhook",
  operationId: "setAccountWebhook",
  summary: "Set the account's default webhook URL",
  description:
    "https to a public host (checked as URL uploads are, DNS included; checked again at every delivery). Jobs created afterwards without their own webhookUrl notify it.",
  request: {
    body: {
      required: true,
      content: {
        "application/json": {
          schema: z.object({
            url: z.string().max(MAX_WEBHOOK_URL_LENGTH).openapi({ example: "https://example.com/hooks/media" }),
          }),
        },
      },
    },
  },
  responses: { 200: jsonContent(AccountWebhookSchema, "Webhook settings"), ...pickErrors(400, 401, 500) },
});

const deleteRoute = createRoute({
  ...common,
  method: "delete",
  path: "/account/webhook",
  operationId: "deleteAccountWebhook",
  summary: "Remove the account's default webhook URL",
  description: "Jobs already created keep the URL they were created with.",
  responses: { 200: jsonContent(AccountWebhookSchema, "Webhook settings"), ...pickErrors(400, 401, 500) },
});

const rotateRoute = createRoute({
  ...common,
  method: "post",
  path: "/account/webhook/rotate-secret",
  operationId: "rotateWebhookSecret",
  summary: "Replace the webhook signing secret",
  description:
    "The new secret signs every attempt from now on, pending retries included. For 24 hours each delivery carries two signatures in webhook-signature (new secret first, then the previous one), so a receiver can switch without missing events; after that only the new one.",
  responses: {
    200: jsonContent(AccountWebhookSchema, "Webhook settings with the new secret"),
    ...pickErrors(400, 401, 500),
  },
});

const logRoute = createRoute({
  ...common,
  method: "get",
  path: "/jobs/{id}/webhooks",
  operationId: "listJobWebhookDeliveries",
  summary: "Delivery log of a job's webhooks",
  description:
    "One delivery per terminal event (job.completed or job.failed), with every attempt: time, duration, HTTP status or error. Attempts retry a non-2xx answer after 30 s, 2 min, 10 min, 1 h, 3 h, 6 h, 6 h and 8 h (9 attempts over 24 h). Readable only by the key that created the job (404 otherwise, as GET /api/v1/jobs/{id}), for as long as deliveries may go on: past the 3 hours of the job record, until the job row is purged a day later.",
  request: {
    params: z.object({
      id: z
        .string()
        .min(1)
        .openapi({ param: { name: "id", in: "path" } }),
    }),
  },
  responses: { 200: jsonContent(WebhookLogSchema, "Delivery log"), ...pickErrors(401, 404) },
});

/**
 * A key reads and changes the settings of its own mode: live keys the live URL and secret, test
 * keys the test ones, whose jobs alone they notify (a test key never sends a live-signed event).
 */
export const webhookSettingRoutes = createRouter()
  .openapi(getRoute, async (c) =>
    c.json(await getAccountWebhook(c.env, c.get("caller").accountId, c.get("caller").mode), 200),
  )
  .openapi(putRoute, async (c) =>
    c.json(
      await setAccountWebhookUrl(c.env, c.get("caller").accountId, c.req.valid("json").url, c.get("caller").mode),
      200,
    ),
  )
  .openapi(deleteRoute, async (c) =>
    c.json(await setAccountWebhookUrl(c.env, c.get("caller").accountId, null, c.get("caller").mode), 200),
  )
  .openapi(rotateRoute, async (c) =>
    c.json(await rotateAccountWebhookSecret(c.env, c.get("caller").accountId, Date.now(), c.get("caller").mode), 200),
  )
  .openapi(logRoute, async (c) =>
    c.json(await webhookLogForKey(c.env.DB, c.get("caller"), c.req.valid("param").id), 200),
  );
