/**
 * The tool endpoints. They share one shape (JSON body validated by the tool's schema, job
 * envelope answer), so one route per tool is generated from the registry (src/tools/).
 */
import { createRoute, z } from "@hono/zod-openapi";
import { createRouter } from "../../http";
import { pickErrors } from "../../errors";
import { createToolJob } from "../../services/jobs";
import { toolNames, tools } from "../../tools";
import { JobEnvelopeSchema } from "./schemas";

const IdempotencyHeader = z.object({
  "idempotency-key": z.string().optional().openapi({
    description: "Replays the first response of the same body within 24 h without a new debit; a different body answers 400",
  }),
});

export function toolRoutes() {
  const router = createRouter();
  for (const tool of toolNames) {
    const { params: schema, summary } = tools[tool];
    const route = createRoute({
      method: "post",
      path: `/${tool}`,
      tags: ["Tools"],
      summary,
      security: [{ ApiKey: [] }],
      request: {
        headers: IdempotencyHeader,
        body: { required: true, content: { "application/json": { schema } } },
      },
      responses: {
        200: { description: "Job queued; credits debited", content: { "application/json": { schema: JobEnvelopeSchema } } },
        ...pickErrors(400, 401, 402, 500),
      },
    });
    router.openapi(route, async (c) => {
      const params = c.req.valid("json") as never;
      const envelope = await createToolJob(
        c.env,
        c.get("caller"),
        { tool, params, idempotencyKey: c.req.header("idempotency-key") },
        Date.now(),
        (task) => c.executionCtx.waitUntil(task),
      );
      return c.json(envelope, 200);
    });
  }
  return router;
}
