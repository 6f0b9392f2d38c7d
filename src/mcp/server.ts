/**
 * The connector's MCP server, one instance per request (stateless): its tools are rows of tables
 * (media-tools.ts, pipeline-tools.ts, social-tools.ts) registered by one loop (tool-table.ts).
 * Every tool calls the same services as REST: the ten media tools come from the tool registry (same schema, same
 * validation, same prices, same job creation and refunds). Errors come back as `isError` results whose text is `{code, message, ...}` as
 * JSON (no structuredContent); a call that cannot be paid carries `balance`, `required` and the
 * billing page.
 */
import { McpServer } from "@modelcontextprotocol/server";
import { mediaTools } from "./media-tools";
import { pipelineTools } from "./pipeline-tools";
import { socialTools } from "./social-tools";
import type { McpContext } from "./tool-context";
import { registerTools } from "./tool-table";

export function buildMcpServer(context: McpContext): McpServer {
  const server = new McpServer(
    { name: "media-credits-api", version: "1.0.0" },
    {
      // Stateless streamable HTTP (no GET stream): a list-changed notification could never arrive.
      capabilities: { tools: { listChanged: false } },
      instructions:
        "Process video and audio for the signed-in account: upload media (upload_from_url for a public URL, create_upload_link then get_upload_link for a file on the person's computer), run a tool (it returns a jobId and spends credits), call get_job with waitSeconds until it is completed, then give the user the downloadUrl (valid 3 hours). get_balance shows the credits. Several tools in a row (trim then clean_audio then convert...) are one job with run_pipeline (quote it first); save_template keeps such a chain with {{name}} variables for next time. Social posts (free): create_brand, create_post (media from an upload or a finished job), submit_post + create_approval_link when the brand needs client approval, schedule_post, then get_post and get_brand_stats.",
    },
  );

  registerTools(server, context, [...mediaTools, ...pipelineTools, ...socialTools]);
  return server;
}
