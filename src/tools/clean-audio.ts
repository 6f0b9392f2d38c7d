import * as z from "zod";
import "../lib/zod-openapi";
import { buildCleanAudioCommand } from "../media/commands/clean-audio";
import { defineTool } from "./definition";
import { mediaKinds, singleInput, totalMs, uploadId, sameMedia } from "./fields";

/**
 * The loudness target, both optional (a call without them is v1's: -16 LUFS, -1.5 dBTP). Bounds:
 * -31 LUFS (under it a voice sinks into a quiet room's noise; broadcast's quietest common target is
 * -27, ATSC A/85 -24, EBU R128 -23) to -10 (louder needs limiting beyond what a voice takes), and a
 * true peak from -9 dBTP (loudnorm's floor) to 0.
 */
export const CleanAudioParams = z
  .object({
    uploadId,
    targetLufs: z.number().min(-31).max(-10).optional().openapi({
      default: -16,
      example: -23,
      description:
        "Integrated loudness of the result, LUFS (EBU R128): -23 for broadcast (EBU R128), -16 for podcasts and spoken content (the default), -14 for streaming platforms",
    }),
    truePeak: z.number().min(-9).max(0).optional().openapi({
      default: -1.5,
      example: -1,
      description:
        "Highest true peak of the result, dBTP: -1 for EBU R128 and most platforms, -1.5 (the default) leaves room for lossy encoding, -2 for some podcast hosts",
    }),
    removeSilence: z
      .union([
        z.boolean(),
        z
          .object({
            thresholdDb: z.number().min(-70).max(-20).optional().openapi({
              default: -45,
              description:
                "Level under which the cleaned audio counts as a pause, dBFS (the noise is gone by then, so a pause sits far under it)",
            }),
            minPauseSeconds: z.number().min(0.3).max(30).optional().openapi({
              default: 1,
              description: "Shortest pause that is shortened, seconds",
            }),
            keepSeconds: z.number().min(0).max(2).optional().openapi({
              default: 0.3,
              description:
                "What is left of each shortened pause, seconds: half before the next word, half after the last",
            }),
          })
          .openapi("RemoveSilence"),
      ])
      .optional()
      .openapi({
        description:
          "Shorten the pauses: true (the defaults) or the settings. A video is cut with its sound (re-encoded, in sync). The job's result lists the cuts; the price stays on the input's duration",
      }),
  })
  .openapi("CleanAudioRequest");
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
