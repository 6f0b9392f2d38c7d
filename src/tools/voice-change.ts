import * as z from "zod";
import "../lib/zod-openapi";
import { resultName } from "../media/commands/command";
import { requireClone } from "./checks";
import { defineTool } from "./definition";
import { languageCode, singleInput, totalMs, uploadId, videoOnly, voice, sameMedia } from "./fields";

export const VoiceChangeParams = z
  .object({
    uploadId,
    voice,
    language: languageCode({ subtags: true, fallback: "fr" }).openapi({
      description: "Language of the speech, ISO 639-1 (optionally with a region, fr-CA)",
    }),
  })
  .openapi("VoiceChangeRequest");
export type VoiceChangeInput = z.output<typeof VoiceChangeParams>;

export const voiceChange = defineTool({
  summary: "Replace the voice of a video with a catalogue or cloned voice",
  guidance: "Use it to replace the voice in a video with a catalogue voice or the user's cloned voice.",
  params: VoiceChangeParams,
  rates: { payg: { per: "minute", credits: 15, clone: 60 }, plans: { per: "minute", credits: 25, clone: 60 } },
  inputs: (p) => singleInput(p.uploadId, videoOnly, true),
  quantity: (p, u) => ({ durationMs: totalMs(u), clone: p.voice === "clone" }),
  check: (p, _u, context) => requireClone(p.voice, context),
  produces: (_p, [video]) => sameMedia(video, { container: "mp4" }),
  workFactor: 1.5,
  speech: (p, source) => ({
    kind: "voice-change",
    voice: p.voice,
    language: p.language,
    result: { filename: resultName(source ?? "video", "mp4", `-${p.voice}`, "video"), contentType: "video/mp4" },
  }),
});
