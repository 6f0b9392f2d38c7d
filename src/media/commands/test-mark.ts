/**
 * Results of test-mode keys (mk_test_) carry a mark that makes them useless in production: "TEST"
 * burnt into video, a beep over audio, TEST in the file's comment metadata; the same on both
 * engines. What the mark is, and why neither track is usable alone: docs/decisions/0013-test-mode-marks.md.
 */
import type { FinishPass } from "@media-credits/wire/protocol";
import { FONTS_DIR, type MediaCommand } from "./command";
import { withDecodeLimits } from "@media-credits/wire/decode-limits";
import { EVEN_SIZE_FILTER, videoEncoderArgs } from "./encoders";
import { WATERMARK_FONT } from "./watermark";

export const TEST_MARK_TEXT = "TEST";
/** drawtext's font face and glyph cache beside an encoder: a 720p trim went from 46.1 to 55.4 MiB of wasm heap. */
export const TEST_MARK_HEAP_BYTES = 12 * 1024 * 1024;

export const TEST_MARK_FILTER =
  `drawtext=fontfile=${FONTS_DIR}/${WATERMARK_FONT}:text=${TEST_MARK_TEXT}:expansion=none:fontsize=h/8:fontcolor=white:` +
  "box=1:boxcolor=black@0.7:boxborderw=8:x=w-tw-h/24:y=h/24";

function markArgs(args: string[], outputName: string, video: boolean): string[] {
  const marked = [...args];
  if (video) {
    const vf = marked.indexOf("-vf");
    const graph = marked.indexOf("-filter_complex");
    if (vf >= 0) {
      marked[vf + 1] = `${marked[vf + 1]},${TEST_MARK_FILTER}`;
    } else if (graph >= 0 && marked.some((arg, i) => arg === "[v]" && marked[i - 1] === "-map")) {
      marked[graph + 1] = `${marked[graph + 1]};[v]${TEST_MARK_FILTER}[vtest]`;
      const map = marked.findIndex((arg, i) => arg === "[v]" && marked[i - 1] === "-map");
      marked[map] = "[vtest]";
    } else {
      throw new Error("a test-mode video command needs a -vf chain or a [v] graph output to mark");
    }
  }
  // Before the output file (the last argument), so it applies to it.
  const output = marked.lastIndexOf(outputName);
  marked.splice(output, 0, "-metadata", `comment=${TEST_MARK_TEXT}`);
  return marked;
}

/** The beep of test keys' audio: `aeval` adds it to every channel, no second input needed. */
export const TEST_BEEP_FILTER = "aeval=exprs=val(ch)+0.2*sin(2*PI*1000*t)*lt(mod(t\\,3)\\,0.3):c=same";

/** What the beep pass encodes with, by the result's extension: the container stays, the codec is one both engines have (no Opus: it crashes ffmpeg.wasm). */
const MARKED_AUDIO: Record<string, string[]> = {
  mp3: ["-c:a", "libmp3lame", "-q:a", "2", "-f", "mp3"],
  wav: ["-c:a", "pcm_s16le", "-f", "wav"],
  aac: ["-c:a", "aac", "-b:a", "192k", "-f", "adts"],
  m4a: ["-c:a", "aac", "-b:a", "192k", "-f", "mp4", "-movflags", "+faststart"],
  mp4: ["-c:a", "aac", "-b:a", "192k", "-f", "mp4", "-movflags", "+faststart"],
  mov: ["-c:a", "aac", "-b:a", "192k", "-f", "mov", "-movflags", "+faststart"],
  mkv: ["-c:a", "flac", "-f", "matroska"],
  webm: ["-c:a", "libvorbis", "-q:a", "5", "-f", "webm"],
  ogg: ["-c:a", "libvorbis", "-q:a", "5", "-f", "ogg"],
  opus: ["-c:a", "libvorbis", "-q:a", "5", "-f", "ogg"],
  flac: ["-c:a", "flac", "-f", "flac"],
  avi: ["-c:a", "libmp3lame", "-q:a", "2", "-f", "avi"],
};

/** The finish pass that beeps an audio result: reads `input`, writes `output` in the same container, marked TEST. */
export function audioMarkFinish(input: string, output: string): FinishPass {
  const extension = output.split(".").pop()!.toLowerCase();
  const encode = MARKED_AUDIO[extension] ?? MARKED_AUDIO.mkv!;
  return {
    input,
    args: [
      "-hide_banner",
      "-y",
      "-i",
      input,
      "-map",
      "0:a:0",
      "-af",
      TEST_BEEP_FILTER,
      ...encode,
      "-metadata",
      `comment=${TEST_MARK_TEXT}`,
      output,
    ],
    fonts: [],
  };
}

