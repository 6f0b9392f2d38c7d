import type { FC } from "hono/jsx";
import type { AccountDetails } from "../../services/accounts";
import { dateTime, shortName } from "../format";
import { AppPage, DataTable, Notice } from "../layout";

export interface ConnectedApp {
  grantId: string;
  clientName: string;
  redirectHost: string;
  createdAt: number;
  expiresAt?: number;
}

export const ConnectedAppsPage: FC<{ account: AccountDetails; apps: ConnectedApp[]; connectorUrl: string; notice?: string }> = ({ account, apps, connectorUrl, notice }) => (
  <AppPage title="Connected apps" path="/app/connected" email={account.email}>
    {notice && <Notice kind="ok">{notice}</Notice>}
    <div class="card">
      <p>
        Add the connector to an assistant (Claude, ChatGPT, any MCP client) by pasting this URL as a custom connector and leaving the OAuth fields empty:
      </p>
      <div class="secret">
        <input id="connector-url" readonly value={connectorUrl} aria-label="Connector URL" />
        <button type="button" data-copy="connector-url" hidden>
          Copy
        </button>
      </div>
    </div>
    <DataTable columns={["App", "Sends access to", "Connected", "Expires", ""]} empty="No app is connected." count={apps.length}>
      {apps.map((app) => (
        <tr data-grant-id={app.grantId}>
          <td class="wrap">{shortName(app.clientName)}</td>
          <td>{app.redirectHost}</td>
          <td>{dateTime(app.createdAt)}</td>
          <td>{app.expiresAt ? dateTime(app.expiresAt) : <span class="muted">—</span>}</td>
          <td>
            <form method="post" action={`/app/connected/${app.grantId}/revoke`} class="inline">
              <button type="submit" class="danger" data-confirm={`Disconnect ${shortName(app.clientName)}? Its next call is refused.`}>
                Disconnect
              </button>
            </form>
          </td>
        </tr>
      ))}
    </DataTable>
  </AppPage>
);
