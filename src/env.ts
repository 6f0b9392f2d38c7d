import type { MediaRunner } from "./durable-objects/media-runner";

/** Bindings and settings of the Worker (wrangler.toml, .dev.vars, secrets). */
export interface Env {
  DB: D1Database;
  MEDIA: R2Bucket;
  JOBS_QUEUE: Queue<JobMessage>;
  JOBS_DLQ: Queue<JobMessage>;
  MEDIA_RUNNER: DurableObjectNamespace<MediaRunner>;
  /** Operator token for /api/admin (Worker secret; locally in .dev.vars). */
  ADMIN_TOKEN?: string;
  /** Shared secret signing URLs and callbacks exchanged with the container backend. */
  BACKEND_SECRET?: string;
  /** Base URL of the container backend (native ffmpeg, speech). */
  BACKEND_URL?: string;
  /** "true" only in local development: URL uploads may reach loopback/private addresses. */
  ALLOW_PRIVATE_URLS?: string;
  /** DNS-over-HTTPS JSON endpoint that URL ingestion uses to refuse names of private hosts. */
  DNS_RESOLVER_URL?: string;
}

/** The only payload the jobs queue carries. */
export interface JobMessage {
  jobId: string;
}