/** The audio codec a video container's beeped sound is written with (no Opus: it crashes ffmpeg.wasm). */
const MARKED_VIDEO_AUDIO: Record<string, string[]> = {
  webm: ["-c:a", "libvorbis", "-q:a", "5"],
  avi: ["-c:a", "libmp3lame", "-q:a", "2"],
};

/**
 * The finish pass that beeps the sound of a video result whose picture already carries the TEST
 * mark: the picture is copied, the sound re-encoded with the beep (a video without sound passes
 * unchanged), so no track of a test key's video is usable on its own.
 */
export function videoMarkFinish(input: string, output: string): FinishPass {
  const extension = output.split(".").pop()!.toLowerCase();
  const audio = MARKED_VIDEO_AUDIO[extension] ?? ["-c:a", "aac", "-b:a", "160k"];
  const faststart = ["mp4", "mov", "m4v"].includes(extension) ? ["-movflags", "+faststart"] : [];
  return {
    input,
    args: [
      "-hide_banner",
      "-y",
      "-i",
      input,
      "-map",
      "0:v",
      "-map",
      "0:a?",
      "-c:v",
      "copy",
      "-af",
      TEST_BEEP_FILTER,
      ...audio,
      ...faststart,
      output,
    ],
    fonts: [],
  };
}

/** `args` writing `from` instead of `to` (the last argument naming it). */
function writing(args: string[], from: string, to: string): string[] {
  const at = args.lastIndexOf(from);
  return at < 0 ? args : [...args.slice(0, at), to, ...args.slice(at + 1)];
}

export function withTestMark(command: MediaCommand): MediaCommand {
  const video = command.contentType.startsWith("video/");
  // The command writes an intermediate (its picture marked), which the beep pass turns into the result.
  const intermediate = `premark.${command.outputName.split(".").pop()}`;
  const marked = (args: string[]) =>
    writing(video ? markArgs(args, command.outputName, true) : args, command.outputName, intermediate);
  return {
    ...command,
    args: marked(command.args),
    fonts: video && !command.fonts.includes(WATERMARK_FONT) ? [...command.fonts, WATERMARK_FONT] : command.fonts,
    wasmHeapBytes: video ? command.wasmHeapBytes + TEST_MARK_HEAP_BYTES : command.wasmHeapBytes,
    backend: command.backend && { ...command.backend, args: marked(command.backend.args) },
    wasmLoudness: command.wasmLoudness && { ...command.wasmLoudness, args: marked(command.wasmLoudness.args) },
    // With a silence pass the args write its input, and the pass writes the intermediate instead.
    audioReport: command.audioReport && {
      ...command.audioReport,
      ...(command.audioReport.silence ? { silence: { ...command.audioReport.silence, output: intermediate } } : {}),
    },
    finish: video
      ? videoMarkFinish(intermediate, command.outputName)
      : audioMarkFinish(intermediate, command.outputName),
  };
}

/**
 * The mark of a result the speech backend writes itself (text-to-speech, voice-change), as the
 * backend's finish pass: the speech stage writes `input`, this command writes `output` from it
 * with the same mark as every other result (video re-encoded with TEST drawn on it and its
 * sound beeped; audio beeped).
 */
export function testMarkFinish(input: string, output: string, contentType: string): FinishPass {
  const video = contentType.startsWith("video/");
  if (!video) return audioMarkFinish(input, output);
  const streams = [
    "-map",
    "0:v:0",
    "-map",
    "0:a?",
    "-vf",
    EVEN_SIZE_FILTER,
    ...videoEncoderArgs("x264"),
    "-af",
    TEST_BEEP_FILTER,
    "-c:a",
    "aac",
    "-b:a",
    "160k",
    "-movflags",
    "+faststart",
  ];
  const marked = markArgs(["-hide_banner", "-y", "-i", input, ...streams, output], output, true);
  // The speech stage copied the upload's picture into `input`: it is decoded within the same caps.
  return { input, args: withDecodeLimits(marked, { [input]: "video" }), fonts: [WATERMARK_FONT] };
}
