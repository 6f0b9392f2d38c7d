import * as z from "zod";
import "../lib/zod-openapi";
import { invalidRequest } from "../errors";
import { buildTrimCommand } from "../media/commands/trim";
import { defineTool } from "./definition";
import { mediaKinds, singleInput, uploadId, sameMedia } from "./fields";

export const TrimParams = z
  .object({
    uploadId,
    start: z.number().min(0).openapi({ description: "Seconds, at least 0" }),
    end: z.number().openapi({ description: "Seconds, greater than start and at most the media duration" }),
  })
  .refine((p) => p.end > p.start, { message: "must be greater than start", path: ["end"] })
  .openapi("TrimRequest");
export type TrimInput = z.output<typeof TrimParams>;

/**
 * Seconds to milliseconds, rid of binary floating-point noise but not of real fractions:
 * 2.007 s is 2007 ms (not 2007.0000000000002), 20.1 - 0.1 s is 20000 ms, and 20.0004 s stays
 * 20000.4 ms, so it bills a second minute and is past a 20 s duration.
 */
function exactMs(seconds: number): number {
  return Math.round(seconds * 1_000_000) / 1000;
}

export const trim = defineTool({
  summary: "Extract the segment from start to end (seconds)",
  guidance: "Use it to keep only a part of a video or audio file.",
  billedOn: "The seconds billed are those kept (end - start).",
  params: TrimParams,
  rates: { payg: { per: "minute", credits: 3 }, plans: { per: "free" } },
  inputs: (p) => singleInput(p.uploadId, mediaKinds),
  // Billed on the output segment, not the source.
  quantity: (p) => ({ durationMs: exactMs(p.end - p.start) }),
  check: (p, [upload]) => {
    if (exactMs(p.end) > upload.durationMs)
      throw invalidRequest(`end: must not exceed the media duration (${upload.durationMs / 1000} s).`);
  },
  produces: (p, [input]) => sameMedia(input, { durationMs: exactMs(p.end - p.start) }),
  workFactor: 0.3,
  build: (p, inputs) => buildTrimCommand(p, inputs),
});
