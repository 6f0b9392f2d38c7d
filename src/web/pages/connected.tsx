import type { FC } from "hono/jsx";
import type { AccountDetails } from "../../services/accounts/accounts";
import type { ConnectedAppView } from "../../services/accounts/connected-apps";
import { credits, dateTime, shortName } from "../format";
import { AppPage, ConfirmedAction, DataTable, Notice } from "../layout";

export type ConnectedApp = ConnectedAppView;

const SCOPE_LABEL = { media: "process media", social: "posts and publishing" } as const;

/** What the owner allowed the app, and what it spent today; a connection from before caps had every scope and no cap. */
const Allowed: FC<{ app: ConnectedApp }> = ({ app }) =>
  app.connection ? (
    <>
      {app.connection.scopes.map((scope) => SCOPE_LABEL[scope]).join(", ")}
      <br />
      <span class="muted">
        {app.connection.dailyCreditCap === null
          ? "no daily cap"
          : `${credits(app.connection.dailyCreditCap)} credits a day`}
        ,{" "}
        {app.connection.perCallCreditCap === null
          ? "no cap a call"
          : `${credits(app.connection.perCallCreditCap)} a call`}
        ; spent today: {credits(app.connection.spentToday)}
      </span>
    </>
  ) : (
    <span class="muted">everything, no cap (connected before caps existed: reconnect it to set some)</span>
  );

/** The owner changes what an app may do; it applies from its next call. */
const Settings: FC<{ app: ConnectedApp }> = ({ app }) =>
  app.connection ? (
    <details>
      <summary>Change</summary>
      <form method="post" action={`/app/connected/${app.grantId}/settings`} class="stack" style="margin-top:8px">
        <label class="check">
          <input type="checkbox" name="scope_media" checked={app.connection.scopes.includes("media")} />
          <span>Process media (spends credits)</span>
        </label>
        <label class="check">
          <input type="checkbox" name="scope_social" checked={app.connection.scopes.includes("social")} />
          <span>Posts and publishing</span>
        </label>
        <label>
          Credits per day
          <input
            type="number"
            name="daily_cap"
            min={0}
            max={100000000}
            step={1}
            value={app.connection.dailyCreditCap === null ? "" : String(app.connection.dailyCreditCap)}
          />
        </label>
        <label>
          Credits per call
          <input
            type="number"
            name="call_cap"
            min={0}
            max={100000000}
            step={1}
            value={app.connection.perCallCreditCap === null ? "" : String(app.connection.perCallCreditCap)}
          />
        </label>
        <button type="submit">Save</button>
      </form>
    </details>
  ) : null;

export const ConnectedAppsPage: FC<{
  account: AccountDetails;
  apps: ConnectedApp[];
  connectorUrl: string;
  notice?: string;
  error?: string;
}> = ({ account, apps, connectorUrl, notice, error }) => (
  <AppPage title="Connected apps" path="/app/connected" email={account.email} unverified={!account.emailVerified}>
    {notice && <Notice kind="ok">{notice}</Notice>}
    {error && <Notice kind="error">{error}</Notice>}
    <div class="card">
      <p>
        Add the connector to an assistant (Claude, ChatGPT, any MCP client) by pasting this URL as a custom connector
        and leaving the OAuth fields empty:
      </p>
      <div class="secret">
        <input id="connector-url" readonly value={connectorUrl} aria-label="Connector URL" />
        <button type="button" data-copy="connector-url" hidden>
          Copy
        </button>
      </div>
      <p class="muted">
        When you connect one, you choose what it may do and how much it may spend; change it here at any time.
      </p>
    </div>
    <DataTable
      columns={["App", "Allowed", "Sends access to", "Connected", ""]}
      empty="No app is connected."
      count={apps.length}
    >
      {apps.map((app) => (
        <tr data-grant-id={app.grantId}>
          <td class="wrap">{shortName(app.clientName)}</td>
          <td class="wrap" data-testid="allowed">
            <Allowed app={app} />
            <Settings app={app} />
          </td>
          <td>{app.redirectHost}</td>
          <td>{dateTime(app.createdAt)}</td>
          <td>
            <ConfirmedAction
              action={`/app/connected/${app.grantId}/revoke`}
              kind="danger"
              confirm={`Disconnect ${shortName(app.clientName)}? Its next call is refused.`}
            >
              Disconnect
            </ConfirmedAction>
          </td>
        </tr>
      ))}
    </DataTable>
  </AppPage>
);
