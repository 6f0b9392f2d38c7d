/// <reference types="vite/client" />
/**
 * The tool definition (src/tools/) is the only source of a tool's price: the connector's
 * descriptions, the OpenAPI description and the billing page generate their prose from the rates.
 * This walks the registry and fails when hand-written text elsewhere in src/ states a tool's price:
 *
 * - a line naming a tool (`trim`, `text-to-speech` or `text_to_speech`, as a whole word) and one of
 *   its rates' numbers as a price: the number followed by " credit" or " per " ("15 credits per
 *   1,000", "25 per minute");
 * - a line naming a tool that monthly plans make free together with "free" and "plan" (a
 *   hand-written list of the free tools).
 *
 * src/tools/ (the definitions) and src/services/billing/pricing.ts (the generators) are the
 * source, so they are not searched.
 */
import { describe, expect, it } from "vitest";
import { toolNames, tools, type ToolName } from "../../src/tools";

const sources = import.meta.glob(
  ["../../src/**/*.ts", "../../src/**/*.tsx", "!../../src/tools/**", "!../../src/services/billing/pricing.ts"],
  { query: "?raw", import: "default", eager: true },
) as Record<string, string>;

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const namePattern = (tool: ToolName) =>
  new RegExp(`(?<![\\w-])(${escape(tool)}|${escape(tool.replace(/-/g, "_"))})(?![\\w-])`);

function pricesOf(tool: ToolName): number[] {
  const numbers = new Set<number>();
  for (const rate of Object.values(tools[tool].rates)) {
    if ("credits" in rate) numbers.add(rate.credits);
    if ("clone" in rate && rate.clone) numbers.add(rate.clone);
  }
  return [...numbers];
}

/** Each hand-written statement of a registry price in `text`, as "file:line: tool". */
export function handWrittenPrices(files: Record<string, string>): string[] {
  const found: string[] = [];
  for (const [file, text] of Object.entries(files)) {
    text.split("\n").forEach((line, index) => {
      for (const tool of toolNames) {
        if (!namePattern(tool).test(line)) continue;
        const price = pricesOf(tool).find((n) => new RegExp(`(?<![\\d.,])${n} (credit|per )`).test(line));
        if (price !== undefined) found.push(`${file}:${index + 1}: ${tool} at ${price}`);
        if (tools[tool].rates.plans.per === "free" && /\bfree\b/i.test(line) && /\bplans?\b/i.test(line))
          found.push(`${file}:${index + 1}: ${tool} free on plans`);
      }
    });
  }
  return found;
}

describe("prices come from the tool definitions", () => {
  it("reads the sources", () => {
    expect(Object.keys(sources).length).toBeGreaterThan(50);
    expect(Object.keys(sources).some((file) => file.includes("/src/tools/"))).toBe(false);
  });

  it("finds a tool's price written by hand (the check itself)", () => {
    expect(
      handWrittenPrices({
        "a.tsx": "On plans, convert, trim and merge are free; text-to-speech costs 15 credits per 1,000 characters.",
      }),
    ).toEqual([
      "a.tsx:1: convert free on plans",
      "a.tsx:1: merge free on plans",
      "a.tsx:1: trim free on plans",
      "a.tsx:1: text-to-speech at 15",
    ]);
    expect(handWrittenPrices({ "b.ts": "voice_change: 25 per minute" })).toEqual(["b.ts:1: voice-change at 25"]);
    // No price, or a number that is no price of the tool named: no alarm.
    expect(
      handWrittenPrices({
        "c.ts": "trim keeps 3 s of the video; merge takes up to 20 inputs; 1 credit per call is the minimum",
      }),
    ).toEqual([]);
  });

  it("states no tool's price by hand anywhere else in src/", () => {
    expect(handWrittenPrices(sources)).toEqual([]);
  });
});
