/** An upload's answer and the account's, declared once for REST and the connector. */
import { z } from "@hono/zod-openapi";

export const UploadResultSchema = z
  .object({
    uploadId: z.string().openapi({ description: "Reusable by the tool endpoints for 3 hours" }),
    durationSeconds: z
      .number()
      .openapi({ description: "Media duration in seconds, millisecond precision; 0 for images", example: 12.48 }),
    expiresIn: z.int().openapi({ description: "Seconds before expiry", example: 10800 }),
  })
  .openapi("UploadResult");

export const AccountSchema = z
  .object({
    balance: z.int().openapi({ description: "Credit balance of the account that owns the API key" }),
    email: z.string(),
  })
  .openapi("Account");
