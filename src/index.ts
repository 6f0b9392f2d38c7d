/** Worker entry: HTTP, queue consumers, cron; exports the Durable Object classes. */
import { buildApp } from "./app";
import type { Env } from "./env";
import { consumeDeadLetters, consumeJobs } from "./queues/consumer";
import { runMaintenance } from "./services/maintenance";

export { MediaRunner } from "./durable-objects/media-runner";

const app = buildApp();

export default {
  fetch: (request, env, ctx) => app.fetch(request, env, ctx),
  async queue(batch, env) {
    if (batch.queue.endsWith("-dlq")) await consumeDeadLetters(batch, env);
    else await consumeJobs(batch, env);
  },
  async scheduled(_controller, env) {
    const summary = await runMaintenance(env.DB, env.MEDIA, Date.now());
    console.log("maintenance", JSON.stringify(summary));
  },
} satisfies ExportedHandler<Env>;
