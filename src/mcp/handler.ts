/**
 * `/api/mcp`: MCP over streamable HTTP, stateless (a fresh server per request), reached only
 * through the OAuth provider with a valid access token (src/mcp/oauth.ts); `props` carries the
 * account the person authorized.
 */
import { createMcpHandler } from "@modelcontextprotocol/server";
import type { Env } from "../env";
import type { McpGrantProps } from "./oauth";
import { buildMcpServer } from "./server";

export async function handleMcpRequest(request: Request, env: Env, props: McpGrantProps): Promise<Response> {
  const origin = new URL(request.url).origin;
  const handler = createMcpHandler(() => buildMcpServer({ env, accountId: props.accountId, origin }), { responseMode: "json" });
  try {
    return await handler.fetch(request);
  } finally {
    await handler.close();
  }
}
