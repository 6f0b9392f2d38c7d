/**
 * The tool registry. A new tool is one file exporting its definition (definition.ts) plus one
 * line here; pricing, REST routes, the OpenAPI document, job creation and execution read it.
 */
import type * as z from "zod";
import { cleanAudio } from "./clean-audio";
import { convert } from "./convert";
import type { ToolDefinition } from "./definition";
import { extractAudio } from "./extract-audio";
import { merge } from "./merge";
import { subtitles } from "./subtitles";
import { textToSpeech } from "./text-to-speech";
import { transcribe } from "./transcribe";
import { trim } from "./trim";
import { voiceChange } from "./voice-change";
import { watermark } from "./watermark";

export const tools = {
  subtitles,
  transcribe,
  "clean-audio": cleanAudio,
  "extract-audio": extractAudio,
  convert,
  merge,
  watermark,
  trim,
  "text-to-speech": textToSpeech,
  "voice-change": voiceChange,
} as const;

export type ToolName = keyof typeof tools;
export const toolNames = Object.keys(tools) as ToolName[];
export const isToolName = (value: unknown): value is ToolName => typeof value === "string" && value in tools;

/** Validated parameters of each tool, defaults applied. */
export type ToolParams = { [K in ToolName]: z.output<(typeof tools)[K]["params"]> };

/** One tool's definition with its parameter type (for code generic over the tool name). */
export type ToolDefinitionOf<K extends ToolName> = ToolDefinition<z.ZodType<ToolParams[K]>>;

/**
 * The definition of a tool chosen at run time (a job row's `tool`). Its parameters must come
 * from `params.parse`, which makes the correlated types of the union sound.
 */
export function toolDefinition(name: ToolName): ToolDefinition<z.ZodType<unknown>> {
  return tools[name] as unknown as ToolDefinition<z.ZodType<unknown>>;
}

/** Estimated processing time in whole seconds, at least 1; never used for billing. */
export function estimateSeconds(tool: ToolName, quantity: { durationMs: number } | { characters: number }): number {
  const factor = tools[tool].workFactor;
  const units = "durationMs" in quantity ? quantity.durationMs / 1000 : quantity.characters / 100;
  return Math.max(1, Math.ceil(2 + units * factor));
}
