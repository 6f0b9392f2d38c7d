import { createRoute, z } from "@hono/zod-openapi";
import { createRouter } from "../../http";
import { pickErrors } from "../../errors";
import { getJobForKey } from "../../services/jobs";
import { JobStatusSchema } from "./schemas";

const route = createRoute({
  method: "get",
  path: "/jobs/{id}",
  tags: ["Jobs"],
  summary: "Job status (polling)",
  description: "Readable only by the API key that created the job; any other key, an unknown id or a job ended more than 3 hours ago answers 404.",
  security: [{ ApiKey: [] }],
  request: { params: z.object({ id: z.string().min(1).openapi({ param: { name: "id", in: "path" } }) }) },
  responses: {
    200: { description: "Job status", content: { "application/json": { schema: JobStatusSchema } } },
    ...pickErrors(401, 404),
  },
});

export const jobRoutes = createRouter().openapi(route, async (c) => {
  const view = await getJobForKey(c.env.DB, c.get("caller"), c.req.valid("param").id, Date.now());
  return c.json(view, 200);
});
