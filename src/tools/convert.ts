import * as z from "zod";
import "../lib/zod-openapi";
import { buildConvertCommand } from "../media/commands/convert";
import { defineTool } from "./definition";
import { mediaKinds, singleInput, totalMs, uploadId, sameMedia } from "./fields";

export const ConvertParams = z
  .object({ uploadId, format: z.enum(["mp4", "webm", "mov", "avi", "mkv"]).default("mp4") })
  .openapi("ConvertRequest");
export type ConvertInput = z.output<typeof ConvertParams>;

export const convert = defineTool({
  summary: "Convert to mp4, webm, mov, avi or mkv",
  guidance: "Use it to change the container or format (mp4, webm, mov, avi, mkv).",
  params: ConvertParams,
  rates: { payg: { per: "minute", credits: 5 }, plans: { per: "free" } },
  inputs: (p) => singleInput(p.uploadId, mediaKinds),
  quantity: (_p, u) => ({ durationMs: totalMs(u) }),
  produces: (p, [input]) => sameMedia(input, { container: p.format }),
  workFactor: 0.5,
  build: (p, inputs, { testMode }) => buildConvertCommand(p, inputs, { reencodeVideo: testMode }),
});
