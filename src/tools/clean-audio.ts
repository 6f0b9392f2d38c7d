import * as z from "zod";
import "../lib/zod-openapi";
import { buildCleanAudioCommand } from "../media/commands/clean-audio";
import { defineTool } from "./definition";
import { mediaKinds, singleInput, totalMs, uploadId, sameMedia } from "./fields";

export const CleanAudioParams = z.object({ uploadId }).openapi("CleanAudioRequest");
export type CleanAudioInput = z.output<typeof CleanAudioParams>;

export const cleanAudio = defineTool({
  summary: "Remove background noise and improve the voice",
  guidance: "Use it when a recording has background noise or a weak voice.",
  params: CleanAudioParams,
  rates: { payg: { per: "minute", credits: 10 }, plans: { per: "minute", credits: 10 } },
  inputs: (p) => singleInput(p.uploadId, mediaKinds, true),
  quantity: (_p, u) => ({ durationMs: totalMs(u) }),
  produces: (_p, [input]) => sameMedia(input),
  workFactor: 0.3,
  build: (p, inputs, { testMode }) => buildCleanAudioCommand(p, inputs, { reencodeVideo: testMode }),
});
