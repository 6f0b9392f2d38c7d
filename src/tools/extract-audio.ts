import * as z from "zod";
import "../lib/zod-openapi";
import { buildExtractAudioCommand } from "../media/commands/extract-audio";
import { defineTool } from "./definition";
import { mediaKinds, singleInput, totalMs, uploadId, sameMedia } from "./fields";

export const ExtractAudioParams = z
  .object({ uploadId, format: z.enum(["mp3", "wav", "aac"]).default("mp3") })
  .openapi("ExtractAudioRequest");
export type ExtractAudioInput = z.output<typeof ExtractAudioParams>;

export const extractAudio = defineTool({
  summary: "Extract the audio track as mp3, wav or aac",
  guidance: "Use it when the user wants only the sound of a video.",
  params: ExtractAudioParams,
  rates: { payg: { per: "call", credits: 3 }, plans: { per: "free" } },
  inputs: (p) => singleInput(p.uploadId, mediaKinds, true),
  quantity: (_p, u) => ({ durationMs: totalMs(u) }),
  produces: (p, [input]) =>
    sameMedia(input, {
      kind: "audio",
      hasVideo: false,
      container: p.format,
      width: undefined,
      height: undefined,
      frameRate: undefined,
    }),
  workFactor: 0.05,
  build: (p, inputs) => buildExtractAudioCommand(p, inputs),
});
