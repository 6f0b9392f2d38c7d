/**
 * `/api/mcp`: MCP over streamable HTTP, stateless: a fresh server per request, built for the
 * account of the OAuth grant (authentication happened before this handler, in the OAuth
 * provider of src/mcp/oauth.ts). One SDK handler per isolate serves every request; the
 * request's account reaches the server factory through `authInfo`, the SDK's per-request
 * channel for the principal. Modern (2026) exchanges answer JSON; 2025-era clients get the
 * SDK's stateless legacy transport, which answers a single SSE event.
 */
import { createMcpHandler, type AuthInfo, type McpHttpHandler } from "@modelcontextprotocol/server";
import { z } from "zod";
import type { Env } from "../env";
import { MAX_JSON_BODY_BYTES } from "../lib/body-limit";
import { assistantScopes, getConnection } from "../services/accounts/connected-apps";
import { buildMcpServer } from "./server";
import type { McpContext } from "./tool-context";

/** What the OAuth grant says about the caller. */
export interface McpProps {
  accountId: string;
  connectionId?: string;
  grantId?: string;
  clientName?: string;
}

// Grant props come out of storage, maybe written by an older version: checked like any input.
const McpPropsSchema = z.object({
  accountId: z.string().min(1).max(64),
  connectionId: z.string().min(1).max(64).optional(),
  grantId: z.string().max(256).optional(),
  clientName: z.string().max(200).optional(),
});

const rpcError = (status: number, message: string) =>
  Response.json({ jsonrpc: "2.0", id: null, error: { code: -32603, message } }, { status });

let shared: McpHttpHandler | undefined;

function mcpHandler(): McpHttpHandler {
  shared ??= createMcpHandler(
    ({ authInfo }) => {
      const context = authInfo?.extra?.context as McpContext | undefined;
      if (!context) throw new Error("mcp: request without its account context");
      return buildMcpServer(context);
    },
    // Tools answer in one piece: no progress notifications to stream. Bodies up to REST's JSON
    // bound: the SDK's 4 MiB default refused a valid subtitles call (2,000,000 characters of SRT
    // are 6 MB of UTF-8 in CJK) with a transport error instead of a tool result.
    { responseMode: "json", maxRequestBodySize: MAX_JSON_BODY_BYTES },
  );
  return shared;
}

export async function handleMcpRequest(
  request: Request,
  env: Env,
  props: McpProps,
  ctx?: ExecutionContext,
): Promise<Response> {
  const parsed = McpPropsSchema.safeParse(props);
  if (!parsed.success) {
    console.error("mcp: malformed grant props", parsed.error.message);
    return rpcError(500, "The connection's grant is malformed; reconnect the connector.");
  }
  // What the owner allows this assistant now (changed on the connected-apps page at any time). A
  // grant made before scopes existed keeps what it was given then: every tool, no cap of its own.
  const { connectionId, ...grant } = parsed.data;
  const connection = connectionId
    ? await getConnection(env.DB, grant.accountId, connectionId)
    : { connectionId: null, scopes: [...assistantScopes], dailyCreditCap: null, perCallCreditCap: null };
  if (!connection) return rpcError(403, "This connection's settings are gone; connect the connector again.");
  const context: McpContext = {
    env,
    origin: new URL(request.url).origin,
    ...grant,
    connection,
    waitUntil: ctx ? (task) => ctx.waitUntil(task) : undefined,
  };
  const authInfo: AuthInfo = {
    token: "",
    clientId: parsed.data.clientName ?? "",
    scopes: [...connection.scopes],
    extra: { context },
  };
  try {
    return await mcpHandler().fetch(request, { authInfo });
  } catch (error) {
    // Tool failures are isError results already; this is the transport itself failing.
    console.error("mcp: request failed", error instanceof Error ? error.stack : String(error));
    return rpcError(500, "Internal error.");
  }
}
