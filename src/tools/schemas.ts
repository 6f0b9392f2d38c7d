/**
 * Request bodies of the ten tools, exactly as the contract defines them (fields, defaults,
 * enums, ranges). Types are strict: "4" is not 4. Unknown fields are ignored. These schemas
 * validate REST bodies, generate the OpenAPI document and will validate connector calls.
 */
import { z } from "@hono/zod-openapi";

const uploadId = z.string().min(1).openapi({ description: "uploadId returned by POST /api/v1/uploads", example: "upl_01JD3Y0QZ8W1T0X7M4R2N6C9PB" });
const hexColor = (fallback: string, description: string) =>
  z
    .string()
    .regex(/^#[0-9A-Fa-f]{6}$/, "must be a colour #RRGGBB")
    .default(fallback)
    .openapi({ description, example: fallback });
const percent = (fallback: number, description: string) => z.number().min(0).max(100).default(fallback).openapi({ description });
const voice = z.enum(["lea", "camille", "thomas", "gilles", "clone"]).default("lea").openapi({
  description: "Catalogue voice, or `clone` for the account's cloned voice (400 when none is registered)",
});

export const SubtitlesParams = z
  .object({
    uploadId,
    style: z.enum(["classique", "impact", "contour"]).default("classique"),
    color: hexColor("#FFFFFF", "Text colour"),
    effectColor: hexColor("#000000", "Shadow (classique), box (impact) or outline (contour) colour"),
    position: z.number().min(0).max(100).default(82).openapi({ description: "Vertical position: 0 = top, 100 = bottom" }),
    size: z.enum(["petite", "normale", "grande"]).default("normale"),
    captionWords: z.union([z.literal(1), z.literal(2), z.literal(4)]).default(4).openapi({ description: "Words per automatic caption" }),
    srtContent: z.string().optional().openapi({ description: "SRT used as is instead of automatic transcription; malformed SRT is a 400" }),
    fontId: z.enum(["inter", "montserrat", "poppins", "fredoka", "archivo-black", "anton"]).default("inter"),
    karaokeMode: z.enum(["none", "couleur", "taille", "halo"]).default("none"),
    highlightColor: hexColor("#FFD166", "Colour of the spoken word in karaoke modes"),
    shadowIntensity: percent(60, "0-100, style classique only (validated, ignored otherwise)"),
    contourThickness: percent(50, "0-100, style contour only (validated, ignored otherwise)"),
    boxOpacity: percent(75, "0-100, style impact only (validated, ignored otherwise)"),
  })
  .openapi("SubtitlesRequest");

export const TranscribeParams = z
  .object({
    uploadId,
    language: z
      .string()
      .regex(/^([a-z]{2}|auto)$/, "must be an ISO 639-1 code or auto")
      .default("auto")
      .openapi({ description: "ISO 639-1 code or `auto`" }),
    format: z.enum(["txt", "srt"]).default("txt"),
    srtSplitMode: z.enum(["phrase", "mot"]).default("phrase").openapi({ description: "Only with format srt (validated, ignored otherwise)" }),
  })
  .openapi("TranscribeRequest");

export const CleanAudioParams = z.object({ uploadId }).openapi("CleanAudioRequest");

export const ExtractAudioParams = z
  .object({ uploadId, format: z.enum(["mp3", "wav", "aac"]).default("mp3") })
  .openapi("ExtractAudioRequest");

export const ConvertParams = z
  .object({ uploadId, format: z.enum(["mp4", "webm", "mov", "avi", "mkv"]).default("mp4") })
  .openapi("ConvertRequest");

export const MergeParams = z
  .object({
    uploadIds: z.array(uploadId).min(2).max(20).openapi({ description: "2 to 20 video uploadIds in merge order; repeats allowed" }),
  })
  .openapi("MergeRequest");

export const WatermarkParams = z
  .object({
    uploadId,
    watermarkUploadId: uploadId.optional().openapi({ description: "uploadId of an image (png, jpeg, webp); wins over watermarkText" }),
    watermarkText: z.string().min(1).max(200).optional().openapi({ description: "Required when watermarkUploadId is absent" }),
    type: z.enum(["fixe", "flottant"]).default("fixe").openapi({ description: "`fixe` tiles the mark; `flottant` moves one mark every `interval` seconds" }),
    opacity: z.int().min(10).max(100).default(80),
    interval: z.union([z.literal(3), z.literal(5), z.literal(8)]).default(5).openapi({ description: "Seconds between positions; flottant only" }),
  })
  .refine((p) => p.watermarkUploadId !== undefined || p.watermarkText !== undefined, {
    message: "Required when watermarkUploadId is absent",
    path: ["watermarkText"],
  })
  .openapi("WatermarkRequest");

export const TrimParams = z
  .object({
    uploadId,
    start: z.number().min(0).openapi({ description: "Seconds, at least 0" }),
    end: z.number().openapi({ description: "Seconds, greater than start and at most the media duration" }),
  })
  .refine((p) => p.end > p.start, { message: "must be greater than start", path: ["end"] })
  .openapi("TrimRequest");

export const TextToSpeechParams = z
  .object({
    text: z
      .string()
      .min(1)
      .refine((t) => t.trim().length > 0, "must not be empty")
      .refine((t) => [...t].length <= 100_000, "must be at most 100000 characters"),
    voice,
  })
  .openapi("TextToSpeechRequest");

export const VoiceChangeParams = z
  .object({
    uploadId,
    voice,
    language: z.string().regex(/^[a-z]{2}$/, "must be an ISO 639-1 code").default("fr"),
  })
  .openapi("VoiceChangeRequest");

export const toolParams = {
  subtitles: SubtitlesParams,
  transcribe: TranscribeParams,
  "clean-audio": CleanAudioParams,
  "extract-audio": ExtractAudioParams,
  convert: ConvertParams,
  merge: MergeParams,
  watermark: WatermarkParams,
  trim: TrimParams,
  "text-to-speech": TextToSpeechParams,
  "voice-change": VoiceChangeParams,
} as const;

export type ToolParams = { [K in keyof typeof toolParams]: z.infer<(typeof toolParams)[K]> };
