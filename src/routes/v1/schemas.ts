/** Response bodies of /api/v1, as the contract shows them. */
import { z } from "@hono/zod-openapi";

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
