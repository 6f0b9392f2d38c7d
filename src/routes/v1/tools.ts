/**
 * The tool endpoints. They share one shape (JSON body validated by the tool's schema, job
 * envelope answer), so one route per tool is generated from the registry (src/tools/).
 */
import { createRoute, z } from "@hono/zod-openapi";
import { createRouter } from "../../http";
import { pickErrors } from "../../errors";
import { createToolJob } from "../../services/media-jobs/creation";
import { toolNames, tools } from "../../tools";
import { JobEnvelopeSchema } from "../../contract/jobs";
import { MaxCreditsField } from "../../contract/quotes";

const IdempotencyHeader = z.object({
  "idempotency-key": z.string().optional().openapi({
    description:
      "Scoped to the API key that sends it: replays that key's first response of the same body within 24 h without a new debit; a different body answers 400",
  }),
});

/** Fields every tool call accepts besides the tool's own; they change neither the price nor the job's work. */
const CallFields = z.object({
  webhookUrl: z.string().max(2048).optional().openapi({
    description:
      "Receives a signed POST (Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature) when the job completes or fails; overrides the account default (PUT /api/v1/account/webhook). https to a public host only; a refused URL answers 400 and nothing is charged. Part of the body for Idempotency-Key.",
    example: "https://example.com/hooks/media",
  }),
  maxCredits: MaxCreditsField.optional(),
});

export function toolRoutes() {
  const router = createRouter();
  for (const tool of toolNames) {
    const { params: toolSchema, summary } = tools[tool];
    // safeExtend keeps the tool's refinements (trim's end > start, watermark's text or image).
    const schema = (toolSchema as z.ZodObject).safeExtend(CallFields.shape);
    const route = createRoute({
      method: "post",
      path: `/${tool}`,
      operationId: tool.replace(/-(\w)/g, (_, letter: string) => letter.toUpperCase()),
      tags: ["Tools"],
      summary,
      security: [{ ApiKey: [] }],
      request: {
        headers: IdempotencyHeader,
        body: { required: true, content: { "application/json": { schema } } },
      },
      responses: {
        200: {
          description: "Job queued; credits debited",
          content: { "application/json": { schema: JobEnvelopeSchema } },
        },
        ...pickErrors(400, 401, 402, 500),
      },
    });
    router.openapi(route, async (c) => {
      const { webhookUrl, maxCredits, ...params } = c.req.valid("json") as { webhookUrl?: string; maxCredits?: number };
      const envelope = await createToolJob(
        c.env,
        c.get("caller"),
        { tool, params: params as never, idempotencyKey: c.req.header("idempotency-key"), webhookUrl, maxCredits },
        Date.now(),
        (task) => c.executionCtx.waitUntil(task),
      );
      return c.json(envelope, 200);
    });
  }
  return router;
}
