/** Connected assistants: their scopes and caps, changed or revoked. */
import { Hono, type Context } from "hono";
import { AppError } from "../../errors";
import {
  assistantScopes,
  listConnectedApps,
  parseConnectionSettings,
  revokeConnectedApp,
  updateConnection,
} from "../../services/accounts/connected-apps";
import { ConnectedAppsPage } from "../pages/connected";
import { type WebEnv } from "../session";
import { readForm } from "../form";
import { userError, notice } from "../area-kit";

export function connectedPages(area: Hono<WebEnv>): void {
  const connectedPage = async (c: Context<WebEnv>, extra: { error?: string } = {}, status: 200 | 400 = 200) => {
    const account = c.get("account");
    const apps = c.env.OAUTH_PROVIDER ? await listConnectedApps(c.env.OAUTH_PROVIDER, account.accountId, c.env.DB) : [];
    const connectorUrl = `${new URL(c.req.url).origin}/api/mcp`;
    return c.html(
      <ConnectedAppsPage account={account} apps={apps} connectorUrl={connectorUrl} notice={notice(c)} {...extra} />,
      status,
    );
  };
  area.get("/connected", (c) => connectedPage(c));
  area.post("/connected/:grantId/settings", async (c) => {
    const form = await readForm(c);
    const account = c.get("account");
    const apps = c.env.OAUTH_PROVIDER ? await listConnectedApps(c.env.OAUTH_PROVIDER, account.accountId, c.env.DB) : [];
    const connection = apps.find((app) => app.grantId === c.req.param("grantId"))?.connection;
    if (!connection)
      return connectedPage(
        c,
        {
          error: "That app is not connected (any more), or was connected before settings existed: nothing was changed.",
        },
        400,
      );
    try {
      const settings = parseConnectionSettings({
        scopes: assistantScopes.filter((scope) => form[`scope_${scope}`] === "on"),
        dailyCreditCap: form.daily_cap,
        perCallCreditCap: form.call_cap,
      });
      await updateConnection(c.env.DB, account.accountId, connection.connectionId, settings);
    } catch (error) {
      return connectedPage(c, { error: userError(error).message }, 400);
    }
    return c.redirect("/app/connected?done=connection-saved", 303);
  });
  area.post("/connected/:grantId/revoke", async (c) => {
    // Served without the OAuth provider (plain http on a non-loopback host), no app can be connected.
    if (!c.env.OAUTH_PROVIDER) return c.redirect("/app/connected?done=disconnected", 303);
    const gone = await revokeConnectedApp(
      c.env.OAUTH_PROVIDER,
      c.get("account").accountId,
      c.req.param("grantId"),
    ).then(
      () => false,
      (error) => {
        if (!(error instanceof AppError && error.code === "not_found")) throw error;
        return true;
      },
    );
    // A second click (or another tab) finds it gone already: said as such, not as a disconnection.
    return c.redirect(`/app/connected?done=${gone ? "not-connected" : "disconnected"}`, 303);
  });
}
