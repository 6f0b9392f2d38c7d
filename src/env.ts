import type { OAuthHelpers } from "@cloudflare/workers-oauth-provider";
import type { BrandScheduler } from "./durable-objects/brand-scheduler";
import type { MediaRunner } from "./media-worker/media-runner";
import type { PublishMessage } from "./services/social/publishing";
import type { WebhookMessage } from "./services/webhooks/outbox";

/** Bindings and settings of the Worker (wrangler.toml, .dev.vars, secrets). */
export interface Env {
  DB: D1Database;
  MEDIA: R2Bucket;
  JOBS_QUEUE: Queue<JobMessage>;
  JOBS_DLQ: Queue<JobMessage>;
  MEDIA_RUNNER: DurableObjectNamespace<MediaRunner>;
  /** The media Worker's static assets: the subtitle fonts ffmpeg.wasm reads (src/media-worker/font-data.ts). */
  FONTS?: Fetcher;
  /** One per brand: an alarm at its next due post. */
  BRAND_SCHEDULER: DurableObjectNamespace<BrandScheduler>;
  /** Publication of posts per network, and brand webhook events (retried; dead letters fail the post). */
  PUBLISH_QUEUE: Queue<PublishMessage>;
  /** "true" in local development and tests only: publishers may reach loopback/private addresses. */
  PUBLISH_ALLOW_PRIVATE_URLS?: string;
  /** Operator token for /api/admin (Worker secret; locally in .dev.vars). */
  ADMIN_TOKEN?: string;
  /** Shared secret signing URLs and callbacks exchanged with the container backend. */
  BACKEND_SECRET?: string;
  /** Base URL of the container backend (native ffmpeg, speech); empty: in-Worker engine only. */
  BACKEND_URL?: string;
  /** This Worker's own origin, as the backend reaches it (signed media URLs, callbacks). */
  PUBLIC_BASE_URL?: string;
  /** "auto" (default), "wasm" or "backend": forces the media engine (tests, benchmarks). */
  MEDIA_ENGINE?: string;
  /** Routing thresholds of the in-Worker engine (see src/media-worker/routing.ts for defaults). */
  WASM_MEMORY_BUDGET_BYTES?: string;
  WASM_MAX_CPU_SECONDS?: string;
  /** Seconds between a job runner's checks of its backend stage (default 15; src/media-worker/media-runner.ts). */
  JOB_HEARTBEAT_SECONDS?: string;
  /** Lower bound of a processing job's deadline in seconds (default 900); the soak campaign shortens it. */
  JOB_MIN_DEADLINE_SECONDS?: string;
  /**
   * Fault injection for the soak campaign (bench/soak.ts), probabilities 0 to 1, never set in
   * production: the media runner resets itself mid-job, an R2 write of the runner fails, a job
   * message is delivered again after it was handled.
   */
  FAULT_RUNNER_ABORT_RATE?: string;
  FAULT_R2_PUT_FAIL_RATE?: string;
  FAULT_QUEUE_REDELIVER_RATE?: string;
  /** R2's S3 API credentials: when set, the backend gets presigned R2 URLs instead of Worker-served ones. */
  R2_ACCOUNT_ID?: string;
  /**
   * The S3 API's base URL, instead of `https://<R2_ACCOUNT_ID>.r2.cloudflarestorage.com`. Locally,
   * the R2 emulation's own S3 API (`<wrangler dev>/cdn-cgi/local/r2/s3`, wrangler.toml's
   * `local_dev` credentials), so the presigned path runs on one machine too.
   */
  R2_S3_ENDPOINT?: string;
  R2_ACCESS_KEY_ID?: string;
  R2_SECRET_ACCESS_KEY?: string;
  R2_BUCKET_NAME?: string;
  /** "true" only in local development: URL uploads may reach loopback/private addresses. */
  ALLOW_PRIVATE_URLS?: string;
  /** DNS-over-HTTPS JSON endpoint that URL ingestion uses to refuse names of private hosts. */
  DNS_RESOLVER_URL?: string;
  /** Job webhook deliveries (src/services/webhooks/delivery.ts), one message per attempt. */
  WEBHOOK_QUEUE?: Queue<WebhookMessage>;
  /** Worker secret from which every account's webhook signing secret is derived (never stored in D1). */
  WEBHOOK_SIGNING_KEY?: string;
  /** Seconds between webhook attempts, comma-separated (default "30,120,600,3600,10800,21600,21600,28800", 24.2 h). */
  WEBHOOK_RETRY_SCHEDULE?: string;

  /** Credits a new self-service account starts with (purchased credits; default 0). */
  SIGNUP_CREDITS?: string;
  /** "true" only locally: the dev outbox page and dev conveniences. */
  DEV_MODE?: string;
  /**
   * Worker secret signing password-reset links and capabilities; keys derived from it encrypt
   * channel access tokens at rest (src/services/social/channel-config.ts).
   */
  AUTH_SECRET?: string;
  /** Workers rate-limiting binding for sign-in, sign-up and reset requests, per address and per address and email. */
  AUTH_LIMITER?: RateLimit;
  /** The same per email alone, with a much higher bound: a stranger's failures cannot lock the owner out. */
  AUTH_EMAIL_LIMITER?: RateLimit;
  /**
   * Request limits per API key (by plan) and per client address: one binding per row of the
   * table in src/services/platform/rate-limits.ts, which holds the same limits as wrangler.toml.
   */
  API_RATE_LIMIT?: RateLimit;
  API_RATE_LIMIT_PRO?: RateLimit;
  API_RATE_LIMIT_SCALE?: RateLimit;
  ACCOUNT_RATE_LIMIT?: RateLimit;
  ACCOUNT_RATE_LIMIT_PRO?: RateLimit;
  ACCOUNT_RATE_LIMIT_SCALE?: RateLimit;
  PUBLIC_RATE_LIMIT?: RateLimit;
  /** Stripe secret key (sk_live_/sk_test_); locally the key of scripts/local-stripe/server.ts. */
  STRIPE_SECRET_KEY?: string;
  /** Signing secret of the Stripe webhook endpoint (whsec_...). */
  STRIPE_WEBHOOK_SECRET?: string;
  /** Base URL of a Stripe-compatible API (local Stripe in dev and tests); empty: api.stripe.com. */
  STRIPE_API_BASE?: string;
  /** Grants, clients and tokens of the connector's OAuth (workers-oauth-provider; hashes only). */
  OAUTH_KV: KVNamespace;
  /** Injected by the OAuth provider into requests it hands to the app (authorize, connected apps). */
  OAUTH_PROVIDER?: OAuthHelpers;
  /** HTTP mail provider (Resend-compatible JSON API): endpoint, key and sender. */
  MAIL_API_URL?: string;
  MAIL_API_KEY?: string;
  MAIL_FROM?: string;
}

/** The only payload the jobs queue carries. */
export interface JobMessage {
  jobId: string;
}
