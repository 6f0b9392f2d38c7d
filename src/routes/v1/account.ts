import { createRoute } from "@hono/zod-openapi";
import { createRouter } from "../../http";
import { pickErrors } from "../../errors";
import { getAccount } from "../../services/accounts/accounts";
import { AccountSchema } from "../../contract/account";

const route = createRoute({
  method: "get",
  path: "/account",
  operationId: "getAccount",
  tags: ["Account"],
  summary: "Credit balance and email of the key's account",
  security: [{ ApiKey: [] }],
  responses: {
    200: { description: "Account", content: { "application/json": { schema: AccountSchema } } },
    ...pickErrors(401),
  },
});

export const accountRoutes = createRouter().openapi(route, async (c) => {
  const account = await getAccount(c.env.DB, c.get("caller").accountId);
  return c.json({ balance: account.balance, email: account.email }, 200);
});
