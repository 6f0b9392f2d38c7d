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

export interface Quote {
  tool: ToolName;
  /** Credits the call would debit now (0 with a test key). */
  creditsRequired: number;
  estimatedSeconds: number;
  /** The account's balance now (plan and purchased credits together). */
  balance: number;
  /** The balance covers the call. */
  sufficient: boolean;
  plan: Caller["plan"];
}

/** A quote for a call as sent: its parameters checked by the tool's own schema, as the call checks them. */
export async function quoteCall(
  env: Env,
  caller: Caller,
  request: { tool: ToolName; params: Record<string, unknown> },
  now: number,
): Promise<Quote> {
  // The call's own fields change neither the price nor the work: a body copied from a call may carry them.
  const { webhookUrl: _webhookUrl, maxCredits: _maxCredits, ...params } = request.params;
  const parsed = tools[request.tool].params.safeParse(params);
  if (!parsed.success) throw invalidInput(parsed.error);
  return quoteToolCall(env, caller, request.tool, parsed.data as never, now);
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
