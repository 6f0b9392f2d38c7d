import { describe, expect, it } from "vitest";
import { costOf } from "../../src/services/billing/pricing";

describe("costs, form A (payg)", () => {
  it.each([
    ["subtitles", 60_000, 20],
    ["subtitles", 60_001, 21],
    ["subtitles", 1, 1],
    ["transcribe", 61_000, 16],
    ["clean-audio", 30_000, 5],
    ["convert", 2_500, 1],
    ["convert", 61_000, 6],
    ["merge", 120_000, 10],
    ["watermark", 12_000, 1],
    ["trim", 20_000, 1],
    ["trim", 20_001, 2],
    ["voice-change", 60_000, 15],
  ] as const)("%s for %i ms costs %i", (tool, durationMs, expected) => {
    expect(costOf("payg", tool, { durationMs })).toBe(expected);
  });

  it("prices extract-audio per call and text-to-speech per 1000 code points", () => {
    expect(costOf("payg", "extract-audio", { durationMs: 3_600_000 })).toBe(3);
    expect(costOf("payg", "text-to-speech", { characters: 1 })).toBe(1);
    expect(costOf("payg", "text-to-speech", { characters: 1000 })).toBe(5);
    expect(costOf("payg", "text-to-speech", { characters: 1001 })).toBe(6);
    expect(costOf("payg", "text-to-speech", { characters: 1000, clone: true })).toBe(40);
    expect(costOf("payg", "voice-change", { durationMs: 60_000, clone: true })).toBe(60);
  });
});

describe("costs, form B (monthly plans)", () => {
  it("makes the light tools free", () => {
    for (const tool of ["convert", "trim", "merge", "watermark", "extract-audio"] as const) {
      expect(costOf("pro", tool, { durationMs: 600_000 })).toBe(0);
    }
  });

  it("prices speech differently and keeps the others", () => {
    expect(costOf("scale", "text-to-speech", { characters: 1000 })).toBe(15);
    expect(costOf("scale", "text-to-speech", { characters: 1 })).toBe(1);
    expect(costOf("scale", "text-to-speech", { characters: 2000, clone: true })).toBe(80);
    expect(costOf("pro", "voice-change", { durationMs: 60_000 })).toBe(25);
    expect(costOf("pro", "voice-change", { durationMs: 60_000, clone: true })).toBe(60);
    expect(costOf("pro", "subtitles", { durationMs: 90_000 })).toBe(30);
    expect(costOf("pro", "transcribe", { durationMs: 60_000 })).toBe(15);
    expect(costOf("pro", "clean-audio", { durationMs: 60_000 })).toBe(10);
  });
});
