/**
 * Pipelines: up to ten tool calls in order, one job. Each step is checked and priced as its tool's
 * own call is (the same schema, checks and prices), on what the previous step will produce: a trim
 * sets the length of what follows, a merge adds its inputs up, an extract-audio leaves no picture
 * for a watermark (a 400 before anything is debited). The job is paid in one batch with one ledger
 * entry per step; a failed or cancelled pipeline is refunded in full, once, like any job.
 */
import { AppError, invalidRequest } from "../../errors";
import type { Env } from "../../env";
import { invalidInput } from "../../error-translator";
import { estimateSeconds, isToolName, toolDefinition, type ToolName } from "../../tools";
import type { ProducedMedia, ToolContext } from "../../tools/definition";
import type { Caller } from "../accounts/accounts";
import { costOf } from "../billing/pricing";
import { MAX_PIPELINE_STEPS, type PipelineEnvelope, type PipelineStep } from "../../contract/pipelines";
import { isOversizedVideo } from "@media-credits/wire/decode-limits";
import { checkTestModeBounds, createJob, MAX_WORK_SECONDS, type JobRequest, toolContext } from "./creation";
import { resolveUpload, type StoredUpload } from "./uploads";
import { checkStepsSize, isStepRef, stepRef, stepsOfJob } from "./pipeline-steps";
import { resolveTemplateSteps } from "./templates";

/** A step ready to be paid for and run. */
export interface PlannedStep {
  tool: ToolName;
  /** Validated parameters, the previous result named by stepRef. */
  params: Record<string, unknown>;
  /** Upload ids and step references, in the tool's input order. */
  inputs: string[];
  /** The previous step's result as it was priced (absent for the first step). */
  inputShape?: ProducedMedia;
  cost: number;
  estimatedSeconds: number;
  produces: ProducedMedia;
}

export interface PipelinePlan {
  steps: PlannedStep[];
  cost: number;
  estimatedSeconds: number;
  /** The uploads the pipeline reads. */
  uploadIds: string[];
}

/** Which field of a tool names its main input, and how a step fills it from the previous result. */
function withPreviousResult(tool: ToolName, params: Record<string, unknown>, position: number) {
  const previous = stepRef(position - 1);
  if (tool === "merge") {
    const named = params.uploadIds;
    return { ...params, uploadIds: [previous, ...(Array.isArray(named) ? named : [named])] };
  }
  return { ...params, uploadId: previous };
}

const where = (position: number, tool: string) => `steps.${position} (${tool})`;

/** A step's refusal says which step: "steps.2 (watermark): ...". */
function inStep(error: unknown, position: number, tool: string): unknown {
  if (error instanceof AppError)
    return new AppError(error.code, `${where(position, tool)}: ${error.message}`, error.details);
  return error;
}

/** The virtual upload a step reads: the previous step's result, as priced. */
function previousResult(
  caller: Caller,
  position: number,
  shape: Extract<ProducedMedia, { kind: "video" | "audio" }>,
): StoredUpload {
  return {
    id: stepRef(position),
    accountId: caller.accountId,
    objectKey: "",
    filename: "",
    kind: shape.kind,
    container: shape.container,
    mimeType: "",
    sizeBytes: 0,
    durationMs: shape.durationMs,
    probe: {
      kind: shape.kind,
      container: shape.container,
      mimeType: "",
      durationMs: shape.durationMs,
      hasAudio: shape.hasAudio,
      hasVideo: shape.hasVideo,
      width: shape.width,
      height: shape.height,
    },
    expiresAt: Number.MAX_SAFE_INTEGER,
  };
}

/**
 * Checks and prices every step in order, as each tool's call would be, on what the steps before
 * it produce. Throws the first refusal, naming its step; nothing is written.
 */
