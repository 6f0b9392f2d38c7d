/**
 * D1 tables. Credits live in two buckets per account (monthly plan credits and purchased
 * credits); the ledger is append-only and every entry records how much it moved in each
 * bucket, so `plan_credits + purchased_credits` always equals the sum of the ledger. The
 * CHECK constraints make an overdraft fail the whole atomic batch instead of going negative.
 */
import { sql } from "drizzle-orm";
import { check, index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import type { ToolName } from "../tools";

/** `reversal`: unspent credits removed after a Stripe refund or dispute. */
export const ledgerKinds = ["grant", "purchase", "debit", "refund", "plan_grant", "plan_expiry", "reversal"] as const;

export const accounts = sqliteTable(
  "accounts",
  {
    id: text("id").primaryKey(),
    email: text("email").notNull(),
    plan: text("plan", { enum: ["payg", "solo", "starter", "pro", "scale"] })
      .notNull()
      .default("payg"),
    planCredits: integer("plan_credits").notNull().default(0),
    purchasedCredits: integer("purchased_credits").notNull().default(0),
    /** End of the current monthly plan period (unix ms); null on payg. */
    planPeriodEnd: integer("plan_period_end"),
    /**
     * The largest plan allowance granted in the current period: a plan change within a period
     * grants only what a larger plan adds over it, so switching back and forth grants nothing.
     */
    planPeriodGranted: integer("plan_period_granted").notNull().default(0),
    /** `scrypt$N$r$p$salt$hash` (see src/lib/password.ts); null for operator-made accounts without sign-in. */
    passwordHash: text("password_hash"),
    stripeCustomerId: text("stripe_customer_id"),
    /** The Stripe subscription paying the plan; its invoices renew the plan instead of the cron. */
    stripeSubscriptionId: text("stripe_subscription_id"),
    /** 1 when the plan is cancelled and moves to solo at the end of the paid period. */
    planCancelAtPeriodEnd: integer("plan_cancel_at_period_end").notNull().default(0),
    /**
     * A smaller paid plan chosen for the next period (migration 0009): a downgrade waits for the
     * end of the paid period, so no unused time is credited back for credits already granted.
     */
    planNext: text("plan_next", { enum: ["starter", "pro", "scale"] }),
    /** Default URL notified when a job ends (a call's own webhookUrl wins); migration 0005. */
    webhookUrl: text("webhook_url"),
    /** The webhook signing secret is derived from WEBHOOK_SIGNING_KEY and this version (rotation bumps it). */
    webhookSecretVersion: integer("webhook_secret_version").notNull().default(1),
    /** For 24 h after a rotation the previous secret signs too (a second `v1,` signature). */
    webhookSecretRotatedAt: integer("webhook_secret_rotated_at"),
    /**
     * Test keys' jobs notify this URL only, signed with a secret of their own (migration 0011): a
     * test key must never make the live endpoint receive events signed with the live secret.
     */
    testWebhookUrl: text("test_webhook_url"),
    testWebhookSecretVersion: integer("test_webhook_secret_version").notNull().default(1),
    testWebhookSecretRotatedAt: integer("test_webhook_secret_rotated_at"),
    /**
     * When the owner proved they read this email (the signed link mailed at sign-up, or a password
     * reset); until then the account cannot create keys, set webhooks, buy or connect an assistant.
     * Accounts made before verification existed, and by the operator, count as verified (0011).
     */
    emailVerifiedAt: integer("email_verified_at"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [
    uniqueIndex("accounts_email_unique").on(t.email),
    check("plan_credits_non_negative", sql`${t.planCredits} >= 0`),
    check("purchased_credits_non_negative", sql`${t.purchasedCredits} >= 0`),
  ],
);

export const apiKeys = sqliteTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id")
      .notNull()
      .references(() => accounts.id),
    /** SHA-256 of the whole key; the key itself is never stored. */
    keyHash: text("key_hash").notNull(),
    /** First characters, to let an owner recognise a key in a list. */
    displayPrefix: text("display_prefix").notNull(),
    /** Owner's label for the key (developer area). */
    name: text("name").notNull().default(""),
    createdAt: integer("created_at").notNull(),
    /** Updated at most once a minute by authentication. */
    lastUsedAt: integer("last_used_at"),
    revokedAt: integer("revoked_at"),
    /** 'test' for mk_test_ keys and what they make (test-mode keys: no credits, results marked TEST); migration 0006. */
    mode: text("mode", { enum: ["live", "test"] })
      .notNull()
      .default("live"),
    /** The developer area's one-time form token: a reloaded or double-submitted form makes no second key (migration 0008). */
    formNonce: text("form_nonce"),
  },
  (t) => [
    uniqueIndex("api_keys_hash_unique").on(t.keyHash),
    index("api_keys_account").on(t.accountId),
    uniqueIndex("api_keys_form_nonce_unique").on(t.accountId, t.formNonce),
  ],
);

export const ledger = sqliteTable(
  "ledger",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id")
      .notNull()
      .references(() => accounts.id),
    kind: text("kind", { enum: ledgerKinds }).notNull(),
    /** Signed change of the balance: planDelta + purchasedDelta. */
    amount: integer("amount").notNull(),
    planDelta: integer("plan_delta").notNull(),
    purchasedDelta: integer("purchased_delta").notNull(),
    jobId: text("job_id"),
    /** Unique per entry: `debit:<job>`, `refund:<job>`, `plan:<account>:<period>`... */
    idempotencyKey: text("idempotency_key").notNull(),
    reason: text("reason"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [
    uniqueIndex("ledger_idempotency_unique").on(t.idempotencyKey),
    index("ledger_account").on(t.accountId),
    // A pipeline's debits (one per step) are summed by job (migration 0012).
    index("ledger_job").on(t.jobId),
  ],
);

export const uploads = sqliteTable(
  "uploads",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id")
      .notNull()
      .references(() => accounts.id),
    objectKey: text("object_key").notNull(),
    filename: text("filename").notNull(),
    kind: text("kind", { enum: ["video", "audio", "image"] }).notNull(),
    container: text("container").notNull(),
    mimeType: text("mime_type").notNull(),
    sizeBytes: integer("size_bytes").notNull(),
    durationMs: integer("duration_ms").notNull(),
    /** JSON of the probe (codecs, dimensions) for routing decisions. */
    probe: text("probe").notNull(),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
    /** 'test' for mk_test_ keys and what they make (test-mode keys: no credits, results marked TEST); migration 0006. */
    mode: text("mode", { enum: ["live", "test"] })
      .notNull()
      .default("live"),
  },
  (t) => [index("uploads_account").on(t.accountId), index("uploads_expires").on(t.expiresAt)],
);

export const jobs = sqliteTable(
  "jobs",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id")
      .notNull()
      .references(() => accounts.id),
    keyId: text("key_id").notNull(),
    /** A tool's name, or `pipeline` (its steps in pipeline_steps). */
    tool: text("tool").$type<ToolName | "pipeline">().notNull(),
    /** Validated tool parameters (JSON), with defaults applied; a pipeline's steps. */
    params: text("params").notNull(),
    /** Upload ids the job reads (JSON array); they are kept until the job ends. */
    inputUploadIds: text("input_upload_ids").notNull(),
    status: text("status", { enum: ["queued", "processing", "completed", "failed"] }).notNull(),
    cost: integer("cost").notNull(),
    planDebit: integer("plan_debit").notNull(),
    purchasedDebit: integer("purchased_debit").notNull(),
    balanceAfter: integer("balance_after").notNull(),
    estimatedSeconds: integer("estimated_seconds").notNull(),
    error: text("error"),
    resultKey: text("result_key"),
    resultFilename: text("result_filename"),
    resultContentType: text("result_content_type"),
    /** clean-audio's report, JSON (packages/wire/src/audio-report.ts AudioReport): loudness before and after, pauses cut. */
    resultReport: text("result_report"),
    /** Capability id of the download URL (>= 128 random bits, distinct from the job id). */
    downloadId: text("download_id").notNull(),
    createdAt: integer("created_at").notNull(),
    startedAt: integer("started_at"),
    /** A processing job still running at this time is failed by the watchdog. */
    deadlineAt: integer("deadline_at"),
    finishedAt: integer("finished_at"),
    /** Job record and result readable until then (3 h after the end). */
    expiresAt: integer("expires_at"),
    /** URL notified when the job ends (the call's webhookUrl or the account default); migration 0005. */
    webhookUrl: text("webhook_url"),
    /** 'test' for mk_test_ keys and what they make (test-mode keys: no credits, results marked TEST); migration 0006. */
    mode: text("mode", { enum: ["live", "test"] })
      .notNull()
      .default("live"),
    /**
     * The account's plan period when the job was paid (its plan_period_end then; migration 0011):
     * a refund returns plan credits only while that period is still the current one.
     */
    paidPeriodEnd: integer("paid_period_end"),
  },
  (t) => [
    uniqueIndex("jobs_download_unique").on(t.downloadId),
    index("jobs_status").on(t.status),
    index("jobs_expires").on(t.expiresAt),
    check("jobs_cost_non_negative", sql`${t.cost} >= 0`),
  ],
);

