/**
 * A pipeline's request and answers, declared once: REST (`POST /api/v1/pipelines`, quotes), the
 * connector's `run_pipeline` and templates take and give these. A pipeline is one job made of up to
 * ten tool calls in order, each reading the previous one's result.
 */
import { z } from "@hono/zod-openapi";
import { toolNames, type ToolName } from "../tools";
import { uploadId } from "../tools/fields";
import { JobEnvelopeSchema } from "./jobs";
import { MaxCreditsField } from "./quotes";

export const MAX_PIPELINE_STEPS = 10;

const toolEnum = () => z.enum(toolNames as [ToolName, ...ToolName[]]);

export const PipelineStepSchema = z
  .object({
    tool: toolEnum().openapi({ description: "The tool of this step, as in its path (POST /api/v1/{tool})" }),
    params: z
      .record(z.string(), z.unknown())
      .default({})
      .openapi({
        description:
          "The tool's body without its input: a step reads the previous step's result. Only the first step names an uploadId (or the pipeline's uploadId is used); merge's uploadIds are added after the previous result, watermark's watermarkUploadId is read as in a single call.",
        example: { start: 0, end: 10 },
      }),
  })
  .openapi("PipelineStep");
export type PipelineStep = z.output<typeof PipelineStepSchema>;

export const PipelineStepsField = z
  .array(PipelineStepSchema)
  .min(1)
  .max(MAX_PIPELINE_STEPS)
  .openapi({
    description: `1 to ${MAX_PIPELINE_STEPS} steps, run in order; text-to-speech cannot be a step, and transcribe only the last one (its result is text)`,
  });

/** A template's variable values: each `{{name}}` in its steps' parameters is replaced by its value. */
export const TemplateVariablesField = z
  .record(z.string().regex(/^[A-Za-z][A-Za-z0-9_]{0,39}$/), z.union([z.string().max(10_000), z.number(), z.boolean()]))
  .openapi({
    description:
      "Values of the template's variables: a parameter that is exactly {{name}} takes the value as it is (a number stays a number); {{name}} inside a longer text is replaced by its text",
    example: { brand: "ACME", logo: "upl_01JD3Y0QZ8W1T0X7M4R2N6C9PB" },
  });

/** What a pipeline runs: its steps, or a saved template with its variables; shared by the call and its quote. */
export const PipelineSourceFields = z.object({
  steps: PipelineStepsField.optional(),
  templateId: z
    .string()
    .min(1)
    .max(64)
    .optional()
    .openapi({ description: "A saved template (POST /api/v1/templates), instead of steps" }),
  variables: TemplateVariablesField.optional(),
  uploadId: uploadId.optional().openapi({
    description: "The first step's input, when the first step's params name none (the usual way to run a template)",
  }),
});

export const PipelineRequestSchema = PipelineSourceFields.extend({
  webhookUrl: z.string().max(2048).optional().openapi({
    description:
      "Receives a signed POST when the pipeline completes or fails, as for a tool call; part of the body for Idempotency-Key",
  }),
  maxCredits: MaxCreditsField.optional().openapi({
    description:
      "The most the whole pipeline may cost, in credits; a pipeline that would cost more is refused with 402 (required, maxCredits) before anything is debited",
  }),
}).openapi("PipelineRequest");
export type PipelineRequest = z.output<typeof PipelineRequestSchema>;

export const PipelineStepPriceSchema = z
  .object({
    tool: toolEnum(),
    creditsUsed: z.int().openapi({ description: "Credits this step costs (one ledger entry)" }),
    estimatedSeconds: z.int(),
  })
  .openapi("PipelineStepPrice");

export const PipelineEnvelopeSchema = JobEnvelopeSchema.extend({
  steps: z.array(PipelineStepPriceSchema).openapi({ description: "What each step costs; creditsUsed is their sum" }),
}).openapi("PipelineEnvelope");
export type PipelineEnvelope = z.output<typeof PipelineEnvelopeSchema>;

// --- Templates ------------------------------------------------------------------------------

export const TemplateRequestSchema = z
  .object({
    name: z.string().trim().min(1).max(100).openapi({ example: "Brand standard edit" }),
    description: z.string().max(500).optional(),
    steps: PipelineStepsField,
  })
  .openapi("TemplateRequest");
export type TemplateRequest = z.output<typeof TemplateRequestSchema>;

export const TemplateSchema = z
  .object({
    templateId: z.string(),
    name: z.string(),
    description: z.string().optional(),
    steps: z.array(PipelineStepSchema),
    variables: z
      .array(z.string())
      .openapi({ description: "The {{name}} placeholders its steps use, in order of appearance" }),
    createdAt: z.string().openapi({ description: "ISO 8601" }),
  })
  .openapi("Template");
export type Template = z.output<typeof TemplateSchema>;

export const TemplateListSchema = z.object({ templates: z.array(TemplateSchema) }).openapi("TemplateList");
