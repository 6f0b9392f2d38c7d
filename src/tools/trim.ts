import { z } from "@hono/zod-openapi";
import { invalidRequest } from "../errors";
import { buildTrimCommand } from "../media/tools/trim";
import { defineTool } from "./definition";
import { mediaKinds, singleInput, uploadId } from "./fields";

export const TrimParams = z
  .object({
    uploadId,
    start: z.number().min(0).openapi({ description: "Seconds, at least 0" }),
    end: z.number().openapi({ description: "Seconds, greater than start and at most the media duration" }),
  })
  .refine((p) => p.end > p.start, { message: "must be greater than start", path: ["end"] })
  .openapi("TrimRequest");
export type TrimInput = z.output<typeof TrimParams>;

export const trim = defineTool({
  summary: "Extract the segment from start to end (seconds)",
  params: TrimParams,
  rates: { payg: { per: "minute", credits: 3 }, plans: { per: "free" } },
  inputs: (p) => singleInput(p.uploadId, mediaKinds),
  // Billed on the output segment, not the source.
  quantity: (p) => ({ durationMs: Math.round((p.end - p.start) * 1000) }),
  check: (p, [upload]) => {
    // In whole milliseconds, as durationSeconds is reported: 2.007 * 1000 is 2007.0000000000002.
    if (Math.round(p.end * 1000) > upload.durationMs) throw invalidRequest(`end: must not exceed the media duration (${upload.durationMs / 1000} s).`);
  },
  workFactor: 0.3,
  build: (p, inputs) => buildTrimCommand(p, inputs),
});