/**
 * The steps of a pipeline job (migration 0012): each a tool call priced and debited when the
 * pipeline was created (one ledger entry per step), run in order by the job's MediaRunner, each
 * reading the previous step's output (`output_key`, under work/<job>/, never downloadable).
 */
export const pipelineSteps = sqliteTable(
  "pipeline_steps",
  {
    jobId: text("job_id")
      .notNull()
      .references(() => jobs.id),
    position: integer("position").notNull(),
    tool: text("tool").$type<ToolName>().notNull(),
    /** Validated tool parameters (JSON); the input a step reads from the previous one is `step:<position>`. */
    params: text("params").notNull(),
    /** Upload ids and `step:<position>` references, in the tool's input order (JSON array). */
    inputs: text("inputs").notNull(),
    /** The previous result as it was priced (JSON, ProducedMedia): its billed duration bounds this step's run. */
    inputShape: text("input_shape"),
    cost: integer("cost").notNull(),
    estimatedSeconds: integer("estimated_seconds").notNull(),
    status: text("status", { enum: ["queued", "processing", "completed", "failed"] }).notNull(),
    engine: text("engine", { enum: ["wasm", "backend"] }),
    outputKey: text("output_key"),
    outputFilename: text("output_filename"),
    outputContentType: text("output_content_type"),
    error: text("error"),
    startedAt: integer("started_at"),
    finishedAt: integer("finished_at"),
  },
  (t) => [primaryKey({ columns: [t.jobId, t.position] })],
);

