/**
 * The connector's pipeline and template tools as rows (src/mcp/tool-table.ts): run up to ten media
 * tools in order as one job, and save, list and delete templates, over the services REST uses
 * (POST /api/v1/pipelines, /api/v1/templates) and checked by its schemas, so a refusal is REST's.
 * A step's tool may be named as the connector names the media tools (extract_audio) or as REST
 * does (extract-audio): assistants see the first, documents built on REST the second.
 */
import { z } from "zod";
import {
  MAX_PIPELINE_STEPS,
  PipelineEnvelopeSchema,
  PipelineRequestSchema,
  TemplateListSchema,
  TemplateRequestSchema,
  TemplateSchema,
  TemplateVariablesField,
  type PipelineEnvelope,
} from "../contract/pipelines";
import { MaxCreditsField } from "../contract/quotes";
import { TemplateDeletedSchema, TemplateRef } from "../contract/templates";
import { invalidInput } from "../error-translator";
import { accountLimits } from "../services/accounts/limits";
import { createPipelineJob } from "../services/media-jobs/pipelines";
import { createTemplate, deleteTemplate, listTemplates } from "../services/media-jobs/templates";
import { uploadId } from "../tools/fields";
import { assistantOf, callerOf } from "./tool-context";
import { idempotencyKeyField } from "./tool-input";
import { destroys, readOnly, tool, Worded, writes, type ConnectorTool } from "./tool-table";

/**
 * Steps as an assistant sends them: any tool name here, the contract's enum after `restSteps`
 * (so an unknown tool is refused with REST's message, naming its step).
 */
export const connectorSteps = z
  .array(
    z.object({
      tool: z.string().describe("A media tool's name, e.g. trim, extract_audio, clean_audio"),
      params: z
        .record(z.string(), z.unknown())
        .optional()
        .describe(
          "The tool's arguments without uploadId: each step reads the previous step's result (only the first step may name its uploadId)",
        ),
    }),
  )
  .describe(
    `1 to ${MAX_PIPELINE_STEPS} steps run in order as one job, each reading the previous result; text_to_speech cannot be a step, transcribe only the last`,
  );

type ConnectorSteps = z.output<typeof connectorSteps>;

/** The steps with REST's tool names (clean_audio is clean-audio), for the contract's schema. */
export const restSteps = (steps: ConnectorSteps | undefined) =>
  steps?.map((step) => ({ ...step, tool: step.tool.replace(/_/g, "-") }));

/** What a pipeline runs, as an assistant gives it; shared with `quote`. */
export const connectorPipelineSource = {
  steps: connectorSteps.optional(),
  templateId: z.string().min(1).max(64).optional(),
  variables: TemplateVariablesField.optional(),
  uploadId: uploadId.optional(),
};

export const pipelineSourceFields = {
  templateId: "A template from list_templates or save_template, instead of steps",
  variables:
    'The template\'s variables (list_templates shows them), e.g. {"start": 5, "brand": "ACME"}: a parameter that is exactly {{start}} takes the value as it is; {{brand}} inside a longer text takes its text',
  uploadId: "The first step's input (from upload_from_url or create_upload_link), when its params name none",
};

const stepNames = (steps: { tool: string }[]) => steps.map((step) => step.tool).join(" -> ");

