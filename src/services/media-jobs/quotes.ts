/**
 * Quotes: what a call would cost, for the caller's plan, before anything is spent. A quote runs
 * the call's own checks and pricing (priceToolCall), so it refuses what the call would refuse,
 * with the same error, and its price is exactly what the call then debits while the inputs and
 * the plan stay the same.
 */
import type { Env } from "../../env";
import { invalidInput } from "../../error-translator";
import { tools, type ToolParams } from "../../tools";
import type { Caller } from "../accounts/accounts";
import { balanceOf } from "../billing/credits";
import type { ToolName } from "../billing/pricing";
import { priceToolCall } from "./creation";
import { planPipeline, stepsOf, type PipelineSource } from "./pipelines";
import { invalidRequest } from "../../errors";
import type { QuoteRequest } from "../../contract/quotes";

export interface Quote {
  tool: ToolName | "pipeline";
  /** Credits the call would debit now (0 with a test key). */
  creditsRequired: number;
  estimatedSeconds: number;
  /** The account's balance now (plan and purchased credits together). */
  balance: number;
  /** The balance covers the call. */
  sufficient: boolean;
  plan: Caller["plan"];
  /** A pipeline's price step by step. */
  steps?: { tool: ToolName; creditsRequired: number; estimatedSeconds: number }[];
}

/** A quote for a call as sent: a tool's parameters checked by its own schema, or a pipeline planned as its call plans it. */
export async function quoteCall(env: Env, caller: Caller, request: QuoteRequest, now: number): Promise<Quote> {
  const { tool, params: sent, ...pipeline } = request;
  if (tool === undefined) {
    if (sent !== undefined) throw invalidRequest("tool: Required with params.");
    if (pipeline.steps === undefined && pipeline.templateId === undefined)
      throw invalidRequest("tool: Required (or steps, or templateId, to price a pipeline).");
    return quotePipeline(env, caller, pipeline, now);
  }
  if (pipeline.steps !== undefined || pipeline.templateId !== undefined)
    throw invalidRequest(
      "steps: price either one tool call (tool, params) or a pipeline (steps or templateId), not both.",
    );
  if (sent === undefined) throw invalidRequest("params: Required (the tool call's body).");
  // The call's own fields change neither the price nor the work: a body copied from a call may carry them.
  const { webhookUrl: _webhookUrl, maxCredits: _maxCredits, ...params } = sent;
  const parsed = tools[tool].params.safeParse(params);
  if (!parsed.success) throw invalidInput(parsed.error);
  return quoteToolCall(env, caller, tool, parsed.data as never, now);
}

/** A pipeline's quote: the plan its call would make, step by step; nothing is written. */
export async function quotePipeline(env: Env, caller: Caller, source: PipelineSource, now: number): Promise<Quote> {
  const plan = await planPipeline(env, caller, await stepsOf(env, caller, source), source.uploadId, now);
  const balance = await balanceOf(env.DB, caller.accountId);
  return {
    tool: "pipeline",
    creditsRequired: plan.cost,
    estimatedSeconds: plan.estimatedSeconds,
    balance,
    sufficient: balance >= plan.cost,
    plan: caller.plan,
    steps: plan.steps.map((step) => ({
      tool: step.tool,
      creditsRequired: step.cost,
      estimatedSeconds: step.estimatedSeconds,
    })),
  };
}

export async function quoteToolCall<K extends ToolName>(
  env: Env,
  caller: Caller,
  tool: K,
  params: ToolParams[K],
  now: number,
): Promise<Quote> {
  const { cost, estimatedSeconds } = await priceToolCall(env, caller, tool, params, now);
  const balance = await balanceOf(env.DB, caller.accountId);
  return { tool, creditsRequired: cost, estimatedSeconds, balance, sufficient: balance >= cost, plan: caller.plan };
}