/** Saved pipelines with `{{name}}` variables (migration 0012), run by POST /api/v1/pipelines with templateId. */
export const pipelineTemplates = sqliteTable(
  "pipeline_templates",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id")
      .notNull()
      .references(() => accounts.id),
    name: text("name").notNull(),
    description: text("description"),
    /** The steps as saved (JSON, PipelineStep[]), placeholders included. */
    steps: text("steps").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("pipeline_templates_account").on(t.accountId, t.createdAt)],
);

export const idempotencyKeys = sqliteTable(
  "idempotency_keys",
  {
    accountId: text("account_id").notNull(),
    key: text("key").notNull(),
    requestHash: text("request_hash").notNull(),
    jobId: text("job_id").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.key] })],
);

/** The account's cloned voice (speech issue); it lasts until replaced or removed. */
export const clonedVoices = sqliteTable("cloned_voices", {
  accountId: text("account_id")
    .primaryKey()
    .references(() => accounts.id),
  objectKey: text("object_key").notNull(),
  status: text("status").notNull(),
  profile: text("profile"),
  createdAt: integer("created_at").notNull(),
});

/** Developer-area sign-in sessions: only the SHA-256 of the cookie token is stored. */
export const sessions = sqliteTable(
  "sessions",
  {
    tokenHash: text("token_hash").primaryKey(),
    accountId: text("account_id")
      .notNull()
      .references(() => accounts.id),
    createdAt: integer("created_at").notNull(),
    lastSeenAt: integer("last_seen_at").notNull(),
    /** Sliding: pushed forward on use, never past createdAt + the absolute lifetime. */
    expiresAt: integer("expires_at").notNull(),
  },
  (t) => [index("sessions_account").on(t.accountId), index("sessions_expires").on(t.expiresAt)],
);

/**
 * Test-mode jobs an account started per UTC day (migration 0011). The limit travels with every
 * count (it lives in the limits table, src/services/accounts/limits.ts), so the CHECK refuses the
 * job's whole batch at the limit whatever the concurrency.
 */
export const testJobDays = sqliteTable(
  "test_job_days",
  {
    accountId: text("account_id").notNull(),
    /** Days since 1970-01-01, UTC. */
    day: integer("day").notNull(),
    jobs: integer("jobs").notNull(),
    maxJobs: integer("max_jobs").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.accountId, t.day] }),
    check("test_jobs_within_limit", sql`${t.jobs} <= ${t.maxJobs}`),
  ],
);

/**
 * What an account's owner allowed a connected assistant on the consent page (migration 0011): its
 * scopes (`media`: run tools and spend credits; `social`: brands, posts and publication) and its
 * spending caps. The connector reads this row at every call, so a change on the connected-apps
 * page applies at once; the OAuth grant carries only the row's id.
 */