export const pipelineTools: readonly ConnectorTool[] = [
  tool({
    name: "run_pipeline",
    title: "Run several media tools in order as one job",
    description: `Run up to ${MAX_PIPELINE_STEPS} media tools in order as one job, each step reading the previous step's result: e.g. trim, then clean_audio, then watermark, then convert. Give steps [{tool, params}] (params as that tool takes them, without uploadId) and the first input as uploadId, or a saved template's templateId and its variables (list_templates). Every step is checked and priced before anything is spent, as its own call would be, on what the step before produces; a chain that cannot run (a watermark after extract_audio removed the picture) is refused naming its step, and nothing is spent. Call quote with the same steps or template first, tell the person the price, then pass maxCredits. text_to_speech cannot be a step, transcribe only the last. Returns one jobId and each step's price: call get_job with waitSeconds until it is completed (it lists every step's state); only the final result can be downloaded. A failed pipeline is refunded in full.`,
    input: z.object({
      ...connectorPipelineSource,
      maxCredits: MaxCreditsField.optional(),
      idempotencyKey: idempotencyKeyField.optional(),
    }),
    fields: {
      ...pipelineSourceFields,
      maxCredits:
        "Optional. The most the whole pipeline may cost, in credits (the price quote gave): a pipeline that would cost more is refused and nothing is spent.",
    },
    output: PipelineEnvelopeSchema,
    annotations: writes,
    scope: "media",
    run: async ({ steps, idempotencyKey, ...rest }, context) => {
      const request = PipelineRequestSchema.safeParse({ ...rest, steps: restSteps(steps) });
      if (!request.success) throw invalidInput(request.error);
      const { webhookUrl: _none, ...pipeline } = request.data;
      const envelope: PipelineEnvelope = await createPipelineJob(
        context.env,
        await callerOf(context),
        { ...pipeline, idempotencyKey, assistant: assistantOf(context) },
        Date.now(),
        context.waitUntil,
      );
      return new Worded(
        envelope,
        `Pipeline job ${envelope.jobId} queued (${stepNames(envelope.steps)}): ${envelope.creditsUsed} credits used, ${envelope.creditsRemaining} left, about ${envelope.estimatedSeconds} s.`,
      );
    },
  }),
  tool({
    name: "save_template",
    title: "Save a pipeline as a template",
    description: `Save a pipeline's steps under a name, to run again with run_pipeline (templateId and variables). Any text in a step's params may be a placeholder {{name}} (a letter, then letters, digits or _): a parameter that is exactly "{{start}}" takes the value given at run time as it is (a number stays a number); {{brand}} inside a longer text is replaced by its text. The answer lists the template's variables. Saving checks the tools and the number of steps; the parameters are checked when the template runs with its variables (quote it first). The account keeps at most ${accountLimits.templates} templates, shared with its API keys. Free.`,
    input: z.object({ ...TemplateRequestSchema.shape, steps: connectorSteps }),
    fields: { name: "A name the person will recognise, e.g. Brand standard edit", description: "Optional" },
    output: TemplateSchema,
    annotations: writes,
    scope: "media",
    run: async ({ steps, ...rest }, context) => {
      const request = TemplateRequestSchema.safeParse({ ...rest, steps: restSteps(steps) });
      if (!request.success) throw invalidInput(request.error);
      const template = await createTemplate(context.env.DB, context.accountId, request.data, Date.now());
      return new Worded(
        template,
        `Template ${template.templateId} "${template.name}" saved (${stepNames(template.steps)})${template.variables.length ? `; variables: ${template.variables.join(", ")}` : ""}.`,
      );
    },
  }),
  tool({
    name: "list_templates",
    title: "Saved pipeline templates",
    description:
      "The account's saved templates, newest first: each with its templateId, name, steps (placeholders included) and the variables run_pipeline must be given. Free.",
    input: z.object({}),
    output: TemplateListSchema,
    annotations: readOnly,
    scope: "media",
    run: async (_input, context) => ({ templates: await listTemplates(context.env.DB, context.accountId) }),
  }),
  tool({
    name: "delete_template",
    title: "Delete a pipeline template",
    description:
      "Delete a saved template for good (its templateId from list_templates). Jobs already started from it are not affected. Free.",
    input: TemplateRef,
    output: TemplateDeletedSchema,
    annotations: destroys,
    scope: "media",
    run: async ({ templateId }, context) => {
      await deleteTemplate(context.env.DB, context.accountId, templateId);
      return { templateId, deleted: true as const };
    },
  }),
];
