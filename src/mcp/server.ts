/**
 * The connector's MCP tools, one instance per request (stateless). Every tool calls the same
 * services as REST: the ten media tools come from the tool registry (same schema, same
 * validation, same prices, same job creation and refunds), uploads from `uploads.ts`, jobs
 * from `jobs.ts`. Errors come back as `isError` results whose text is `{code, message, ...}` as
 * JSON (no structuredContent); a call that cannot be paid carries `balance`, `required` and the
 * billing page.
 */
import { McpServer } from "@modelcontextprotocol/server";
import { z } from "zod";
import type { Env } from "../env";
import { AppError, InsufficientCreditsError } from "../errors";
import { describeZodError } from "../http";
import { getAccount, getAccountDetails, type Caller } from "../services/accounts/accounts";
import { cancelJob } from "../services/media-jobs/lifecycle";
import { createToolJob } from "../services/media-jobs/creation";
import { MAX_JOB_WAIT_SECONDS, waitForJobForKey } from "../services/media-jobs/reads";
import { costOf } from "../services/billing/pricing";
import { uploadFromUrl } from "../services/media-jobs/uploads";
import { createUploadLink, uploadLinkStatus } from "../services/media-jobs/upload-capabilities";
import { getClonedVoice } from "../services/media-jobs/voices";
import { toolNames, tools, type ToolName } from "../tools";
import type { Rate } from "../tools/definition";
import { socialTools } from "./social-tools";
import { registerTools } from "./tool-table";
import { assistantOf, callerOf, guarded, ok, type McpContext, type ToolResult } from "./tool-context";
import type { AssistantScope, Connection } from "../services/accounts/connected-apps";
import { mediaToolInput } from "./tool-input";
import { ConnectorJobSchema, connectorJobView, JobEnvelopeSchema } from "../contract/jobs";
import { catalogueText, VoiceListSchema, voiceList } from "../contract/voices";

const priceText = (rate: Rate) =>
  rate.per === "free"
    ? "free"
    : rate.per === "call"
      ? `${rate.credits} credits per call`
      : rate.per === "minute"
        ? `${rate.credits} credits per minute, pro rata (max(1, ceil(${rate.credits} x seconds / 60)))${rate.clone ? ` (${rate.clone} a minute with the cloned voice)` : ""}`
        : `${rate.credits} credits per 1000 characters (${rate.clone} with the cloned voice)`;

/** The seconds a per-minute tool bills. */
const billedSeconds: Partial<Record<ToolName, string>> = {
  trim: " The seconds billed are those kept (end - start).",
  merge: " The seconds billed are the inputs' durations added up.",
};

/** When an assistant should reach for each tool, beyond the summary. */
const guidance: Record<ToolName, string> = {
  subtitles: "Use it to burn captions into a video, from an SRT the user gives or from automatic transcription.",
  transcribe: "Use it when the user wants the words of a recording as text or an .srt file.",
  "clean-audio": "Use it when a recording has background noise or a weak voice.",
  "extract-audio": "Use it when the user wants only the sound of a video.",
  convert: "Use it to change the container or format (mp4, webm, mov, avi, mkv).",
  merge: "Use it to join several videos, in order, into one.",
  watermark: "Use it to put a logo (an uploaded image) or a text mark on a video.",
  trim: "Use it to keep only a part of a video or audio file.",
  "text-to-speech": "Use it to turn text into spoken audio (.wav).",
  "voice-change": "Use it to replace the voice in a video with a catalogue voice or the user's cloned voice.",
};

const mcpName = (tool: ToolName) => tool.replace(/-/g, "_");

/** A worked example of a per-minute price (pay as you go), from the same function that bills. */
function example(tool: ToolName): string {
  const rate = tools[tool].rates.payg;
  if (rate.per !== "minute") return "";
  return ` For example ${costOf("payg", tool, { durationMs: 10 * 60_000 })} credits for 10 minutes of media on pay as you go.`;
}

