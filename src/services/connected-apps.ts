/** The assistants an account connected through OAuth (grants of the connector), and their revocation. */
import type { OAuthHelpers } from "@cloudflare/workers-oauth-provider";
import { notFound } from "../errors";
import { displayName } from "../lib/display-name";

export interface ConnectedAppView {
  grantId: string;
  clientName: string;
  redirectHost: string;
  createdAt: number;
  expiresAt?: number;
}

export async function listConnectedApps(oauth: OAuthHelpers, accountId: string): Promise<ConnectedAppView[]> {
  const apps: ConnectedAppView[] = [];
  let cursor: string | undefined;
  do {
    const page = await oauth.listUserGrants(accountId, { cursor, limit: 100 });
    for (const grant of page.items) {
      const client = await oauth.lookupClient(grant.clientId).catch(() => null);
      const redirect = grant.redirectUri ?? client?.redirectUris[0];
      apps.push({
        grantId: grant.id,
        // Self-registered: anyone names a client, so direction controls go as in every shown name.
        clientName: displayName(client?.clientName ?? "") || grant.clientId,
        redirectHost: redirect ? new URL(redirect).host : "",
        // The library counts seconds; the area shows milliseconds.
        createdAt: grant.createdAt * 1000,
        expiresAt: grant.expiresAt ? grant.expiresAt * 1000 : undefined,
      });
    }
    cursor = page.cursor;
  } while (cursor);
  return apps.sort((a, b) => b.createdAt - a.createdAt);
}

/** Revokes a grant of this account: its tokens stop working at once (the next MCP call is a 401). */
export async function revokeConnectedApp(oauth: OAuthHelpers, accountId: string, grantId: string): Promise<void> {
  const apps = await listConnectedApps(oauth, accountId);
  if (!apps.some((app) => app.grantId === grantId)) throw notFound("No such connected app.");
  await oauth.revokeGrant(grantId, accountId);
}

/** Revokes every grant of the account: a password reset cuts off the assistants too, not only the browsers. */
export async function revokeAllConnectedApps(oauth: OAuthHelpers, accountId: string): Promise<number> {
  const apps = await listConnectedApps(oauth, accountId);
  for (const app of apps) await oauth.revokeGrant(app.grantId, accountId);
  return apps.length;
}
