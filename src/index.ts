/**
 * Entry of the API Worker: HTTP (behind the connector's OAuth provider), queue consumers, cron;
 * exports the BrandScheduler Durable Object. Jobs run in the media Worker (src/media-worker/index.ts),
 * reached through the MEDIA_RUNNER binding.
 */
import { buildApp } from "./app";
import { withResilientD1 } from "./db/resilient-d1";
import { handleMcpRequest } from "./mcp/handler";
import { MCP_ROUTE, oauthApiFor, oauthProviderFor, REFRESH_TOKEN_TTL_SECONDS } from "./mcp/oauth";
import { TOKEN_ENDPOINT, tokenEndpointWithReuseDetection } from "./mcp/refresh-reuse";
import type { Env, JobMessage } from "./env";
import { consumePublishBatch, dispatchDuePosts, type PublishMessage } from "./services/social/publishing";
import { expirePostMedia } from "./services/social/posts";
import { deleteExpiredUploadLinks } from "./services/media-jobs/upload-capabilities";
import { consumeDeadLetters, consumeJobs } from "./queues/consumer";
import { maintainNow } from "./services/billing/audit";
import { AppError, codeForStatus, errorBody, statusOf } from "./errors";
import { countRequest, rateLimits, refusalHeaders, refusalMessage } from "./services/platform/rate-limits";
import { consumeWebhookBatch } from "./services/webhooks/delivery";
import { sweepWebhooks } from "./services/webhooks/outbox";
import { assertDeployable, UnsafeDeploymentError } from "./lib/deployment-guard";
import { bodyLimitFor, BodyTooLargeError, boundedRequest } from "./lib/body-limit";

export { BrandScheduler } from "./durable-objects/brand-scheduler";

const app = buildApp();

/**
 * The OAuth endpoints (registration, token, metadata) and /api/mcp are answered by the provider
 * before the app and its middleware: they are counted here, per client address like every route
 * without an API key, so registration and tool calls through the connector are not unlimited.
 */
async function refusedPerAddress(request: Request, env: Env): Promise<Response | null> {
  const path = new URL(request.url).pathname;
  if (
    !(
      path.startsWith("/oauth/") ||
      path.startsWith("/.well-known/") ||
      path === "/api/mcp" ||
      path.startsWith("/api/mcp/")
    )
  )
    return null;
  const address = request.headers.get("cf-connecting-ip");
  if (!address || (await countRequest(env, rateLimits.public, address)) !== false) return null;
  const refusal = new AppError("rate_limited", refusalMessage(rateLimits.public));
  return Response.json(errorBody(refusal), {
    status: statusOf[refusal.code],
    headers: refusalHeaders(rateLimits.public),
  });
}

/**
 * The provider answers some refusals with an empty body (/api/mcp without a token: 401 with
 * WWW-Authenticate; an unknown well-known path: 404), and a bad token on /api/mcp with OAuth's
 * `{error, error_description}`. Every error of the API carries the error shape, so such answers
 * get one; status and headers (the WWW-Authenticate challenge clients follow) stay. The OAuth
 * endpoints' own JSON errors are kept: OAuth clients parse them.
 */
async function withErrorBody(response: Response, path: string): Promise<Response> {
  if (response.status < 400) return response;
  let description: string | undefined;
  if ((response.headers.get("content-type") ?? "").length > 0) {
    if (path !== MCP_ROUTE || !response.headers.get("content-type")!.includes("json")) return response;
    const body = (await response
      .clone()
      .json()
      .catch(() => null)) as { error?: unknown; error_description?: unknown } | null;
    if (typeof body?.error !== "string") return response;
    description = typeof body.error_description === "string" ? `${body.error_description}.` : undefined;
  } else if ((await response.clone().arrayBuffer()).byteLength > 0) return response;
  const code = codeForStatus(response.status);
  const message =
    code === "unauthorized"
      ? description
        ? `${description} Connect again through the connector (see WWW-Authenticate).`
        : "An OAuth access token is required (see WWW-Authenticate)."
      : code === "not_found"
        ? "No such route."
        : (description ?? "Request refused.");
  const headers = new Headers(response.headers);
  headers.set("content-type", "application/json");
  headers.delete("content-length");
  return new Response(JSON.stringify(errorBody(new AppError(code, message))), { status: response.status, headers });
}