export async function planPipeline(
  env: Env,
  caller: Caller,
  steps: PipelineStep[],
  firstInput: string | undefined,
  now: number,
): Promise<PipelinePlan> {
  if (steps.length === 0 || steps.length > MAX_PIPELINE_STEPS)
    throw invalidRequest(`steps: a pipeline has 1 to ${MAX_PIPELINE_STEPS} steps.`);
  checkStepsSize(steps);
  const context: ToolContext = toolContext(env, caller);
  const planned: PlannedStep[] = [];
  const uploadIds = new Set<string>();
  let previous: ProducedMedia | undefined;
  for (const [position, step] of steps.entries()) {
    const tool = step.tool;
    if (!isToolName(tool)) throw invalidRequest(`steps.${position}.tool: unknown tool.`);
    const spec = toolDefinition(tool);
    if (!spec.produces)
      throw invalidRequest(
        `${where(position, tool)}: text-to-speech cannot be a pipeline step (the length of speech is known only once it is spoken, so the steps after it could not be priced); call it on its own.`,
      );
    const { webhookUrl: _w, maxCredits: _m, ...raw } = step.params ?? {};
    if (position > 0 && (raw.uploadId !== undefined || (tool !== "merge" && raw.uploadIds !== undefined)))
      throw invalidRequest(
        `steps.${position}.params.uploadId: a step after the first reads the previous step's result; only the first step names its input.`,
      );
    if (
      position === 0 &&
      firstInput !== undefined &&
      (raw.uploadId !== undefined || (tool !== "merge" && raw.uploadIds !== undefined))
    )
      throw invalidRequest(
        "uploadId: the first step names its input already; give the input once, in the pipeline's uploadId or in the first step's params.",
      );
    if (position > 0 && previous?.kind === "text")
      throw invalidRequest(
        `${where(position, tool)}: the previous step (${steps[position - 1]!.tool}) produces text, which no tool reads; transcribe can only be a pipeline's last step.`,
      );
    const withInput =
      position > 0
        ? withPreviousResult(tool, raw, position)
        : firstInput === undefined
          ? raw
          : tool === "merge"
            ? { ...raw, uploadIds: [firstInput, ...(Array.isArray(raw.uploadIds) ? raw.uploadIds : [])] }
            : { ...raw, uploadId: firstInput };
    const parsed = spec.params.safeParse(withInput);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) issue.path.unshift("steps", position, "params");
      throw invalidInput(parsed.error);
    }
    const params = parsed.data as Record<string, unknown>;
    try {
      const refs = spec.inputs(params);
      const uploads: StoredUpload[] = [];
      for (const [index, ref] of refs.entries()) {
        let upload: StoredUpload;
        // Only the reference put in above is the previous result: an id a caller sends that looks
        // like one is an unknown upload.
        if (isStepRef(ref.uploadId) && !(position > 0 && index === 0 && ref.uploadId === stepRef(position - 1)))
          throw invalidRequest(
            `${ref.field}: upload ${JSON.stringify(ref.uploadId.slice(0, 16))} is unknown or expired.`,
          );
        if (isStepRef(ref.uploadId)) {
          const shape = previous as Extract<ProducedMedia, { kind: "video" | "audio" }>;
          upload = previousResult(caller, position - 1, shape);
          if (!ref.accepts.includes(upload.kind))
            throw invalidRequest(
              `${tool} needs ${ref.accepts.join(" or ")}; the previous step (${steps[position - 1]!.tool}) produces ${upload.kind === "audio" ? "audio only" : upload.kind}.`,
            );
          if (ref.needsAudio && !upload.probe.hasAudio)
            throw invalidRequest(`${tool} needs sound; the previous step's result has no audio track.`);
        } else {
          if (position > 0 && ref.field === "uploadId")
            throw invalidRequest("a step after the first reads the previous step's result.");
          upload = await resolveUpload(env.DB, caller.accountId, ref.uploadId, ref.field, now, caller.mode);
          if (!ref.accepts.includes(upload.kind))
            throw invalidRequest(
              `${ref.field}: this tool needs ${ref.accepts.join(" or ")}, the upload is ${upload.kind === "image" ? "an image" : upload.kind}.`,
            );
          if (ref.needsAudio && !upload.probe.hasAudio)
            throw invalidRequest(`${ref.field}: the upload has no audio track.`);
          if (upload.kind === "video" && isOversizedVideo(upload.probe.width, upload.probe.height))
            throw invalidRequest(
              `${ref.field}: the video is ${upload.probe.width}x${upload.probe.height}; frames larger than 8192x4320 (8K) are not processed.`,
            );
          uploadIds.add(upload.id);
        }
        uploads.push(upload);
      }
      if (uploads.length === 0)
        throw invalidRequest("uploadId: Required (the first step's input, or the pipeline's uploadId).");
      await spec.check?.(params, uploads, context);
      const quantity = spec.quantity(params, uploads);
      if (caller.mode === "test") checkTestModeBounds(quantity);
      const cost = caller.mode === "test" ? 0 : costOf(caller.plan, tool, quantity);
      const produces = spec.produces(params, uploads);
      planned.push({
        tool,
        params,
        inputs: refs.map((ref) => ref.uploadId),
        inputShape: position > 0 ? previous : undefined,
        cost,
        estimatedSeconds: estimateSeconds(tool, quantity),
        produces,
      });
      previous = produces;
    } catch (error) {
      throw inStep(error, position, tool);
    }
  }
  const estimatedSeconds = planned.reduce((sum, step) => sum + step.estimatedSeconds, 0);
  if (estimatedSeconds > MAX_WORK_SECONDS)
    throw invalidRequest(
      `This pipeline would need about ${Math.ceil(estimatedSeconds / 3600)} hours of processing; a job may take at most ${MAX_WORK_SECONDS / 3600} hours. Split the media into shorter parts.`,
    );
  return {
    steps: planned,
    cost: planned.reduce((sum, step) => sum + step.cost, 0),
    estimatedSeconds,
    uploadIds: [...uploadIds],
  };
}

