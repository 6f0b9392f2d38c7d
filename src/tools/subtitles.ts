import * as z from "zod";
import "../lib/zod-openapi";
import { JobFailure } from "../errors";
import { buildAss } from "../media/ass";
import { cuesFromSrt, cuesFromWords } from "../media/captions";
import { buildSubtitlesCommand } from "../media/commands/subtitles";
import { checkSrt, checkTranscriptionAvailable } from "./checks";
import { defineTool } from "./definition";
import { hexColor, percent, singleInput, totalMs, uploadId, videoOnly, sameMedia } from "./fields";

export const SubtitlesParams = z
  .object({
    uploadId,
    style: z.enum(["classique", "impact", "contour"]).default("classique"),
    color: hexColor("#FFFFFF", "Text colour"),
    effectColor: hexColor("#000000", "Shadow (classique), box (impact) or outline (contour) colour"),
    position: z
      .number()
      .min(0)
      .max(100)
      .default(82)
      .openapi({ description: "Vertical position: 0 = top, 100 = bottom" }),
    size: z.enum(["petite", "normale", "grande"]).default("normale"),
    captionWords: z
      .literal([1, 2, 4])
      .default(4)
      .openapi({ type: "integer", enum: [1, 2, 4], default: 4, description: "Words per automatic caption" }),
    srtContent: z.string().max(2_000_000).optional().openapi({
      description:
        "SRT used as is instead of automatic transcription (at most 2,000,000 characters; a 4-hour video's takes about 400,000); malformed SRT is a 400, and so is one whose karaoke would show more than 8,000,000 characters (each cue once per word)",
    }),
    fontId: z.enum(["inter", "montserrat", "poppins", "fredoka", "archivo-black", "anton"]).default("inter"),
    karaokeMode: z.enum(["none", "couleur", "taille", "halo"]).default("none"),
    highlightColor: hexColor("#FFD166", "Colour of the spoken word in karaoke modes"),
    shadowIntensity: percent(60, "0-100, style classique only (validated, ignored otherwise)"),
    contourThickness: percent(50, "0-100, style contour only (validated, ignored otherwise)"),
    boxOpacity: percent(75, "0-100, style impact only (validated, ignored otherwise)"),
  })
  .openapi("SubtitlesRequest");
export type SubtitlesInput = z.output<typeof SubtitlesParams>;

export const subtitles = defineTool({
  summary: "Burn styled subtitles into a video (automatic transcription or srtContent)",
  guidance: "Use it to burn captions into a video, from an SRT the user gives or from automatic transcription.",
  params: SubtitlesParams,
  rates: { payg: { per: "minute", credits: 20 }, plans: { per: "minute", credits: 20 } },
  // Automatic captions come from the speech: a video without sound needs srtContent.
  inputs: (p) => singleInput(p.uploadId, videoOnly, p.srtContent === undefined),
  quantity: (_p, u) => ({ durationMs: totalMs(u) }),
  check: (p, _u, context) =>
    p.srtContent === undefined
      ? checkTranscriptionAvailable(context, "srtContent")
      : checkSrt(p.srtContent, p.karaokeMode !== "none"),
  produces: (_p, [video]) => sameMedia(video, { kind: "video", container: "mp4" }),
  workFactor: 1.2,
  // Without srtContent the captions come from a transcription stage first.
  speech: (p) => (p.srtContent === undefined ? { kind: "transcribe", language: "auto" } : undefined),
  async build(p, inputs, { transcript }) {
    const cues =
      p.srtContent !== undefined
        ? await cuesFromSrt(p.srtContent)
        : transcript
          ? cuesFromWords(transcript.words, p.captionWords)
          : undefined;
    if (!cues) throw new JobFailure("Automatic subtitles need a transcript; credits refunded.");
    if (cues.length === 0)
      throw new JobFailure("No speech was recognised in this video, so there is nothing to caption; credits refunded.");
    const video = inputs[0].probe;
    const ass = buildAss(p, cues, { width: video.width ?? 1280, height: video.height ?? 720 });
    return buildSubtitlesCommand(p, inputs, ass);
  },
});
