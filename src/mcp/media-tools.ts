/**
 * The connector's media and account tools as rows (src/mcp/tool-table.ts): the ten registry tools
 * (src/tools/: schema, summary, guidance, rates and what they bill on, all from the definition),
 * uploads, jobs, balance and voices, over the same services as REST. `quote` prices a pipeline too;
 * running one and its templates are pipeline-tools.ts.
 */
import { z } from "zod";
import { ConnectorJobSchema, connectorJobView, JobEnvelopeSchema } from "../contract/jobs";
import { MaxCreditsField, QuoteRequestSchema, QuoteSchema } from "../contract/quotes";
import { catalogueText, VoiceListSchema, voiceList } from "../contract/voices";
import { AppError } from "../errors";
import { getAccountDetails } from "../services/accounts/accounts";
import { costOf, rateText } from "../services/billing/pricing";
import { cancelJob } from "../services/media-jobs/lifecycle";
import { createToolJob } from "../services/media-jobs/creation";
import { quoteCall } from "../services/media-jobs/quotes";
import { MAX_JOB_WAIT_SECONDS, waitForJobForKey } from "../services/media-jobs/reads";
import { uploadFromUrl } from "../services/media-jobs/uploads";
import { createUploadLink, uploadLinkStatus } from "../services/media-jobs/upload-capabilities";
import { getClonedVoice } from "../services/media-jobs/voices";
import { toolNames, tools, type ToolName } from "../tools";
import { invalidInput } from "../error-translator";
import { assistantOf, callerOf, type McpContext } from "./tool-context";
import { idempotencyKeyField, mediaToolInput } from "./tool-input";
import { connectorPipelineSource, pipelineSourceFields, restSteps } from "./pipeline-tools";
import { readOnly, tool, Worded, writes, type ConnectorTool } from "./tool-table";

const mcpName = (name: ToolName) => name.replace(/-/g, "_");

/** A worked example of a per-minute price (pay as you go), from the same function that bills. */
function example(name: ToolName): string {
  if (tools[name].rates.payg.per !== "minute") return "";
  return ` For example ${costOf("payg", name, { durationMs: 10 * 60_000 })} credits for 10 minutes of media on pay as you go.`;
}

/** What an assistant reads of a registry tool: all of it from the tool's definition. */
export function mediaToolDescription(name: ToolName): string {
  const { summary, guidance, billedOn, rates } = tools[name];
  return `${summary}. ${guidance} Cost: ${rateText(rates.payg)} on pay as you go; ${rateText(rates.plans)} on monthly plans (get_balance tells which applies).${billedOn ? ` ${billedOn}` : ""}${example(name)} Credits are taken when the job starts; for long media or many inputs, call quote first (the exact cost, nothing spent) and pass maxCredits so the call never costs more. Returns a jobId: call get_job (with waitSeconds) until it is completed. A failed job is refunded automatically.`;
}

const mediaTool = (name: ToolName) =>
  tool({
    name: mcpName(name),
    title: tools[name].summary,
    description: mediaToolDescription(name),
    // The registry's own schema (refinements and defaults included), REST's messages; advertised
    // with REST's field descriptions worded for assistants (tool-input.ts).
    input: (tools[name].params as unknown as z.ZodObject).safeExtend({
      idempotencyKey: idempotencyKeyField.optional(),
      maxCredits: MaxCreditsField.optional(),
    }),
    advertised: mediaToolInput(name),
    output: JobEnvelopeSchema,
    annotations: writes,
    scope: "media",
    run: async (
      {
        idempotencyKey,
        maxCredits,
        ...params
      }: { idempotencyKey?: string; maxCredits?: number } & Record<string, unknown>,
      context,
    ) => {
      const envelope = await createToolJob(
        context.env,
        await callerOf(context),
        { tool: name, params: params as never, idempotencyKey, maxCredits, assistant: assistantOf(context) },
        Date.now(),
        context.waitUntil,
      );
      return new Worded(
        envelope,
        `Job ${envelope.jobId} queued: ${envelope.creditsUsed} credits used, ${envelope.creditsRemaining} left, about ${envelope.estimatedSeconds} s.`,
      );
    },
  });

const JobRef = z.object({ jobId: z.string().min(1).max(64) });