export const assistantConnections = sqliteTable(
  "assistant_connections",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id")
      .notNull()
      .references(() => accounts.id),
    /** Space-separated scopes, e.g. "media social". */
    scopes: text("scopes").notNull(),
    /** Credits the assistant may spend per UTC day; null: no cap of its own. */
    dailyCreditCap: integer("daily_credit_cap"),
    /** Credits one call may cost; null: no cap of its own. */
    perCallCreditCap: integer("per_call_credit_cap"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("assistant_connections_account").on(t.accountId)],
);

/**
 * Credits a connection spent per UTC day, net of refunds. The cap travels with every debit, so
 * the CHECK refuses the whole debit batch of a call that would pass it, whatever the concurrency.
 */
export const assistantSpending = sqliteTable(
  "assistant_spending",
  {
    connectionId: text("connection_id").notNull(),
    day: integer("day").notNull(),
    credits: integer("credits").notNull(),
    cap: integer("cap").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.connectionId, t.day] }),
    check("assistant_spending_within_cap", sql`${t.credits} <= ${t.cap}`),
  ],
);

/**
 * Subscriptions that ended (customer.subscription.deleted), so that no late or redelivered event
 * about them (an invoice.paid, a subscription checkout) attaches them to an account again.
 */
export const endedSubscriptions = sqliteTable("ended_subscriptions", {
  id: text("id").primaryKey(),
  accountId: text("account_id").notNull(),
  endedAt: integer("ended_at").notNull(),
});

/** Stripe events already applied (webhook redeliveries answer 200 and change nothing). */
export const stripeEvents = sqliteTable("stripe_events", {
  id: text("id").primaryKey(),
  type: text("type").notNull(),
  accountId: text("account_id"),
  processedAt: integer("processed_at").notNull(),
});

/**
 * Orders and invoices as the billing page lists them: a Checkout Session (pack, top-up or
 * plan) or a subscription invoice. Created pending when checkout starts, paid by the webhook.
 */
export const payments = sqliteTable(
  "payments",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id")
      .notNull()
      .references(() => accounts.id),
    kind: text("kind", { enum: ["pack", "topup", "plan"] }).notNull(),
    item: text("item").notNull(),
    credits: integer("credits").notNull(),
    amountCents: integer("amount_cents"),
    currency: text("currency").notNull().default("eur"),
    status: text("status", { enum: ["pending", "paid", "refunded"] }).notNull(),
    paymentIntent: text("payment_intent"),
    invoiceUrl: text("invoice_url"),
    /** Credits already taken back after refunds or disputes of this payment. */
    creditsReversed: integer("credits_reversed").notNull().default(0),
    createdAt: integer("created_at").notNull(),
    paidAt: integer("paid_at"),
  },
  (t) => [index("payments_account").on(t.accountId), index("payments_intent").on(t.paymentIntent)],
);

/** Local outbox of the dev Mailer (DEV_MODE only): what production would have sent. */
export const devOutbox = sqliteTable("dev_outbox", {
  id: text("id").primaryKey(),
  toEmail: text("to_email").notNull(),
  subject: text("subject").notNull(),
  body: text("body").notNull(),
  createdAt: integer("created_at").notNull(),
});

// --- Brands and social posts (free: posts cost no credits) -------------------------------------

export const brands = sqliteTable(
  "brands",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id")
      .notNull()
      .references(() => accounts.id),
    name: text("name").notNull(),
    /** IANA time zone in which scheduled times are given and shown. */
    timeZone: text("time_zone").notNull(),
    requiresApproval: integer("requires_approval", { mode: "boolean" }).notNull().default(false),
    /**
     * Where approval decisions and publication events are sent, if set. They are signed with a
     * secret derived from WEBHOOK_SIGNING_KEY and the brand id (brandWebhookSecret), not stored.
     */
    webhookUrl: text("webhook_url"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("brands_account").on(t.accountId)],
);