export function buildMcpServer(context: McpContext): McpServer {
  const server = new McpServer(
    { name: "media-credits-api", version: "1.0.0" },
    {
      // Stateless streamable HTTP (no GET stream): a list-changed notification could never arrive.
      capabilities: { tools: { listChanged: false } },
      instructions:
        "Process video and audio for the signed-in account: upload media (upload_from_url for a public URL, create_upload_link then get_upload_link for a file on the person's computer), run a tool (it returns a jobId and spends credits), call get_job with waitSeconds until it is completed, then give the user the downloadUrl (valid 3 hours). get_balance shows the credits. Social posts (free): create_brand, create_post (media from an upload or a finished job), submit_post + create_approval_link when the brand needs client approval, schedule_post, then get_post and get_brand_stats.",
    },
  );

  for (const tool of toolNames) {
    const definition = tools[tool];
    server.registerTool(
      mcpName(tool),
      {
        title: definition.summary,
        description: `${definition.summary}. ${guidance[tool]} Cost: ${priceText(definition.rates.payg)} on pay as you go; ${priceText(definition.rates.plans)} on monthly plans (get_balance tells which applies).${billedSeconds[tool] ?? ""}${example(tool)} Credits are taken when the job starts. Returns a jobId: call get_job (with waitSeconds) until it is completed. A failed job is refunded automatically.`,
        // Checked by the registry's own schema (refinements and defaults included), REST's messages.
        inputSchema: mediaToolInput(tool),
        outputSchema: JobEnvelopeSchema,
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
      },
      async ({ idempotencyKey, ...params }) =>
        guarded(
          context,
          async () => {
            const envelope = await createToolJob(context.env, await callerOf(context), { tool, params: params as never, idempotencyKey, assistant: assistantOf(context) }, Date.now(), context.waitUntil);
            return ok({ ...envelope }, `Job ${envelope.jobId} queued: ${envelope.creditsUsed} credits used, ${envelope.creditsRemaining} left, about ${envelope.estimatedSeconds} s.`);
          },
          "media",
        ),
    );
  }

  server.registerTool(
    "upload_from_url",
    {
      title: "Upload media from a public URL",
      description: "Fetch a video, audio file or image (for watermarks) from a public http(s) URL into the account, up to 5 GB and 4 hours. Returns the uploadId the media tools take; it is valid 3 hours. Free.",
      inputSchema: z.object({ url: z.string().url().max(4096).describe("Public http(s) address of the file") }),
      outputSchema: z.object({ uploadId: z.string(), durationSeconds: z.number(), expiresIn: z.number().int() }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    async ({ url }: { url: string }) =>
      guarded(context, async () => {
        const policy = { allowPrivate: context.env.ALLOW_PRIVATE_URLS === "true", resolverUrl: context.env.DNS_RESOLVER_URL };
        return ok({ ...(await uploadFromUrl(context.env, context.accountId, url, policy, Date.now())) });
      }, "media"),
  );

  server.registerTool(
    "create_upload_link",
    {
      title: "Let the person upload a local file",
      description: "When the file is on the person's computer (not at a public URL): returns a link to a page, valid one hour and usable once, where they pick the file in their browser. Give them the link, then call get_upload_link until it shows the uploadId. Free.",
      inputSchema: z.object({}),
      outputSchema: z.object({ linkId: z.string(), url: z.string(), expiresAt: z.string() }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    async () => guarded(context, async () => ok(await createUploadLink(context.env.DB, context.accountId, context.origin, Date.now())), "media"),
  );

  server.registerTool(
    "get_upload_link",
    {
      title: "Status of an upload link",
      description: "Whether the person has uploaded through a link from create_upload_link: pending, expired, or uploaded with its uploadId (valid 3 hours), the file's name, its durationSeconds (what per-minute tools are priced on) and the seconds the upload has left (expiresIn).",
      inputSchema: z.object({ linkId: z.string().min(1).max(64) }),
      outputSchema: z.object({
        status: z.enum(["pending", "expired", "uploaded"]),
        uploadId: z.string().optional(),
        filename: z.string().optional(),
        durationSeconds: z.number().optional(),
        expiresIn: z.number().int().optional(),
      }),
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    async ({ linkId }: { linkId: string }) => guarded(context, async () => ok({ ...(await uploadLinkStatus(context.env.DB, context.accountId, linkId, Date.now())) }), "media"),
  );

  server.registerTool(
    "get_job",
    {
      title: "Status of a job",
      description: `Read a job started through this connector: queued, processing, completed (with an absolute downloadUrl, valid 3 hours after the job ends) or failed (with the error; the credits were refunded). With waitSeconds (up to ${MAX_JOB_WAIT_SECONDS}), the answer comes as soon as the job ends, or after that many seconds with its state then: call again with waitSeconds until it ends rather than polling quickly.`,
      inputSchema: z.object({
        jobId: z.string().min(1).max(64),
        waitSeconds: z.number().int().min(0).max(MAX_JOB_WAIT_SECONDS).optional().describe(`Seconds to wait for the job to end before answering (0-${MAX_JOB_WAIT_SECONDS}, default 0).`),
      }),
      outputSchema: ConnectorJobSchema,
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    async ({ jobId, waitSeconds }: { jobId: string; waitSeconds?: number }) =>
      guarded(context, async () => {
        const job = await waitForJobForKey(context.env, await callerOf(context), jobId, (waitSeconds ?? 0) * 1000);
        return ok(connectorJobView(job, context.origin));
      }, "media"),
  );

  server.registerTool(
    "cancel_job",
    {
      title: "Cancel a job",
      description: "Stop a queued or processing job started through this connector (e.g. the person changed their mind or picked the wrong file): its credits are refunded in full. A job that already ended cannot be cancelled.",
      inputSchema: z.object({ jobId: z.string().min(1).max(64) }),
      outputSchema: z.object({ jobId: z.string(), status: z.enum(["queued", "processing", "completed", "failed"]), error: z.string().optional() }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    },
    async ({ jobId }: { jobId: string }) =>
      guarded(context, async () => {
        const job = await cancelJob(context.env, await callerOf(context), jobId, Date.now());
        return ok({ jobId: job.jobId, status: job.status, ...(job.error ? { error: job.error } : {}) });
      }, "media"),
  );

  server.registerTool(
    "get_balance",
    {
      title: "Credit balance",
      description: "The account's credits: total balance, monthly plan credits (used first, reset each period) and purchased credits (never expire), the plan and when it renews. Use it before expensive work or after a refusal for lack of credits.",
      inputSchema: z.object({}),
      outputSchema: z.object({ balance: z.number().int(), planCredits: z.number().int(), purchasedCredits: z.number().int(), plan: z.string(), planRenewsAt: z.string().nullable(), billingUrl: z.string() }),
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    async () =>
      guarded(context, async () => {
        const account = await getAccountDetails(context.env.DB, context.accountId);
        return ok({
          balance: account.balance,
          planCredits: account.planCredits,
          purchasedCredits: account.purchasedCredits,
          plan: account.plan,
          planRenewsAt: account.planPeriodEnd ? new Date(account.planPeriodEnd).toISOString() : null,
          billingUrl: `${context.origin}/app/billing`,
        });
      }),
  );

  server.registerTool(
    "list_voices",
    {
      title: "Voices for speech",
      description: `The voices text_to_speech and voice_change accept: ${catalogueText}, and clone when the account has registered its own voice (in the developer area).`,
      inputSchema: z.object({}),
      outputSchema: VoiceListSchema,
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    async () =>
      guarded(context, async () => {
        const clone = await getClonedVoice(context.env.DB, { accountId: context.accountId }).catch((error) => {
          if (error instanceof AppError && error.code === "not_found") return null;
          throw error;
        });
        return ok({ voices: voiceList(clone) });
      }),
  );

  server.registerTool(
    "get_cloned_voice",
    {
      title: "The account's cloned voice",
      description:
        "Whether the account has registered its own voice, and its status. When it has, text_to_speech and voice_change accept voice \"clone\" (at the cloned-voice rate shown in their descriptions). The sample (10 s of speech or more) is registered or deleted by the person in the developer area (manageUrl).",
      inputSchema: z.object({}),
      outputSchema: z.object({ registered: z.boolean(), status: z.string().optional(), createdAt: z.string().optional(), manageUrl: z.string() }),
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    async () =>
      guarded(context, async () => {
        const manageUrl = `${context.origin}/app/voice`;
        const clone = await getClonedVoice(context.env.DB, { accountId: context.accountId }).catch((error) => {
          if (error instanceof AppError && error.code === "not_found") return null;
          throw error;
        });
        if (!clone) return ok({ registered: false, manageUrl }, `No cloned voice is registered; the person can add one at ${manageUrl}.`);
        return ok({ registered: true, status: clone.status, createdAt: clone.createdAt, manageUrl });
      }),
  );

  registerTools(server, context, socialTools);
  return server;
}
