import { createRoute, z } from "@hono/zod-openapi";
import { createRouter } from "../../http";
import { pickErrors } from "../../errors";
import { cancelJob } from "../../services/media-jobs/lifecycle";
import { MAX_JOB_WAIT_SECONDS, waitForJobForKey } from "../../services/media-jobs/reads";
import { queryInteger } from "../../lib/openapi";
import { JobStatusSchema } from "../../contract/jobs";

const route = createRoute({
  method: "get",
  path: "/jobs/{id}",
  operationId: "getJob",
  tags: ["Jobs"],
  summary: "Job status (polling)",
  description: `Readable only by the API key that created the job; any other key, an unknown id or a job ended more than 3 hours ago answers 404. With \`wait\`, a queued or processing job is answered when it ends (at once, not at the next poll), when a pipeline starts its next step, or after that many seconds, whichever comes first, with its state then: one request instead of a poll loop.`,
  security: [{ ApiKey: [] }],
  request: {
    params: z.object({
      id: z
        .string()
        .min(1)
        .openapi({ param: { name: "id", in: "path" } }),
    }),
    query: z.object({
      wait: queryInteger(0, MAX_JOB_WAIT_SECONDS)
        .optional()
        .openapi({
          param: { name: "wait", in: "query" },
          description: `Seconds to wait for the job to end before answering, 0-${MAX_JOB_WAIT_SECONDS} (default 0: answer at once).`,
          example: 30,
        }),
    }),
  },
  responses: {
    200: { description: "Job status", content: { "application/json": { schema: JobStatusSchema } } },
    ...pickErrors(400, 401, 404),
  },
});

const cancelRoute = createRoute({
  method: "post",
  path: "/jobs/{id}/cancel",
  operationId: "cancelJob",
  tags: ["Jobs"],
  summary: "Cancel a queued or processing job (refunded in full, once)",
  description:
    "The job ends as failed with the error 'Cancelled at the caller's request; credits refunded.' and its credits are refunded; processing on the backend is stopped. A job that already ended answers 400 naming its state; another key or an unknown job answers 404.",
  security: [{ ApiKey: [] }],
  request: {
    params: z.object({
      id: z
        .string()
        .min(1)
        .openapi({ param: { name: "id", in: "path" } }),
    }),
  },
  responses: {
    200: { description: "The cancelled job", content: { "application/json": { schema: JobStatusSchema } } },
    ...pickErrors(400, 401, 404),
  },
});

export const jobRoutes = createRouter()
  .openapi(route, async (c) => {
    const view = await waitForJobForKey(
      c.env,
      c.get("caller"),
      c.req.valid("param").id,
      (c.req.valid("query").wait ?? 0) * 1000,
    );
    return c.json(view, 200);
  })
  .openapi(cancelRoute, async (c) =>
    c.json(await cancelJob(c.env, c.get("caller"), c.req.valid("param").id, Date.now()), 200),
  );