/** A network a brand publishes to, through one publisher. */
export const brandChannels = sqliteTable(
  "brand_channels",
  {
    id: text("id").primaryKey(),
    brandId: text("brand_id")
      .notNull()
      .references(() => brands.id),
    // A TypeScript enum only: the column has no CHECK, so a new network needs no migration.
    network: text("network", { enum: ["webhook", "mastodon", "bluesky"] }).notNull(),
    /** Publisher settings (JSON): the endpoint, the Mastodon instance and its access token, or the Bluesky account and its app password, secrets encrypted (src/services/social/channel-config.ts). */
    config: text("config").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [uniqueIndex("brand_channels_network").on(t.brandId, t.network)],
);

export const posts = sqliteTable(
  "posts",
  {
    id: text("id").primaryKey(),
    brandId: text("brand_id")
      .notNull()
      .references(() => brands.id),
    accountId: text("account_id")
      .notNull()
      .references(() => accounts.id),
    text: text("text").notNull(),
    /** Media copied into the post's own storage when attached (outlives the 3-hour retention). */
    mediaKey: text("media_key"),
    mediaFilename: text("media_filename"),
    mediaContentType: text("media_content_type"),
    /**
     * How many times media was attached (migration 0013): 1 for the first file, +1 for each
     * replacement, so a review comment names the version it was made on.
     */
    mediaVersion: integer("media_version").notNull().default(0),
    /** Length of the video or audio in ms, for review comments' moments; null until known. */
    mediaDurationMs: integer("media_duration_ms"),
    /**
     * What the preflight knows of the media (migration 0015): its probe and size as JSON
     * (src/services/social/media-rules.ts MediaFacts); null without media, or for media attached
     * before it existed, which is probed when next checked.
     */
    mediaFacts: text("media_facts"),
    /** Networks of the brand this post goes to (JSON array of network names). */
    networks: text("networks").notNull(),
    /** UTC ms; entered and shown in the brand's time zone. */
    scheduledAt: integer("scheduled_at"),
    state: text("state", {
      enum: [
        "draft",
        "pending_approval",
        "approved",
        "changes_requested",
        "scheduled",
        "published",
        "failed",
        "cancelled",
      ],
    }).notNull(),
    failure: text("failure"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    submittedAt: integer("submitted_at"),
    decidedAt: integer("decided_at"),
    publishedAt: integer("published_at"),
  },
  (t) => [index("posts_brand").on(t.brandId), index("posts_due").on(t.state, t.scheduledAt)],
);

/** Shareable approval links: capability ids stored only as hashes. */
export const approvalLinks = sqliteTable(
  "approval_links",
  {
    id: text("id").primaryKey(),
    postId: text("post_id")
      .notNull()
      .references(() => posts.id),
    tokenHash: text("token_hash").notNull(),
    expiresAt: integer("expires_at").notNull(),
    revokedAt: integer("revoked_at"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [uniqueIndex("approval_links_token").on(t.tokenHash), index("approval_links_post").on(t.postId)],
);

/** Client decisions on posts, with who and when. */
export const postReviews = sqliteTable(
  "post_reviews",
  {
    id: text("id").primaryKey(),
    postId: text("post_id")
      .notNull()
      .references(() => posts.id),
    decision: text("decision", { enum: ["approved", "changes_requested"] }).notNull(),
    reviewerName: text("reviewer_name").notNull(),
    comment: text("comment"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("post_reviews_post").on(t.postId)],
);

/**
 * The review thread of a post (migration 0013): a client's comments from the review page and the
 * owner's replies, each at a moment of the media (ms) or general (null), on the media version it
 * was made on. The thread outlives new versions of the media; it goes with the post.
 */
export const postComments = sqliteTable(
  "post_comments",
  {
    id: text("id").primaryKey(),
    postId: text("post_id")
      .notNull()
      .references(() => posts.id),
    authorKind: text("author_kind", { enum: ["client", "owner"] }).notNull(),
    /** The name a client gave; null for the owner (the account). */
    authorName: text("author_name"),
    /** Moment in the video or audio, in ms; null for a comment on the whole post. */
    atMs: integer("at_ms"),
    text: text("text").notNull(),
    /** posts.media_version when the comment was made; null when the post had no media. */
    mediaVersion: integer("media_version"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("post_comments_post").on(t.postId, t.createdAt)],
);

/** One delivery of a post to one network: unique, so a post is published once per network. */
export const postDeliveries = sqliteTable(
  "post_deliveries",
  {
    id: text("id").primaryKey(),
    postId: text("post_id")
      .notNull()
      .references(() => posts.id),
    network: text("network").notNull(),
    status: text("status", { enum: ["pending", "sending", "sent", "failed"] }).notNull(),
    /** When a consumer took this delivery; a claim older than the lease may be taken again. */
    claimedAt: integer("claimed_at"),
    externalId: text("external_id"),
    externalUrl: text("external_url"),
    attempts: integer("attempts").notNull().default(0),
    lastError: text("last_error"),
    deliveredAt: integer("delivered_at"),
    views: integer("views").notNull().default(0),
    likes: integer("likes").notNull().default(0),
    comments: integer("comments").notNull().default(0),
    shares: integer("shares").notNull().default(0),
    statsUpdatedAt: integer("stats_updated_at"),
  },
  (t) => [uniqueIndex("post_deliveries_once").on(t.postId, t.network)],
);

/** One-time browser upload pages the connector hands out (capability ids stored as hashes). */
export const uploadLinks = sqliteTable(
  "upload_links",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id")
      .notNull()
      .references(() => accounts.id),
    tokenHash: text("token_hash").notNull(),
    expiresAt: integer("expires_at").notNull(),
    /** Set once the file is uploaded: the link is then used up. */
    uploadId: text("upload_id"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [uniqueIndex("upload_links_token").on(t.tokenHash)],
);

/**
 * Job webhooks (src/services/webhooks/outbox.ts): one delivery per job and terminal event, written in
 * the same batch as the terminal state; `token` names the one queue message allowed to make
 * the next attempt, `lease_until` frees a delivery whose consumer died mid-attempt.
 */
export const jobWebhooks = sqliteTable(
  "job_webhooks",
  {
    /** The Standard Webhooks `webhook-id` (msg_...), the same on every attempt. */
    id: text("id").primaryKey(),
    jobId: text("job_id").notNull(),
    accountId: text("account_id").notNull(),
    event: text("event", { enum: ["job.completed", "job.failed"] }).notNull(),
    url: text("url").notNull(),
    status: text("status", { enum: ["pending", "delivered", "failed"] })
      .notNull()
      .default("pending"),
    /** The body, built once at the first attempt so every retry sends the same bytes. */
    payload: text("payload"),
    attempts: integer("attempts").notNull().default(0),
    token: text("token"),
    leaseUntil: integer("lease_until"),
    nextAttemptAt: integer("next_attempt_at").notNull(),
    createdAt: integer("created_at").notNull(),
    finishedAt: integer("finished_at"),
  },
  (t) => [
    uniqueIndex("job_webhooks_once").on(t.jobId, t.event),
    index("job_webhooks_pending").on(t.status, t.nextAttemptAt),
  ],
);

/** One row per delivery attempt: the delivery log of GET /api/v1/jobs/{id}/webhooks. */
export const jobWebhookAttempts = sqliteTable(
  "job_webhook_attempts",
  {
    deliveryId: text("delivery_id").notNull(),
    attempt: integer("attempt").notNull(),
    startedAt: integer("started_at").notNull(),
    durationMs: integer("duration_ms").notNull(),
    responseStatus: integer("response_status"),
    error: text("error"),
  },
  (t) => [primaryKey({ columns: [t.deliveryId, t.attempt] })],
);

/**
 * Resumable uploads (src/services/media-jobs/resumable-uploads.ts): an R2 multipart upload the client
 * fills part by part. The session id is the upload id the completed file keeps.
 */
export const uploadSessions = sqliteTable(
  "upload_sessions",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id")
      .notNull()
      .references(() => accounts.id),
    objectKey: text("object_key").notNull(),
    /** R2's id of the multipart upload, to resume it from any request. */
    r2UploadId: text("r2_upload_id").notNull(),
    filename: text("filename").notNull(),
    contentType: text("content_type"),
    sizeBytes: integer("size_bytes").notNull(),
    partSize: integer("part_size").notNull(),
    partCount: integer("part_count").notNull(),
    /** Set while a complete call assembles and probes the file; parts are refused meanwhile. */
    completingUntil: integer("completing_until"),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
    /** 'test' for mk_test_ keys and what they make (test-mode keys: no credits, results marked TEST); migration 0006. */
    mode: text("mode", { enum: ["live", "test"] })
      .notNull()
      .default("live"),
  },
  (t) => [index("upload_sessions_account").on(t.accountId), index("upload_sessions_expires").on(t.expiresAt)],
);

/** The parts R2 has received, with the etags completion needs. */
export const uploadSessionParts = sqliteTable(
  "upload_session_parts",
  {
    sessionId: text("session_id").notNull(),
    partNumber: integer("part_number").notNull(),
    etag: text("etag").notNull(),
    sizeBytes: integer("size_bytes").notNull(),
    receivedAt: integer("received_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.sessionId, t.partNumber] })],
);
