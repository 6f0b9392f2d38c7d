/**
 * The assistants an account connected through OAuth (grants of the connector): what the owner
 * allowed each one on the consent page (its scopes and spending caps, a row of
 * assistant_connections the connector reads at every call), what it spent, and revocation.
 */
import type { OAuthHelpers } from "@cloudflare/workers-oauth-provider";
import { invalidRequest, notFound } from "../../errors";
import { displayName } from "../../lib/display-name";
import { newId } from "../../lib/ids";
import { utcDay } from "./limits";

/** What an assistant may do: run the media tools and spend credits, and manage brands, posts and publication. */
export const assistantScopes = ["media", "social"] as const;
export type AssistantScope = (typeof assistantScopes)[number];

/** The consent page's default daily cap: a new assistant cannot spend more than this a day unless the owner says so. */
export const DEFAULT_DAILY_CREDIT_CAP = 1000;
const MAX_CAP = 100_000_000;
/** Stored as the cap of a connection without a daily cap of its own: the spending is still counted. */
const NO_CAP = Number.MAX_SAFE_INTEGER;

export interface ConnectionSettings {
  scopes: AssistantScope[];
  /** Credits per UTC day; null: no cap of its own (the balance still bounds it). */
  dailyCreditCap: number | null;
  /** Credits one call may cost; null: no cap of its own. */
  perCallCreditCap: number | null;
}

export interface Connection extends ConnectionSettings {
  connectionId: string;
}

/** Settings from a form or a tool: scopes among the known ones, caps whole numbers or empty. */
export function parseConnectionSettings(input: {
  scopes: unknown[];
  dailyCreditCap: unknown;
  perCallCreditCap: unknown;
}): ConnectionSettings {
  const scopes = assistantScopes.filter((scope) => input.scopes.includes(scope));
  if (scopes.length === 0)
    throw invalidRequest("Allow the assistant at least one thing: processing media, or publishing to networks.");
  const cap = (value: unknown, what: string): number | null => {
    if (value === undefined || value === null || value === "") return null;
    const number = Number(value);
    if (!Number.isInteger(number) || number < 0 || number > MAX_CAP)
      throw invalidRequest(
        `${what}: a whole number of credits from 0 to ${MAX_CAP.toLocaleString("en")}, or empty for none.`,
      );
    return number;
  };
  return {
    scopes,
    dailyCreditCap: cap(input.dailyCreditCap, "Credits per day"),
    perCallCreditCap: cap(input.perCallCreditCap, "Credits per call"),
  };
}

export async function createConnection(
  db: D1Database,
  accountId: string,
  settings: ConnectionSettings,
  now: number,
): Promise<string> {
  const id = newId("conn", now);
  await db
    .prepare(
      "INSERT INTO assistant_connections (id, account_id, scopes, daily_credit_cap, per_call_credit_cap, created_at) VALUES (?, ?, ?, ?, ?, ?)",
    )
    .bind(id, accountId, settings.scopes.join(" "), settings.dailyCreditCap, settings.perCallCreditCap, now)
    .run();
  return id;
}

/** The connection's settings as they are now (the owner may have changed them since the grant), or null. */
export async function getConnection(
  db: D1Database,
  accountId: string,
  connectionId: string,
): Promise<Connection | null> {
  const row = await db
    .prepare(
      "SELECT scopes, daily_credit_cap, per_call_credit_cap FROM assistant_connections WHERE id = ? AND account_id = ?",
    )
    .bind(connectionId, accountId)
    .first<{ scopes: string; daily_credit_cap: number | null; per_call_credit_cap: number | null }>();
  if (!row) return null;
  const scopes = assistantScopes.filter((scope) => row.scopes.split(" ").includes(scope));
  return { connectionId, scopes, dailyCreditCap: row.daily_credit_cap, perCallCreditCap: row.per_call_credit_cap };
}

export async function updateConnection(
  db: D1Database,
  accountId: string,
  connectionId: string,
  settings: ConnectionSettings,
): Promise<void> {
  const changed = await db
    .prepare(
      "UPDATE assistant_connections SET scopes = ?, daily_credit_cap = ?, per_call_credit_cap = ? WHERE id = ? AND account_id = ?",
    )
    .bind(settings.scopes.join(" "), settings.dailyCreditCap, settings.perCallCreditCap, connectionId, accountId)
    .run();
  if (changed.meta.changes === 0) throw notFound("No such connected app.");
}

/** Credits the connection spent today (UTC), net of refunds. */
export async function spentToday(db: D1Database, connectionId: string, now: number): Promise<number> {
  const row = await db
    .prepare("SELECT credits FROM assistant_spending WHERE connection_id = ? AND day = ?")
    .bind(connectionId, utcDay(now))
    .first<{ credits: number }>();
  return row?.credits ?? 0;
}

/**
 * The statement that counts a call's cost toward its connection's day, for the call's debit batch:
 * the cap travels with the count, and the CHECK fails the whole batch (nothing debited) past it.
 */
export function spendingStatement(
  db: D1Database,
  connection: Connection,
  cost: number,
  now: number,
): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO assistant_spending (connection_id, day, credits, cap) VALUES (?1, ?2, ?3, ?4)
       ON CONFLICT (connection_id, day) DO UPDATE SET credits = credits + excluded.credits, cap = excluded.cap`,
    )
    .bind(connection.connectionId, utcDay(now), cost, connection.dailyCreditCap ?? NO_CAP);
}

export const SPENDING_CAP_CONSTRAINT = "assistant_spending_within_cap";

export interface ConnectedAppView {
  grantId: string;
  clientName: string;
  redirectHost: string;
  createdAt: number;
  expiresAt?: number;
  /** What the owner allowed it, and what it spent today; absent for a connection made before caps existed. */
  connection?: Connection & { spentToday: number };
}

export async function listConnectedApps(
  oauth: OAuthHelpers,
  accountId: string,
  db?: D1Database,
  now = Date.now(),
): Promise<ConnectedAppView[]> {
  const apps: ConnectedAppView[] = [];
  let cursor: string | undefined;
  do {
    const page = await oauth.listUserGrants(accountId, { cursor, limit: 100 });
    for (const grant of page.items) {
      const client = await oauth.lookupClient(grant.clientId).catch(() => null);
      const redirect = grant.redirectUri ?? client?.redirectUris[0];
      const connectionId = typeof grant.metadata?.connectionId === "string" ? grant.metadata.connectionId : undefined;
      const connection = connectionId && db ? await getConnection(db, accountId, connectionId) : null;
      apps.push({
        ...(connection && db
          ? { connection: { ...connection, spentToday: await spentToday(db, connection.connectionId, now) } }
          : {}),
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
