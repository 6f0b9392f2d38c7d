/**
 * Entry of the API Worker: HTTP (behind the connector's OAuth provider), queue consumers, cron;
 * exports the BrandScheduler Durable Object. Jobs run in the media Worker (src/media-worker.ts),
 * reached through the MEDIA_RUNNER binding.
 */
import { buildApp } from "./app";
import { handleMcpRequest } from "./mcp/handler";
import { oauthProviderFor } from "./mcp/oauth";
import type { Env, JobMessage } from "./env";
import { consumePublishBatch, dispatchDuePosts, type PublishMessage } from "./services/publishing";
import { expirePostMedia } from "./services/posts";
import { deleteExpiredUploadLinks } from "./services/upload-capabilities";
import { consumeDeadLetters, consumeJobs } from "./queues/consumer";
import { maintainNow } from "./services/audit";

export { BrandScheduler } from "./durable-objects/brand-scheduler";

const app = buildApp();

export default {
  // Everything passes through the OAuth provider: it serves the OAuth endpoints, guards
  // /api/mcp with access tokens, and hands every other request to the app unchanged.
  fetch(request, env, ctx) {
    const provider = oauthProviderFor(new URL(request.url).origin, { app: { fetch: (r, e, c) => app.fetch(r, e, c) }, mcp: handleMcpRequest });
    return provider ? provider.fetch(request, env, ctx) : app.fetch(request, env, ctx);
  },
  async queue(batch, env) {
    if (batch.queue.startsWith("social-publish")) await consumePublishBatch(batch as MessageBatch<PublishMessage>, env);
    else if (batch.queue.endsWith("-dlq")) await consumeDeadLetters(batch as MessageBatch<JobMessage>, env);
    else await consumeJobs(batch as MessageBatch<JobMessage>, env);
  },
  async scheduled(_controller, env) {
    const now = Date.now();
    const summary = await maintainNow(env.DB, env.MEDIA, now);
    // The sweep behind the brands' alarms, and the 30-day retention of published posts' media.
    const publishing = await dispatchDuePosts(env, null, now);
    const postMedia = await expirePostMedia(env, now);
    await deleteExpiredUploadLinks(env.DB, now);
    console.log("maintenance", JSON.stringify({ ...summary, postsQueued: publishing.queued, postMediaExpired: postMedia }));
  },
} satisfies ExportedHandler<Env>;