/**
 * The OAuth endpoints are read by the provider before the app (and its body bound) sees them:
 * their bodies are bounded here, by the same table (src/lib/body-limit.ts), answered 413. /api/mcp
 * is not read before its token is checked; the MCP handler then bounds its body (src/mcp/handler.ts).
 */
async function bodyBoundedForProvider(request: Request): Promise<Request | Response> {
  const path = new URL(request.url).pathname;
  if (!(path.startsWith("/oauth/") || path.startsWith("/.well-known/"))) return request;
  const limit = bodyLimitFor(request.method, path, request.headers.get("content-type") ?? "");
  if (limit === null) return request;
  try {
    return await boundedRequest(request, limit);
  } catch (error) {
    if (!(error instanceof BodyTooLargeError)) throw error;
    return Response.json(errorBody(new AppError("invalid_request", error.message)), { status: 413 });
  }
}

/** Every entry point checks the deployment first (src/lib/deployment-guard.ts); the reason goes to the logs only. */
function refuseUnsafeDeployment(env: Env): UnsafeDeploymentError | null {
  try {
    assertDeployable(env);
    return null;
  } catch (error) {
    if (!(error instanceof UnsafeDeploymentError)) throw error;
    console.error(error.message);
    return error;
  }
}

export default {
  // Everything passes through the OAuth provider: it serves the OAuth endpoints, guards
  // /api/mcp with access tokens, and hands every other request to the app unchanged.
  async fetch(request, rawEnv, ctx) {
    if (refuseUnsafeDeployment(rawEnv)) {
      const refusal = new AppError(
        "internal_error",
        "This deployment is not configured to serve requests; its operator's logs say why.",
      );
      return Response.json(errorBody(refusal), { status: statusOf[refusal.code] });
    }
    const env = withResilientD1(rawEnv);
    const { origin, pathname } = new URL(request.url);
    const provider = oauthProviderFor(origin, {
      app: { fetch: (r, e, c) => app.fetch(r, e, c) },
      mcp: handleMcpRequest,
    });
    if (!provider) return app.fetch(request, env, ctx);
    const refused = await refusedPerAddress(request, env);
    if (refused) return refused;
    const bounded = await bodyBoundedForProvider(request);
    if (bounded instanceof Response) return bounded;
    const serve = (r: Request) => provider.fetch(r, env, ctx);
    if (pathname === TOKEN_ENDPOINT && bounded.method === "POST") {
      const revoke = async (grantId: string, userId: string) => oauthApiFor(origin, env)?.revokeGrant(grantId, userId);
      return tokenEndpointWithReuseDetection(bounded, env, serve, revoke, REFRESH_TOKEN_TTL_SECONDS);
    }
    return withErrorBody(await serve(bounded), pathname);
  },
  async queue(batch, rawEnv) {
    // Thrown: the messages stay in the queue (retried, then dead-lettered) instead of being handled.
    const unsafe = refuseUnsafeDeployment(rawEnv);
    if (unsafe) throw unsafe;
    const env = withResilientD1(rawEnv);
    if (batch.queue.startsWith("social-publish")) await consumePublishBatch(batch as MessageBatch<PublishMessage>, env);
    else if (batch.queue.startsWith("job-webhooks")) await consumeWebhookBatch(batch, env);
    else if (batch.queue.endsWith("-dlq")) await consumeDeadLetters(batch as MessageBatch<JobMessage>, env);
    else await consumeJobs(batch as MessageBatch<JobMessage>, env);
  },
  async scheduled(_controller, rawEnv) {
    if (refuseUnsafeDeployment(rawEnv)) return;
    const env = withResilientD1(rawEnv);
    const now = Date.now();
    const summary = await maintainNow(env.DB, env.MEDIA, now, env);
    // The sweep behind the brands' alarms, and the 30-day retention of published posts' media.
    const publishing = await dispatchDuePosts(env, null, now);
    const postMedia = await expirePostMedia(env, now);
    await deleteExpiredUploadLinks(env.DB, now);
    // Job webhooks nobody dispatched yet (jobs failed by the watchdog alarm) and old delivery logs.
    const webhooks = await sweepWebhooks(env, now);
    console.log(
      "maintenance",
      JSON.stringify({ ...summary, postsQueued: publishing.queued, postMediaExpired: postMedia, webhooks }),
    );
  },
} satisfies ExportedHandler<Env>;
