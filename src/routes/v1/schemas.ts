/** Response bodies of /api/v1, as the contract shows them. */
import { z } from "@hono/zod-openapi";
import { postStates } from "../../services/social/post-states";

export const UploadResultSchema = z
  .object({
    uploadId: z.string().openapi({ description: "Reusable by the tool endpoints for 3 hours" }),
    durationSeconds: z.number().openapi({ description: "Media duration in seconds, millisecond precision; 0 for images", example: 12.48 }),
    expiresIn: z.int().openapi({ description: "Seconds before expiry", example: 10800 }),
  })
  .openapi("UploadResult");

export const JobEnvelopeSchema = z
  .object({
    jobId: z.string().openapi({ description: "Used in GET /api/v1/jobs/{id}" }),
    status: z.literal("queued"),
    creditsUsed: z.int().openapi({ description: "Credits debited by this call" }),
    creditsRemaining: z.int().openapi({ description: "Balance after the debit" }),
    estimatedSeconds: z.int().openapi({ description: "Indicative estimate (>= 1); never affects billing" }),
  })
  .openapi("JobEnvelope");

export const JobStatusSchema = z
  .object({
    jobId: z.string(),
    status: z.enum(["queued", "processing", "completed", "failed"]),
    progress: z.null().openapi({ description: "Always null in v1" }),
    result: z
      .object({
        url: z.string().openapi({ description: "Relative download path /api/download/<id>; prefix with the base URL. No Authorization needed; Range supported." }),
        filename: z.string(),
      })
      .optional()
      .openapi({ description: "Present when the job has a result" }),
    error: z.string().optional().openapi({ description: "Present only when status is failed; the credits were refunded" }),
  })
  .openapi("JobStatus");

export const AccountSchema = z
  .object({
    balance: z.int().openapi({ description: "Credit balance of the account that owns the API key" }),
    email: z.string(),
  })
  .openapi("Account");

// Brands and posts: REST responses and the connector's output schemas (src/mcp/social-tools.ts).
export const socialNetwork = z.enum(["webhook", "mastodon"]);

export const BrandSchema = z
  .object({
    brandId: z.string(),
    name: z.string(),
    timeZone: z.string(),
    requiresApproval: z.boolean(),
    webhookUrl: z.string().nullable(),
    webhookSecret: z.string().openapi({ description: "Verifies Webhook-Signature: v1=hex(HMAC-SHA256(secret, Webhook-Timestamp + '.' + body)); also signs engagement reports" }),
    networks: z.array(z.object({ network: socialNetwork, target: z.string() })),
    createdAt: z.string(),
  })
  .openapi("Brand");

export const PostSchema = z
  .object({
    postId: z.string(),
    brandId: z.string(),
    state: z.enum(postStates),
    text: z.string(),
    networks: z.array(socialNetwork),
    scheduledAt: z.string().nullable(),
    scheduledAtLocal: z.string().nullable(),
    timeZone: z.string(),
    media: z.object({ filename: z.string(), contentType: z.string(), url: z.string() }).nullable(),
    reviews: z.array(z.object({ decision: z.string(), reviewerName: z.string(), comment: z.string().nullable(), at: z.string() })),
    deliveries: z.array(z.object({ network: z.string(), status: z.string(), url: z.string().nullable(), attempts: z.number().int(), error: z.string().nullable() })),
    failure: z.string().nullable(),
    createdAt: z.string(),
    publishedAt: z.string().nullable(),
  })
  .openapi("Post");

export const BrandStatsSchema = z
  .object({
    brandId: z.string(),
    from: z.string(),
    to: z.string(),
    postsByState: z.record(z.string(), z.number().int()),
    publishedByNetwork: z.record(z.string(), z.number().int()),
    approval: z.object({ reviewed: z.number().int(), averageHours: z.number().nullable() }),
    engagement: z.object({ views: z.number(), likes: z.number(), comments: z.number(), shares: z.number(), byNetwork: z.record(z.string(), z.object({ views: z.number(), likes: z.number(), comments: z.number(), shares: z.number() })) }),
  })
  .openapi("BrandStats");

export const ApprovalLinkSchema = z.object({ linkId: z.string(), url: z.string(), expiresAt: z.string() }).openapi("ApprovalLink");
