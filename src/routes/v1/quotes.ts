/** POST /api/v1/quotes: the exact price of a tool call before it is made; spends nothing. */
import { createRoute } from "@hono/zod-openapi";
import { QuoteRequestSchema, QuoteSchema } from "../../contract/quotes";
import { pickErrors } from "../../errors";
import { createRouter } from "../../http";
import { quoteCall } from "../../services/media-jobs/quotes";

const route = createRoute({
  method: "post",
  path: "/quotes",
  operationId: "createQuote",
  // Not "Tools": that tag lists the tools themselves (the CLI reads its commands from it).
  tags: ["Quotes"],
  summary: "Price a tool call without making it",
  description:
    "Checks the call as POST /api/v1/{tool} would (the same 400s, on the same uploads) and answers what it would debit now for the caller's plan, its estimate, the balance and whether it covers the call. Nothing is debited and no job is created. A call made next with the same inputs costs exactly creditsRequired; send it with maxCredits to make sure.",
  security: [{ ApiKey: [] }],
  request: { body: { required: true, content: { "application/json": { schema: QuoteRequestSchema } } } },
  responses: {
    200: { description: "The price of the call", content: { "application/json": { schema: QuoteSchema } } },
    ...pickErrors(400, 401),
  },
});

export const quoteRoutes = createRouter().openapi(route, async (c) =>
  c.json(await quoteCall(c.env, c.get("caller"), c.req.valid("json"), Date.now()), 200),
);
