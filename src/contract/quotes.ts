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
    tool: toolEnum().openapi({ description: "The tool to price, as in its path (POST /api/v1/{tool})" }),
    params: z.record(z.string(), z.unknown()).openapi({
      description: "The tool call's body, checked as the call checks it (webhookUrl and maxCredits apart)",
    }),
  })
  .openapi("QuoteRequest");

export const QuoteSchema = z
  .object({
    tool: toolEnum(),
    creditsRequired: z
      .int()
      .openapi({ description: "Credits the call would debit now, for the caller's plan (0 with a test key)" }),
    estimatedSeconds: z.int().openapi({ description: "Indicative estimate (>= 1), as the job envelope gives it" }),
    balance: z.int().openapi({ description: "The account's balance now (plan and purchased credits)" }),
    sufficient: z.boolean().openapi({ description: "The balance covers the call" }),
    plan: z.enum(plans).openapi({ description: "The plan the price is for" }),
  })
  .openapi("Quote");
export type QuoteRequest = z.output<typeof QuoteRequestSchema>;
