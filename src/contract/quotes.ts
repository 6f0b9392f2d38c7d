/**
 * A quote's question and answer, declared once: REST (`POST /api/v1/quotes`) and the connector's
 * `quote` tool take and give these, and `maxCredits` is the ceiling every tool call accepts.
 */
import { z } from "@hono/zod-openapi";
import { plans } from "../services/billing/pricing";
import { toolNames, type ToolName } from "../tools";

const toolEnum = () => z.enum(toolNames as [ToolName, ...ToolName[]]);

export const MaxCreditsField = z.int().min(0).openapi({
  description:
    "The most this call may cost, in credits. A call that would cost more is refused with 402 insufficient_credits (carrying required and maxCredits) before anything is debited. Part of the body for Idempotency-Key.",
  example: 50,
});

export const QuoteRequestSchema = z
  .object({
    tool: toolEnum().optional().openapi({ description: "The tool to price, as in its path (POST /api/v1/{tool})" }),
    params: z.record(z.string(), z.unknown()).optional().openapi({
      description: "The tool call's body, checked as the call checks it (webhookUrl and maxCredits apart)",
    }),
    steps: z
      .array(z.object({ tool: toolEnum(), params: z.record(z.string(), z.unknown()).default({}) }))
      .optional()
      .openapi({
        description:
          "A pipeline's steps, priced as POST /api/v1/pipelines would price them (instead of tool and params)",
      }),
    templateId: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .openapi({ description: "A saved template to price, with its variables" }),
    variables: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
    uploadId: z.string().min(1).max(64).optional().openapi({ description: "A pipeline's first input, as in the call" }),
  })
  .openapi("QuoteRequest");

export const QuoteSchema = z
  .object({
    tool: z.enum(["pipeline", ...toolNames] as [string, ...string[]]).openapi({ description: "The tool, or pipeline" }),
    creditsRequired: z
      .int()
      .openapi({ description: "Credits the call would debit now, for the caller's plan (0 with a test key)" }),
    estimatedSeconds: z.int().openapi({ description: "Indicative estimate (>= 1), as the job envelope gives it" }),
    balance: z.int().openapi({ description: "The account's balance now (plan and purchased credits)" }),
    sufficient: z.boolean().openapi({ description: "The balance covers the call" }),
    plan: z.enum(plans).openapi({ description: "The plan the price is for" }),
    steps: z
      .array(z.object({ tool: toolEnum(), creditsRequired: z.int(), estimatedSeconds: z.int() }))
      .optional()
      .openapi({ description: "A pipeline's price step by step (each one ledger entry when it runs)" }),
  })
  .openapi("Quote");
export type QuoteRequest = z.output<typeof QuoteRequestSchema>;
