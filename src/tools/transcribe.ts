import * as z from "zod";
import "../lib/zod-openapi";
import { resultName } from "../media/commands/command";
import { TEST_MARK_TEXT } from "../media/commands/test-mark";
import { transcriptToSrt, transcriptToText } from "../media/transcript";
import { checkTranscriptionAvailable } from "./checks";
import { defineTool } from "./definition";
import { languageCode, mediaKinds, singleInput, totalMs, uploadId } from "./fields";

export const TranscribeParams = z
  .object({
    uploadId,
    language: languageCode({ auto: true, fallback: "auto" }).openapi({
      description:
        "ISO 639-1 code or `auto` (another value is 400). A code this server's transcription engines lack is accepted and its job fails with an error naming the languages they have, refunded in full (a wrong-language transcript is not sold).",
    }),
    format: z.enum(["txt", "srt"]).default("txt"),
    srtSplitMode: z
      .enum(["phrase", "mot"])
      .default("phrase")
      .openapi({ description: "Only with format srt (validated, ignored otherwise)" }),
  })
  .openapi("TranscribeRequest");
export type TranscribeInput = z.output<typeof TranscribeParams>;

export const transcribe = defineTool({
  summary: "Transcribe speech to plain text or SRT",
  guidance: "Use it when the user wants the words of a recording as text or an .srt file.",
  params: TranscribeParams,
  rates: { payg: { per: "minute", credits: 15 }, plans: { per: "minute", credits: 15 } },
  inputs: (p) => singleInput(p.uploadId, mediaKinds, true),
  quantity: (_p, u) => ({ durationMs: totalMs(u) }),
  check: (_p, _u, context) => checkTranscriptionAvailable(context),
  produces: () => ({ kind: "text" }),
  workFactor: 0.8,
  speech: (p) => ({ kind: "transcribe", language: p.language }),
  fromTranscript: (p, transcript, source, { testMode }) =>
    p.format === "srt"
      ? {
          content: transcriptToSrt(transcript, p.srtSplitMode, testMode ? TEST_MARK_TEXT : undefined),
          filename: resultName(source ?? "transcript", "srt", "", "transcript"),
          contentType: "application/x-subrip; charset=utf-8",
        }
      : {
          content: transcriptToText(transcript, testMode ? TEST_MARK_TEXT : undefined),
          filename: resultName(source ?? "transcript", "txt", "", "transcript"),
          contentType: "text/plain; charset=utf-8",
        },
});