/** What a pipeline call names: steps, or a template and its variables; and the first step's input. */
export interface PipelineSource {
  steps?: PipelineStep[];
  templateId?: string;
  variables?: Record<string, string | number | boolean>;
  uploadId?: string;
}

/** The steps a call runs: its own, or its template's with the variables put in. */
export async function stepsOf(env: Env, caller: Caller, source: PipelineSource): Promise<PipelineStep[]> {
  if ((source.steps === undefined) === (source.templateId === undefined))
    throw invalidRequest("steps: send either steps or templateId (with its variables), not both.");
  if (source.steps) {
    if (source.variables !== undefined) throw invalidRequest("variables: only with templateId.");
    return source.steps;
  }
  return resolveTemplateSteps(env.DB, caller.accountId, source.templateId as string, source.variables ?? {});
}

export interface CreatePipelineInput extends PipelineSource {
  idempotencyKey?: string;
  webhookUrl?: string;
  maxCredits?: number;
  assistant?: JobRequest["assistant"];
}

/** Plans, pays for and dispatches a pipeline: one job, one ledger entry per step. */
export async function createPipelineJob(
  env: Env,
  caller: Caller,
  input: CreatePipelineInput,
  now: number,
  waitUntil?: (task: Promise<unknown>) => void,
): Promise<PipelineEnvelope> {
  const { idempotencyKey, webhookUrl, maxCredits, assistant, ...source } = input;
  let plan: PipelinePlan | undefined;
  const { envelope, replayed } = await createJob(
    env,
    caller,
    { hashedTool: "pipeline", hashedBody: source, idempotencyKey, webhookUrl, maxCredits, assistant },
    async () => {
      plan = await planPipeline(env, caller, await stepsOf(env, caller, source), source.uploadId, now);
      const steps = plan.steps;
      return {
        tool: "pipeline",
        params: JSON.stringify({ steps: steps.map(({ tool, params }) => ({ tool, params })) }),
        uploadIds: plan.uploadIds,
        cost: plan.cost,
        estimatedSeconds: plan.estimatedSeconds,
        debits: steps.map(({ tool, cost }) => ({ tool, cost })),
        rows: (db, jobId) =>
          steps.map((step, position) =>
            db
              .prepare(
                `INSERT INTO pipeline_steps (job_id, position, tool, params, inputs, input_shape, cost, estimated_seconds, status)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'queued')`,
              )
              .bind(
                jobId,
                position,
                step.tool,
                JSON.stringify(step.params),
                JSON.stringify(step.inputs),
                step.inputShape ? JSON.stringify(step.inputShape) : null,
                step.cost,
                step.estimatedSeconds,
              ),
          ),
      };
    },
    now,
    waitUntil,
  );
  const steps =
    !replayed && plan
      ? plan.steps.map(({ tool, cost, estimatedSeconds }) => ({ tool, creditsUsed: cost, estimatedSeconds }))
      : (await stepsOfJob(env.DB, envelope.jobId)).map((step) => ({
          tool: step.tool,
          creditsUsed: step.cost,
          estimatedSeconds: step.estimatedSeconds,
        }));
  return { ...envelope, steps };
}