/** The account's cloned voice, or null when it has none. */
const clonedVoice = (context: McpContext) =>
  getClonedVoice(context.env.DB, { accountId: context.accountId }).catch((error) => {
    if (error instanceof AppError && error.code === "not_found") return null;
    throw error;
  });

export const mediaTools: readonly ConnectorTool[] = [
  ...toolNames.map(mediaTool),
  tool({
    name: "upload_from_url",
    title: "Upload media from a public URL",
    description:
      "Fetch a video, audio file or image (for watermarks) from a public http(s) URL into the account, up to 5 GB and 4 hours. Returns the uploadId the media tools take; it is valid 3 hours. Free.",
    input: z.object({ url: z.string().url().max(4096) }),
    fields: { url: "Public http(s) address of the file" },
    output: z.object({ uploadId: z.string(), durationSeconds: z.number(), expiresIn: z.number().int() }),
    annotations: { ...writes, openWorldHint: true },
    scope: "media",
    run: async ({ url }, context) => {
      const policy = {
        allowPrivate: context.env.ALLOW_PRIVATE_URLS === "true",
        resolverUrl: context.env.DNS_RESOLVER_URL,
      };
      return { ...(await uploadFromUrl(context.env, context.accountId, url, policy, Date.now())) };
    },
  }),
  tool({
    name: "create_upload_link",
    title: "Let the person upload a local file",
    description:
      "When the file is on the person's computer (not at a public URL): returns a link to a page, valid one hour and usable once, where they pick the file in their browser. Give them the link, then call get_upload_link until it shows the uploadId. Free.",
    input: z.object({}),
    output: z.object({ linkId: z.string(), url: z.string(), expiresAt: z.string() }),
    annotations: writes,
    scope: "media",
    run: (_input, context) => createUploadLink(context.env.DB, context.accountId, context.origin, Date.now()),
  }),
  tool({
    name: "get_upload_link",
    title: "Status of an upload link",
    description:
      "Whether the person has uploaded through a link from create_upload_link: pending, expired, or uploaded with its uploadId (valid 3 hours), the file's name, its durationSeconds (what per-minute tools are priced on) and the seconds the upload has left (expiresIn).",
    input: z.object({ linkId: z.string().min(1).max(64) }),
    output: z.object({
      status: z.enum(["pending", "expired", "uploaded"]),
      uploadId: z.string().optional(),
      filename: z.string().optional(),
      durationSeconds: z.number().optional(),
      expiresIn: z.number().int().optional(),
    }),
    annotations: readOnly,
    scope: "media",
    run: async ({ linkId }, context) => ({
      ...(await uploadLinkStatus(context.env.DB, context.accountId, linkId, Date.now())),
    }),
  }),
  tool({
    name: "get_job",
    title: "Status of a job",
    description: `Read a job started through this connector: queued, processing, completed (with an absolute downloadUrl, valid 3 hours after the job ends) or failed (with the error; the credits were refunded). With waitSeconds (up to ${MAX_JOB_WAIT_SECONDS}), the answer comes as soon as the job ends, or after that many seconds with its state then: call again with waitSeconds until it ends rather than polling quickly.`,
    input: JobRef.extend({ waitSeconds: z.number().int().min(0).max(MAX_JOB_WAIT_SECONDS).optional() }),
    fields: {
      waitSeconds: `Seconds to wait for the job to end before answering (0-${MAX_JOB_WAIT_SECONDS}, default 0).`,
    },
    output: ConnectorJobSchema,
    annotations: readOnly,
    scope: "media",
    run: async ({ jobId, waitSeconds }, context) =>
      connectorJobView(
        await waitForJobForKey(context.env, await callerOf(context), jobId, (waitSeconds ?? 0) * 1000),
        context.origin,
      ),
  }),
  tool({
    name: "cancel_job",
    title: "Cancel a job",
    description:
      "Stop a queued or processing job started through this connector (e.g. the person changed their mind or picked the wrong file): its credits are refunded in full. A job that already ended cannot be cancelled.",
    input: JobRef,
    output: ConnectorJobSchema.pick({ jobId: true, status: true, error: true }),
    annotations: { ...writes, destructiveHint: true },
    scope: "media",
    run: async ({ jobId }, context) => {
      const job = await cancelJob(context.env, await callerOf(context), jobId, Date.now());
      return { jobId: job.jobId, status: job.status, ...(job.error ? { error: job.error } : {}) };
    },
  }),
  tool({
    name: "quote",
    title: "Price a media tool call or a pipeline",
    description:
      "The exact credits a media tool call, or a pipeline (run_pipeline), would take now, for the account's plan, without running it or spending anything: the same checks as the call (a bad input is refused the same way), its estimate, the balance and whether it covers the call; for a pipeline, each step's price too. Give tool and params for one call; steps (or templateId and variables) and uploadId for a pipeline. Use it before long or large jobs and tell the person the price; then make the call with maxCredits set to it.",
    input: z.object({
      tool: z.string().min(1).max(40).optional(),
      params: z.record(z.string(), z.unknown()).optional(),
      ...connectorPipelineSource,
    }),
    fields: {
      tool: "The media tool's name, e.g. clean_audio or clean-audio (one call)",
      params: "The arguments the tool would be called with (uploadId, ...)",
      steps: "A pipeline's steps, as run_pipeline takes them (instead of tool and params)",
      ...pipelineSourceFields,
    },
    output: QuoteSchema,
    annotations: readOnly,
    scope: "media",
    run: async ({ tool: name, steps, ...rest }, context) => {
      const request = QuoteRequestSchema.safeParse({
        ...rest,
        tool: name?.replace(/_/g, "-"),
        steps: restSteps(steps),
      });
      if (!request.success) throw invalidInput(request.error);
      const quote = await quoteCall(context.env, await callerOf(context), request.data, Date.now());
      const perStep = quote.steps
        ? ` (${quote.steps.map((step) => `${step.tool} ${step.creditsRequired}`).join(", ")})`
        : "";
      return new Worded(
        quote,
        `${quote.tool} would cost ${quote.creditsRequired} credits${perStep}, about ${quote.estimatedSeconds} s; the balance is ${quote.balance}${quote.sufficient ? "" : ", not enough"}.`,
      );
    },
  }),
  tool({
    name: "get_balance",
    title: "Credit balance",
    description:
      "The account's credits: total balance, monthly plan credits (used first, reset each period) and purchased credits (never expire), the plan and when it renews. Use it before expensive work or after a refusal for lack of credits.",
    input: z.object({}),
    output: z.object({
      balance: z.number().int(),
      planCredits: z.number().int(),
      purchasedCredits: z.number().int(),
      plan: z.string(),
      planRenewsAt: z.string().nullable(),
      billingUrl: z.string(),
    }),
    annotations: readOnly,
    run: async (_input, context) => {
      const account = await getAccountDetails(context.env.DB, context.accountId);
      return {
        balance: account.balance,
        planCredits: account.planCredits,
        purchasedCredits: account.purchasedCredits,
        plan: account.plan,
        planRenewsAt: account.planPeriodEnd ? new Date(account.planPeriodEnd).toISOString() : null,
        billingUrl: `${context.origin}/app/billing`,
      };
    },
  }),
  tool({
    name: "list_voices",
    title: "Voices for speech",
    description: `The voices text_to_speech and voice_change accept: ${catalogueText}, and clone when the account has registered its own voice (in the developer area).`,
    input: z.object({}),
    output: VoiceListSchema,
    annotations: readOnly,
    run: async (_input, context) => ({ voices: voiceList(await clonedVoice(context)) }),
  }),
  tool({
    name: "get_cloned_voice",
    title: "The account's cloned voice",
    description:
      'Whether the account has registered its own voice, and its status. When it has, text_to_speech and voice_change accept voice "clone" (at the cloned-voice rate shown in their descriptions). The sample (10 s of speech or more) is registered or deleted by the person in the developer area (manageUrl).',
    input: z.object({}),
    output: z.object({
      registered: z.boolean(),
      status: z.string().optional(),
      createdAt: z.string().optional(),
      manageUrl: z.string(),
    }),
    annotations: readOnly,
    run: async (_input, context) => {
      const manageUrl = `${context.origin}/app/voice`;
      const clone = await clonedVoice(context);
      if (!clone)
        return new Worded(
          { registered: false, manageUrl },
          `No cloned voice is registered; the person can add one at ${manageUrl}.`,
        );
      return { registered: true, status: clone.status, createdAt: clone.createdAt, manageUrl };
    },
  }),
];
