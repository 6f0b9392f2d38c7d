/**
 * The HTTP application: public OpenAPI document and docs page, API-key authentication for the
 * rest of /api/v1, the operator API, downloads, and the contract's error shape for everything
 * else (unknown routes included).
 */
import { createMiddleware } from "hono/factory";
import { HTTPException } from "hono/http-exception";
import { createRouter, errorResponse, handleError, type AppEnv } from "./http";
import { AppError, errorBody, invalidRequest } from "./errors";
import { authenticate } from "./services/accounts/accounts";
import { describePrices } from "./services/billing/pricing";
import { accountRoutes } from "./routes/v1/account";
import { jobRoutes } from "./routes/v1/jobs";
import { toolRoutes } from "./routes/v1/tools";
import { quoteRoutes } from "./routes/v1/quotes";
import { pipelineRoutes } from "./routes/v1/pipelines";
import { templateRoutes } from "./routes/v1/templates";
import { uploadRoutes } from "./routes/v1/uploads";
import { resumableUploadRoutes } from "./routes/v1/resumable-uploads";
import { voiceRoutes } from "./routes/v1/voices";
import { webhookSettingRoutes } from "./routes/v1/webhooks";
import { adminRoutes } from "./routes/admin";
import { downloadRoutes, postMediaRoutes } from "./routes/download";
import { internalRoutes } from "./routes/internal";
import { webhookRoutes } from "./routes/webhooks";
import { webRoutes } from "./web/routes";
import { authorizeRoutes } from "./web/authorize";
import { reviewRoutes } from "./web/review";
import { uploadPageRoutes } from "./web/upload-page";
import { socialRoutes } from "./routes/v1/social";
import { integrationRoutes } from "./routes/integrations";
import { documentRateLimits, limitAddress, limitPerAddress, limitPerKey } from "./rate-limiting";
import { limitBodies } from "./lib/body-limit";
import { pageError } from "./web/page-errors";
import { linkPageSection } from "./web/layout";
import { routeTable, type RouteTest } from "./lib/route-table";
import { describeRateLimits } from "./services/platform/rate-limits";
import { renderApiDocs } from "./web/pages/api-docs";
import { pageHeaders } from "./web/page-headers";

/**
 * The key is checked on the API's own routes only: a path that names none answers 404 with or
 * without a key (the routes are public in the OpenAPI document anyway), counted per client
 * address like the other routes without a key.
 */
const requireApiKey = (isApiRoute: RouteTest) =>
  createMiddleware<AppEnv>(async (c, next) => {
    if (c.req.path === "/api/v1/openapi.json") return next();
    if (!isApiRoute(c.req.method, c.req.path)) return limitAddress(c, next);
    c.set("caller", await authenticate(c.env.DB, c.req.header("authorization")));
    await next();
  });

const apiDescription = `Prepaid-credit video and audio processing API.

Flow: upload (multipart or URL) -> call a tool with the uploadId (credits are debited at once, job queued) -> poll GET /api/v1/jobs/{id} -> download result.url (prefix with the base URL; no Authorization needed, Range supported). A failed job is refunded in full, exactly once. Sources and results stay available for 3 hours. Files over 100 MB (the request body limit of Workers) go up in parts: POST /api/v1/uploads/multipart, PUT each part, POST .../complete.

Billing: whole credits, rounded up, at least 1 for a tool that is not free: per-minute tools max(1, ceil(rate x seconds / 60)) on the probed duration (merge: sum of inputs; trim: end - start); text-to-speech max(1, ceil(rate x characters / 1000)) in Unicode code points.

${describePrices()}

Errors: every error has the shape {"error": {"code", "message"}}; codes invalid_request 400, unauthorized 401, insufficient_credits 402 (with balance and required), not_found 404, internal_error 500; rate_limited 429 (see Rate limits). When several apply: 401, then 429, then 400, then 402. A job read by another key answers 404, as an unknown job. Unknown, expired or other-account uploadIds answer 400 naming the field.

Test-mode keys (mk_test_..., created in the developer area or by the operator): the same API; nothing is debited (creditsUsed 0, never 402), uploads and jobs of test keys are invisible to live keys and the other way round, a call processes at most 2 minutes of media or 1000 characters (400 otherwise), the test keys of an account start at most 50 jobs per UTC day (429 with Retry-After), and every result is marked so that it shows the integration works but is useless in production: video shows TEST burnt into its top right corner (so a test key's video is re-encoded, never stream-copied), audio (speech included) carries a 1 kHz beep of 0.3 s every 3 s, every line of a transcript and every SRT cue starts with [TEST], and every media file says TEST in its comment metadata. The cloned voice, brands and posts are live data: test keys speak with the cloned voice but cannot register or delete it, and every brand, post and approval-link route answers them 400. An account holds at most 20 unrevoked keys, live and test together.

Idempotency-Key on tool POSTs (1 to 255 characters, no control characters), scoped to the API key that sends it: the same key and body within 24 h replays the first response with no new debit; a different body answers 400; another API key of the account using the same value starts a job of its own; a call that answered 500 does not keep its key.

Jobs: queued -> processing -> completed | failed. A job still processing at its deadline, max(15 minutes, 10 x estimatedSeconds) after it started and at most 24 hours, is failed and refunded by a watchdog; so is a job still queued an hour after its call (its dispatch was lost). A call whose estimated work exceeds 12 hours is refused (400) before any debit. While the processing backend runs a job, the service checks on it every 15 seconds: a job the backend lost (a restart) is sent again, and one whose backend stops answering for about a minute is failed and refunded.

What is processed is what was billed: each input is read for at most its billed duration plus 1 s and 1 %, so a file whose header understates its length buys no extra processing; a job whose media runs past that bound fails and is refunded. Video frames are decoded up to 8192x4320 (8K): a call on a video whose header states more is refused (400), and a job whose frames turn out larger fails and is refunded.

Webhooks: a tool call's optional webhookUrl (or the default of its key's mode, PUT /api/v1/account/webhook: live and test keys have separate URLs and signing secrets) receives a POST when the job completes or fails: {"type": "job.completed" | "job.failed", "timestamp", "data": <the job as GET /api/v1/jobs/{id} shows it>}, signed as Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body" with the account's whsec_ secret>). https to public hosts only (checked at the call, 400 otherwise, and again at each delivery); redirects are not followed; a non-2xx answer or no answer within 10 s is retried after 30 s, 2 min, 10 min, 1 h, 3 h, 6 h, 6 h and 8 h (24 h in all). Test keys' jobs go to the test URL (or their call's own), signed with the test secret, with "livemode": false at the top of the body: a test key never sends an event the live endpoint would accept. Every attempt is listed by GET /api/v1/jobs/{id}/webhooks.

${describeRateLimits()}`;

