/** API keys: create (live or test) and revoke. */
import { Hono, type Context } from "hono";
import { AppError } from "../../errors";
import { randomToken } from "../../lib/ids";
import {
  createOwnApiKey,
  listApiKeys,
  restAccessRefusal,
  revokeApiKey,
  type KeyMode,
} from "../../services/accounts/accounts";
import { KeysPage } from "../pages/keys";
import { type WebEnv } from "../session";
import { readForm } from "../form";
import { userError, notice } from "../area-kit";

export function keysPages(area: Hono<WebEnv>): void {
  const keysPage = async (
    c: Context<WebEnv>,
    extra: { created?: { apiKey: string; name: string; mode: KeyMode }; error?: string } = {},
    status: 200 | 400 = 200,
  ) => {
    const account = c.get("account");
    const keys = await listApiKeys(c.env.DB, account.accountId);
    return c.html(
      <KeysPage
        account={account}
        keys={keys}
        refusal={restAccessRefusal(account.plan)}
        notice={notice(c)}
        formNonce={randomToken(18)}
        {...extra}
      />,
      status,
    );
  };
  area.get("/keys", (c) => keysPage(c));
  area.post("/keys", async (c) => {
    const form = await readForm(c);
    try {
      const created = await createOwnApiKey(
        c.env.DB,
        c.get("account").accountId,
        form.name,
        Date.now(),
        form.mode ?? "live",
        form.nonce,
      );
      if (!created) return c.redirect("/app/keys?done=key-already-created", 303);
      return keysPage(c, { created });
    } catch (error) {
      return keysPage(c, { error: userError(error).message }, 400);
    }
  });
  area.post("/keys/:keyId/revoke", async (c) => {
    try {
      await revokeApiKey(c.env.DB, c.req.param("keyId"), Date.now(), c.get("account").accountId);
    } catch (error) {
      if (!(error instanceof AppError && error.code === "not_found")) throw error;
      return keysPage(c, { error: "No such key on this account." }, 400);
    }
    return c.redirect("/app/keys?done=revoked", 303);
  });
}
