/**
 * subtitles: burns an ASS script (ass.ts, from cues of captions.ts) into a video with libass
 * (ffmpeg's `subtitles` filter), with the font in the fonts subdirectory (no fontconfig in
 * ffmpeg.wasm).
 */
import type { SubtitleStyleParams } from "../ass";
import { fontFiles, scriptFaces, scriptsIn, subtitleFonts, type Script } from "../fonts";
import { FONTS_DIR, resultName, type MediaCommand, type MediaInput } from "./command";
import { EVEN_SIZE_FILTER, KEEP_FRAME_TIMES } from "./encoders";

/** Audio codecs an MP4 carries as a stream copy; others (Opus, Vorbis, PCM, FLAC) become AAC. */
const MP4_AUDIO_COPY = new Set(["aac", "mp3", "ac3", "eac3", "alac"]);

export const SUBTITLES_ASS_NAME = "subs.ass";

const MiB = 1024 * 1024;

/**
 * Wasm heap of a burn-in, measured on ffmpeg.wasm 0.12.10 (x264 veryfast without lookahead
 * or B-frames): 32 MiB at 320x240, 55 MiB at 1280x720, 96.5 MiB at 1920x1080. The fonts are
 * alone in `fonts/`, so libass (which loads its whole fontsdir) reads only them. Any script
 * face (fonts.ts `scriptFaces`) took a 720p burn from 55.4 to 66.5 MiB, the heap's next step
 * (libass keeps its own copy of every face beside the file's); a CJK face is 2.4-2.5 MB more.
 */
export function subtitlesWasmHeapBytes(input: MediaInput, scripts: readonly Script[] = []): number {
  const pixels = (input.probe.width ?? 1280) * (input.probe.height ?? 720);
  const base = pixels <= 1280 * 720 ? 55 * MiB : 100 * MiB;
  const cjkFaces = scripts.filter((script) => CJK_SCRIPTS.has(script)).length;
  return base + (scripts.length > 0 ? 12 * MiB : 0) + cjkFaces * 2.5 * MiB;
}

const CJK_SCRIPTS = new Set<Script>(["japanese", "chinese", "korean"]);

/**
 * Burns `ass` into the first input (a video) with libass. The font file is placed in the
 * `fonts/` subdirectory (`fontsdir=fonts`: ffmpeg.wasm has no fontconfig, and an
 * ASS [Fonts] section is not an option: ffmpeg 5.1 does not enable libass's font extraction,
 * and libass 0.15 aborts on embedded fonts whose encoded size is a multiple of 4). x264 runs
 * without lookahead and B-frames, the setting that fits ffmpeg.wasm's memory (55 MiB instead
 * of 115 at 720p). Audio is copied when MP4 can carry it.
 */
export function buildSubtitlesCommand(
  params: Pick<SubtitleStyleParams, "fontId">,
  inputs: MediaInput[],
  ass: string,
): MediaCommand {
  const [input] = inputs;
  if (input === undefined) throw new TypeError("subtitles needs one video input");
  const audioCodec = input.probe.audioCodec?.toLowerCase();
  const audio = !input.probe.hasAudio
    ? []
    : audioCodec !== undefined && MP4_AUDIO_COPY.has(audioCodec)
      ? ["-c:a", "copy"]
      : ["-c:a", "aac", "-b:a", "192k"];
  const outputName = "out.mp4";
  const scripts = scriptsIn(ass);
  return {
    args: [
      "-hide_banner",
      "-y",
      "-i",
      input.name,
      // V: the picture, never an attached cover image.
      "-map",
      "0:V:0",
      "-map",
      "0:a:0?",
      // Burnt at the source's size (the script's PlayRes), then to even dimensions for x264's 4:2:0.
      "-vf",
      `subtitles=filename=${SUBTITLES_ASS_NAME}:fontsdir=${FONTS_DIR},${EVEN_SIZE_FILTER}`,
      "-c:v",
      "libx264",
      "-preset",
      "veryfast",
      "-x264-params",
      "rc-lookahead=0:bframes=0",
      "-crf",
      "23",
      "-pix_fmt",
      "yuv420p",
      ...KEEP_FRAME_TIMES,
      ...audio,
      "-movflags",
      "+faststart",
      "-f",
      "mp4",
      outputName,
    ],
    files: { [SUBTITLES_ASS_NAME]: new TextEncoder().encode(ass) },
    // The family's faces, and the face of each script the captions switch to (ass.ts).
    fonts: [...fontFiles(subtitleFonts[params.fontId]), ...scripts.map((script) => scriptFaces[script].file)],
    outputName,
    resultFilename: resultName(input.filename, "mp4", "-subtitles", "video"),
    contentType: "video/mp4",
    wasmCapable: true,
    wasmHeapBytes: subtitlesWasmHeapBytes(input, scripts),
  };
}
