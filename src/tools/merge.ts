import * as z from "zod";
import "../lib/zod-openapi";
import { buildMergeCommand } from "../media/commands/merge";
import { defineTool } from "./definition";
import { totalMs, uploadId, videoOnly, sameMedia } from "./fields";

export const MergeParams = z
  .object({
    uploadIds: z
      .array(uploadId)
      .min(2)
      .max(20)
      .openapi({ description: "2 to 20 video uploadIds in merge order; repeats allowed" }),
  })
  .openapi("MergeRequest");
export type MergeInput = z.output<typeof MergeParams>;

export const merge = defineTool({
  summary: "Merge 2 to 20 videos in the given order",
  guidance: "Use it to join several videos, in order, into one.",
  billedOn: "The seconds billed are the inputs' durations added up.",
  params: MergeParams,
  rates: { payg: { per: "minute", credits: 5 }, plans: { per: "free" } },
  inputs: (p) => p.uploadIds.map((id, i) => ({ field: `uploadIds.${i}`, uploadId: id, accepts: videoOnly })),
  quantity: (_p, u) => ({ durationMs: totalMs(u) }),
  produces: (_p, u) =>
    sameMedia(u[0], {
      kind: "video",
      durationMs: totalMs(u),
      hasAudio: u.some((x) => x.probe.hasAudio),
      container: "mp4",
    }),
  workFactor: 0.6,
  build: (p, inputs) => buildMergeCommand(p, inputs),
});
