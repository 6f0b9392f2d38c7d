/**
 * The benchmarked commands, built by the real builders from src/media/commands with parameters
 * validated by the real request schemas (src/tools/<tool>.ts, so defaults are the API's),
 * the way src/media-worker/job-stages.ts builds them for a job (through the tool registry).
 */
import type { MediaCommand, MediaInput } from "../src/media/commands/command";
import { buildCleanAudioCommand } from "../src/media/commands/clean-audio";
import { buildConvertCommand } from "../src/media/commands/convert";
import { buildExtractAudioCommand } from "../src/media/commands/extract-audio";
import { buildMergeCommand } from "../src/media/commands/merge";
import { buildAss } from "../src/media/ass";
import { cuesFromSrt } from "../src/media/captions";
import { buildSubtitlesCommand } from "../src/media/commands/subtitles";
import { buildTrimCommand } from "../src/media/commands/trim";
import { buildWatermarkCommand } from "../src/media/commands/watermark";
import { tools } from "../src/tools";

export interface BenchInputs {
  clip: MediaInput;
  /** The clip again as the second input of a merge (in1.mp4). */
  clip2: MediaInput;
  logo: MediaInput;
  speech: MediaInput;
}

export interface BenchCase {
  id: string;
  label: string;
  /** Output duration a correct run produces, seconds. */
  expectSeconds: number;
  inputs: MediaInput[];
  build: () => Promise<MediaCommand>;
}

const SRT = `1
00:00:00,500 --> 00:00:03,000
Bonjour à tous, bienvenue !

2
00:00:03,500 --> 00:00:06,500
Les sous-titres sont incrustés
avec libass : œ, é, à, € 42.

3
00:00:07,000 --> 00:00:09,500
Merci d'avoir regardé.
`;

export function benchCases(inputs: BenchInputs): BenchCase[] {
  const { clip, clip2, logo, speech } = inputs;
  const id = "upl_bench";
  return [
    {
      id: "extract-audio-mp3",
      label: "extract-audio mp3",
      expectSeconds: 10,
      inputs: [clip],
      build: async () =>
        buildExtractAudioCommand(tools["extract-audio"].params.parse({ uploadId: id, format: "mp3" }), [clip]),
    },
    {
      id: "convert-webm",
      label: "convert webm (VP8/Opus)",
      expectSeconds: 10,
      inputs: [clip],
      build: async () => buildConvertCommand(tools.convert.params.parse({ uploadId: id, format: "webm" }), [clip]),
    },
    {
      id: "convert-mkv",
      label: "convert mkv (copy)",
      expectSeconds: 10,
      inputs: [clip],
      build: async () => buildConvertCommand(tools.convert.params.parse({ uploadId: id, format: "mkv" }), [clip]),
    },
    {
      id: "trim",
      label: "trim 2-7 s",
      expectSeconds: 5,
      inputs: [clip],
      build: async () => buildTrimCommand(tools.trim.params.parse({ uploadId: id, start: 2, end: 7 }), [clip]),
    },
    {
      id: "merge",
      label: "merge clip+clip",
      expectSeconds: 20,
      inputs: [clip, clip2],
      build: async () => buildMergeCommand(tools.merge.params.parse({ uploadIds: [id, id] }), [clip, clip2]),
    },
    {
      id: "watermark-text-fixe",
      label: "watermark text fixe",
      expectSeconds: 10,
      inputs: [clip],
      build: async () =>
        buildWatermarkCommand(
          tools.watermark.params.parse({ uploadId: id, watermarkText: "© Démo 2026", type: "fixe" }),
          [clip],
        ),
    },
    {
      id: "watermark-image-flottant",
      label: "watermark image flottant",
      expectSeconds: 10,
      inputs: [clip, logo],
      build: async () =>
        buildWatermarkCommand(
          tools.watermark.params.parse({ uploadId: id, watermarkUploadId: "upl_logo", type: "flottant", interval: 3 }),
          [clip, logo],
        ),
    },
    {
      id: "clean-audio",
      label: "clean-audio (wav)",
      expectSeconds: 10,
      inputs: [speech],
      build: async () => buildCleanAudioCommand(tools["clean-audio"].params.parse({ uploadId: id }), [speech]),
    },
    {
      id: "subtitles",
      label: "subtitles (3 cues, Inter)",
      expectSeconds: 10,
      inputs: [clip],
      build: async () => {
        // As the subtitles tool (src/tools/subtitles.ts) does for a job with srtContent.
        const params = tools.subtitles.params.parse({ uploadId: id, srtContent: SRT });
        const ass = buildAss(params, await cuesFromSrt(params.srtContent!), {
          width: clip.probe.width ?? 1280,
          height: clip.probe.height ?? 720,
        });
        return buildSubtitlesCommand(params, [clip], ass);
      },
    },
  ];
}
