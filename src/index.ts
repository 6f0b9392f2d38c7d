/** Worker entry: HTTP (behind the connector's OAuth provider), queue consumers, cron; exports the Durable Object classes. */
import { buildApp } from "./app";
import { handleMcpRequest } from "./mcp/handler";
import { oauthProviderFor } from "./mcp/oauth";
import type { Env } from "./env";
import { consumeDeadLetters, consumeJobs } from "./queues/consumer";
import { runMaintenance } from "./services/maintenance";

export { MediaRunner } from "./durable-objects/media-runner";

const app = buildApp();

export default {
  // Everything passes through the OAuth provider: it serves the OAuth endpoints, guards
  // /api/mcp with access tokens, and hands every other request to the app unchanged.
  fetch(request, env, ctx) {
    const provider = oauthProviderFor(new URL(request.url).origin, { app: { fetch: (r, e, c) => app.fetch(r, e, c) }, mcp: handleMcpRequest });
    return provider ? provider.fetch(request, env, ctx) : app.fetch(request, env, ctx);
  },
  async queue(batch, env) {
    if (batch.queue.endsWith("-dlq")) await consumeDeadLetters(batch, env);
    else await consumeJobs(batch, env);
  },
  async scheduled(_controller, env) {
    const summary = await runMaintenance(env.DB, env.MEDIA, Date.now());
    console.log("maintenance", JSON.stringify(summary));
  },
} satisfies ExportedHandler<Env>;
