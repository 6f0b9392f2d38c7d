/** POST /api/v1/pipelines: up to ten tool calls in order, one job. */
import { createRoute, z } from "@hono/zod-openapi";
import { PipelineEnvelopeSchema, PipelineRequestSchema } from "../../contract/pipelines";
import { pickErrors } from "../../errors";
import { createRouter } from "../../http";
import { createPipelineJob } from "../../services/media-jobs/pipelines";

const route = createRoute({
  method: "post",
  path: "/pipelines",
  operationId: "createPipeline",
  tags: ["Pipelines"],
  summary: "Run up to ten tools in order as one job",
  description:
    "Each step is a tool and its parameters; a step reads the previous step's result (only the first names its input, or the pipeline's uploadId does). Every step is checked and priced as its own call would be, on what the steps before it produce (a trim sets the length of what follows, merge adds its inputs up), so the whole pipeline is priced and debited at call time, one ledger entry per step, and a chain that cannot run (a watermark after extract-audio removed the picture, a step after transcribe) is refused with 400 before any debit. The answer is one job envelope; GET /api/v1/jobs/{id} shows each step's state and the final result. Intermediate results never leave the service. A failed or cancelled pipeline is refunded in full, once. Test keys, webhooks, Idempotency-Key and rate limits apply as to a tool call. Send templateId and variables instead of steps to run a saved template.",
  security: [{ ApiKey: [] }],
  request: {
    headers: z.object({
      "idempotency-key": z.string().optional().openapi({
        description:
          "Scoped to the API key that sends it: replays that key's first response of the same body within 24 h without a new debit; a different body answers 400",
      }),
    }),
    body: { required: true, content: { "application/json": { schema: PipelineRequestSchema } } },
  },
  responses: {
    200: {
      description: "Pipeline queued; every step's credits debited",
      content: { "application/json": { schema: PipelineEnvelopeSchema } },
    },
    ...pickErrors(400, 401, 402, 404, 500),
  },
});

export const pipelineRoutes = createRouter().openapi(route, async (c) => {
  const { webhookUrl, maxCredits, ...source } = c.req.valid("json");
  const envelope = await createPipelineJob(
    c.env,
    c.get("caller"),
    { ...source, webhookUrl, maxCredits, idempotencyKey: c.req.header("idempotency-key") },
    Date.now(),
    (task) => c.executionCtx.waitUntil(task),
  );
  return c.json(envelope, 200);
});
