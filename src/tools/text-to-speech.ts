import * as z from "zod";
import "../lib/zod-openapi";
import { guessTextLanguage } from "../media/text-language";
import { requireClone } from "./checks";
import { defineTool } from "./definition";
import { voice } from "./fields";

/** What the speech engines read aloud (backend/src/speech/engines.ts keeps sentences holding one). */
const SPEAKABLE = /[\p{L}\p{N}]/u;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export const TextToSpeechParams = z
  .object({
    text: z
      .string()
      .min(1)
      .refine((t) => t.trim().length > 0, "must not be empty")
      // A lone UTF-16 surrogate ("\ud800" in JSON) is no character to speak or to count.
      .refine((t) => !LONE_SURROGATE.test(t), "must be valid Unicode text (it holds a lone surrogate)")
      .refine((t) => [...t].length <= 100_000, "must be at most 100000 characters")
      // The engines speak letters and digits; emoji or punctuation alone used to be charged, then failed and refunded.
      .refine(
        (t) => t.trim().length === 0 || SPEAKABLE.test(t),
        "has nothing to speak: it needs at least one letter or digit",
      )
      // Counted in Unicode characters (code points), as JSON Schema's maxLength counts; zod's max would count UTF-16 units.
      .openapi({
        maxLength: 100_000,
        description: "1 to 100000 characters (Unicode code points), at least one letter or digit; billed per character",
      }),
    voice,
  })
  .openapi("TextToSpeechRequest");
export type TextToSpeechInput = z.output<typeof TextToSpeechParams>;

export const textToSpeech = defineTool({
  summary: "Generate a .wav file from text",
  guidance: "Use it to turn text into spoken audio (.wav).",
  params: TextToSpeechParams,
  rates: { payg: { per: "1000chars", credits: 5, clone: 40 }, plans: { per: "1000chars", credits: 15, clone: 40 } },
  inputs: () => [],
  quantity: (p) => ({ characters: [...p.text].length, clone: p.voice === "clone" }),
  check: (p, _u, context) => requireClone(p.voice, context),
  workFactor: 0.5,
  // The contract's text-to-speech takes no language: it is guessed from the text (French when nothing tells).
  speech: (p) => ({
    kind: "tts",
    text: p.text,
    voice: p.voice,
    language: guessTextLanguage(p.text),
    result: { filename: "speech.wav", contentType: "audio/wav" },
  }),
});
