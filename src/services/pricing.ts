/**
 * Credit costs of the ten tools under the two published pricing forms. Form A (`payg`) is the
 * endpoint table of the contract; form B (monthly plans) makes the light tools free and
 * prices speech differently. All costs are whole credits rounded up, at least 1 unless free.
 */
export const plans = ["payg", "solo", "starter", "pro", "scale"] as const;
export type Plan = (typeof plans)[number];

export const toolNames = [
  "subtitles",
  "transcribe",
  "clean-audio",
  "extract-audio",
  "convert",
  "merge",
  "watermark",
  "trim",
  "text-to-speech",
  "voice-change",
] as const;
export type ToolName = (typeof toolNames)[number];

/** Monthly allowance of plan credits (form B); no rollover. */
export const planAllowance: Record<Exclude<Plan, "payg">, number> = {
  solo: 300,
  starter: 4000,
  pro: 9000,
  scale: 20000,
};

/** Plans whose keys may call the REST API. */
export const restApiPlans: readonly Plan[] = ["payg", "pro", "scale"];

type Rate =
  | { per: "minute"; credits: number; clone?: number }
  | { per: "call"; credits: number }
  | { per: "1000chars"; credits: number; clone: number }
  | { per: "free" };

const formA: Record<ToolName, Rate> = {
  subtitles: { per: "minute", credits: 20 },
  transcribe: { per: "minute", credits: 15 },
  "clean-audio": { per: "minute", credits: 10 },
  "extract-audio": { per: "call", credits: 3 },
  convert: { per: "minute", credits: 5 },
  merge: { per: "minute", credits: 5 },
  watermark: { per: "minute", credits: 5 },
  trim: { per: "minute", credits: 3 },
  "text-to-speech": { per: "1000chars", credits: 5, clone: 40 },
  "voice-change": { per: "minute", credits: 15, clone: 60 },
};

const formB: Record<ToolName, Rate> = {
  ...formA,
  "extract-audio": { per: "free" },
  convert: { per: "free" },
  merge: { per: "free" },
  watermark: { per: "free" },
  trim: { per: "free" },
  "text-to-speech": { per: "1000chars", credits: 15, clone: 40 },
  "voice-change": { per: "minute", credits: 25, clone: 60 },
};

/** What a call is billed on: milliseconds of media, or characters of text. */
export type BillingQuantity = { durationMs: number; clone?: boolean } | { characters: number; clone?: boolean };

export function costOf(plan: Plan, tool: ToolName, quantity: BillingQuantity): number {
  const rate = (plan === "payg" ? formA : formB)[tool];
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
    "Form A (plan `payg`, default): " + toolNames.map((t) => line(t, formA[t])).join("; ") + ".",
    "Form B (plans solo, starter, pro, scale): " + toolNames.map((t) => line(t, formB[t])).join("; ") + ".",
  ].join("\n\n");
}
