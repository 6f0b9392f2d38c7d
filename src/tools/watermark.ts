import * as z from "zod";
import "../lib/zod-openapi";
import { buildWatermarkCommand } from "../media/commands/watermark";
import { defineTool } from "./definition";
import { singleInput, uploadId, videoOnly, sameMedia } from "./fields";

export const WatermarkParams = z
  .object({
    uploadId,
    watermarkUploadId: uploadId
      .optional()
      .openapi({ description: "uploadId of an image (png, jpeg, webp); wins over watermarkText" }),
    watermarkText: z
      .string()
      .min(1)
      .max(200)
      .refine((t) => t.trim().length > 0, "must not be empty")
      .optional()
      .openapi({ description: "Required when watermarkUploadId is absent" }),
    type: z
      .enum(["fixe", "flottant"])
      .default("fixe")
      .openapi({ description: "`fixe` tiles the mark; `flottant` moves one mark every `interval` seconds" }),
    opacity: z.int().min(10).max(100).default(80),
    interval: z
      .literal([3, 5, 8])
      .default(5)
      .openapi({
        type: "integer",
        enum: [3, 5, 8],
        default: 5,
        description: "Seconds between positions; flottant only",
      }),
  })
  .refine((p) => p.watermarkUploadId !== undefined || p.watermarkText !== undefined, {
    message: "Required when watermarkUploadId is absent",
    path: ["watermarkText"],
  })
  .openapi("WatermarkRequest");
export type WatermarkInput = z.output<typeof WatermarkParams>;

export const watermark = defineTool({
  summary: "Add an image or text watermark, tiled (fixe) or moving (flottant)",
  guidance: "Use it to put a logo (an uploaded image) or a text mark on a video.",
  params: WatermarkParams,
  rates: { payg: { per: "minute", credits: 5 }, plans: { per: "free" } },
  inputs: (p) => [
    ...singleInput(p.uploadId, videoOnly),
    ...(p.watermarkUploadId
      ? [{ field: "watermarkUploadId", uploadId: p.watermarkUploadId, accepts: ["image" as const] }]
      : []),
  ],
  // The mark image has no duration; only the video is billed.
  quantity: (_p, u) => ({ durationMs: u[0].durationMs }),
  produces: (_p, [video]) => sameMedia(video, { container: "mp4" }),
  workFactor: 0.6,
  build: (p, inputs) => buildWatermarkCommand(p, inputs),
});