export function buildApp() {
  const app = createRouter();
  app.openAPIRegistry.registerComponent("securitySchemes", "ApiKey", {
    type: "http",
    scheme: "bearer",
    description: "Authorization: Bearer mk_live_... (or mk_test_...: test mode, see the API description)",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "AdminToken", { type: "http", scheme: "bearer" });

  app.use("*", limitPerAddress);
  // Read once every route below is registered (the first request comes after buildApp).
  let apiRoutes: RouteTest | undefined;
  const isApiRoute: RouteTest = (method, path) =>
    (apiRoutes ??= routeTable(
      app.openAPIRegistry.definitions.flatMap((definition) => (definition.type === "route" ? [definition.route] : [])),
    ))(method, path);
  app.use("/api/v1/*", requireApiKey(isApiRoute), limitPerKey);
  // Every body bounded before any handler reads it (src/lib/body-limit.ts). On /api/v1 after the
  // key and rate checks (401, then 429, then 400: the contract's 400); elsewhere before anything,
  // answered 413: a page's form (a browser asking for HTML) with a page, the rest with the error shape.
  app.use(
    "*",
    limitBodies((c, message) => {
      if (c.req.path.startsWith("/api/v1/")) return errorResponse(c, invalidRequest(message));
      if ((c.req.header("accept") ?? "").includes("text/html"))
        return pageError(
          new HTTPException(413, { message: `${message} Nothing was changed.` }),
          c,
          "form",
          linkPageSection(c.req.path),
        );
      return c.json(errorBody(invalidRequest(message)), 413);
    }),
  );
  app.route("/api/v1", uploadRoutes());
  app.route("/api/v1", resumableUploadRoutes());
  app.route("/api/v1", toolRoutes());
  app.route("/api/v1", quoteRoutes);
  app.route("/api/v1", pipelineRoutes);
  app.route("/api/v1", templateRoutes);
  app.route("/api/v1", jobRoutes);
  app.route("/api/v1", accountRoutes);
  app.route("/api/v1", voiceRoutes);
  app.route("/api/v1", webhookSettingRoutes);
  app.route("/api/v1", socialRoutes);
  app.route("/api/admin", adminRoutes());
  app.route("/api/download", downloadRoutes);
  app.route("/api/post-media", postMediaRoutes);
  app.route("/internal", internalRoutes);
  app.route("/api/webhooks", webhookRoutes);
  app.route("/app", webRoutes());
  app.route("/authorize", authorizeRoutes());
  app.route("/review", reviewRoutes());
  app.route("/upload", uploadPageRoutes());
  app.route("/api/integrations", integrationRoutes);

  // Two documents from one registry: the public one holds only /api/v1 (the contract's paths);
  // the operator's routes are described at /api/admin/openapi.json, behind the admin token.
  const document = (origin: string, prefix: string, info: { title: string; description: string }) => {
    const doc = documentRateLimits(
      app.getOpenAPI31Document({ openapi: "3.1.0", info: { ...info, version: "1.0.0" }, servers: [{ url: origin }] }),
    );
    doc.paths = Object.fromEntries(Object.entries(doc.paths ?? {}).filter(([path]) => path.startsWith(prefix)));
    return doc;
  };
  const publicDocument = (origin: string) => {
    const doc = document(origin, "/api/v1/", { title: "Media processing API", description: apiDescription });
    delete doc.components?.securitySchemes?.AdminToken;
    return doc;
  };
  app.get("/api/v1/openapi.json", (c) => c.json(publicDocument(new URL(c.req.url).origin)));
  app.get("/api/admin/openapi.json", (c) =>
    c.json(
      document(new URL(c.req.url).origin, "/api/admin/", {
        title: "Media processing API: operator routes",
        description:
          "Accounts, keys, credits, audits and storage maintenance; every route takes Authorization: Bearer <ADMIN_TOKEN>.",
      }),
    ),
  );
  // Rendered here from the same document: no script, no CDN (the standard for every page).
  app.get("/docs", pageHeaders, (c) => c.html(renderApiDocs(publicDocument(new URL(c.req.url).origin))));
  app.get("/", (c) => c.redirect("/docs"));

  app.notFound((c) => {
    const path = c.req.path.length > 80 ? `${c.req.path.slice(0, 80)}…` : c.req.path;
    return errorResponse(c, new AppError("not_found", `No route ${c.req.method} ${path}.`));
  });
  app.onError(handleError);
  return app;
}
