/**
 * Credit costs of the tools under the two published pricing forms. Form A (`payg`) is the
 * endpoint table of the contract; form B (monthly plans) makes the light tools free and
 * prices speech differently; each tool's rates live in its definition (src/tools/). All costs
 * are whole credits rounded up, at least 1 unless free.
 */
import { toolNames, tools, type ToolName } from "../../tools";
import type { BillingQuantity, Rate } from "../../tools/definition";

export const plans = ["payg", "solo", "starter", "pro", "scale"] as const;
export type Plan = (typeof plans)[number];

export { toolNames, type ToolName } from "../../tools";
export type { BillingQuantity } from "../../tools/definition";

/** Monthly allowance of plan credits (form B); no rollover. */
export const planAllowance: Record<Exclude<Plan, "payg">, number> = {
  solo: 300,
  starter: 4000,
  pro: 9000,
  scale: 20000,
};

/** Plans whose keys may call the REST API. */
export const restApiPlans: readonly Plan[] = ["payg", "pro", "scale"];

const rateOf = (plan: Plan, tool: ToolName): Rate => tools[tool].rates[plan === "payg" ? "payg" : "plans"];

export function costOf(plan: Plan, tool: ToolName, quantity: BillingQuantity): number {
  const rate = rateOf(plan, tool);
  switch (rate.per) {
    case "free":
      return 0;
    case "call":
      return rate.credits;
    case "minute": {
      if (!("durationMs" in quantity)) throw new Error(`${tool} is billed per minute`);
      const perMinute = quantity.clone && rate.clone ? rate.clone : rate.credits;
      // Integer arithmetic: ceil(rate * ms / 60000) without floating-point drift.
      return Math.max(1, Math.ceil((perMinute * quantity.durationMs) / 60_000));
    }
    case "1000chars": {
      if (!("characters" in quantity)) throw new Error(`${tool} is billed per character`);
      const per1000 = quantity.clone ? rate.clone : rate.credits;
      return Math.max(1, Math.ceil((per1000 * quantity.characters) / 1000));
    }
  }
}

/** A human-readable price line per tool and form, for the OpenAPI description. */
export function describePrices(): string {
  const line = (tool: ToolName, r: Rate) =>
    r.per === "free"
      ? `${tool}: free`
      : r.per === "call"
        ? `${tool}: ${r.credits} credits per call`
        : r.per === "minute"
          ? `${tool}: ${r.credits} credits per minute${r.clone ? ` (${r.clone} with a cloned voice)` : ""}`
          : `${tool}: ${r.credits} credits per 1000 characters (${r.clone} with a cloned voice)`;
  return [
    "Form A (plan `payg`, default): " + toolNames.map((t) => line(t, rateOf("payg", t))).join("; ") + ".",
    "Form B (plans solo, starter, pro, scale): " + toolNames.map((t) => line(t, rateOf("solo", t))).join("; ") + ".",
  ].join("\n\n");
}

/** A rate in words for an assistant ("3 credits per call", "5 credits per minute, pro rata (...)"). */
export function rateText(rate: Rate): string {
  return rate.per === "free"
    ? "free"
    : rate.per === "call"
      ? `${rate.credits} credits per call`
      : rate.per === "minute"
        ? `${rate.credits} credits per minute, pro rata (max(1, ceil(${rate.credits} x seconds / 60)))${rate.clone ? ` (${rate.clone} a minute with the cloned voice)` : ""}`
        : `${rate.credits} credits per 1000 characters (${rate.clone} with the cloned voice)`;
}

const listed = (items: string[]) =>
  items.length <= 1 ? items.join("") : `${items.slice(0, -1).join(", ")} and ${items.at(-1)}`;

/**
 * What monthly plans change, for the billing page: the tools they make free and the prices they
 * change ("On plans, extract-audio, convert, ... are free; text-to-speech costs 15 credits per
 * 1,000 characters and voice-change 25 per minute.").
 */
export function plansDifferences(): string {
  const free = toolNames.filter((tool) => tools[tool].rates.plans.per === "free");
  const changed = toolNames.filter((tool) => {
    const { payg, plans } = tools[tool].rates;
    return plans.per !== "free" && (plans.per !== payg.per || ("credits" in payg && plans.credits !== payg.credits));
  });
  const unit = (rate: Rate) => (rate.per === "minute" ? "minute" : rate.per === "call" ? "call" : "1,000 characters");
  const prices = changed.map((tool, index) => {
    const rate = tools[tool].rates.plans as Exclude<Rate, { per: "free" }>;
    return index === 0
      ? `${tool} costs ${rate.credits} credits per ${unit(rate)}`
      : `${tool} ${rate.credits} per ${unit(rate)}`;
  });
  return `On plans, ${listed(free)} ${free.length === 1 ? "is" : "are"} free${prices.length > 0 ? `; ${listed(prices)}` : ""}.`;
}
