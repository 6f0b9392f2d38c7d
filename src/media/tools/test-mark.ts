/**
 * Results of test-mode keys (mk_test_) carry a mark: video shows "TEST" burnt into its top
 * right corner (white on a dark box, an eighth of the frame's height), and every result file
 * says TEST in its `comment` metadata (audio cannot show a mark). The mark is added to the
 * command the tool built, so both engines draw the same thing: appended to the `-vf` chain, or
 * after the final `[v]` of a `-filter_complex` graph. Tools that copy video packets (convert,
 * clean-audio) re-encode instead in test mode, through their `reencodeVideo` option.
 */
import type { FinishPass } from "../../../backend/src/protocol.ts";
import { FONTS_DIR, type MediaCommand } from "./command";
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

export function withTestMark(command: MediaCommand): MediaCommand {
  const video = command.contentType.startsWith("video/");
  return {
    ...command,
    args: markArgs(command.args, command.outputName, video),
    fonts: video && !command.fonts.includes(WATERMARK_FONT) ? [...command.fonts, WATERMARK_FONT] : command.fonts,
    wasmHeapBytes: video ? command.wasmHeapBytes + TEST_MARK_HEAP_BYTES : command.wasmHeapBytes,
    backend: command.backend && { ...command.backend, args: markArgs(command.backend.args, command.outputName, video) },
    wasmLoudness: command.wasmLoudness && { ...command.wasmLoudness, args: markArgs(command.wasmLoudness.args, command.outputName, video) },
  };
}

/**
 * The mark of a result the speech backend writes itself (text-to-speech, voice-change), as the
 * backend's finish pass: the speech stage writes `input`, this command writes `output` from it
 * with the same mark as every other result (video re-encoded with TEST drawn on it and its
 * audio copied; audio copied with the comment).
 */
export function testMarkFinish(input: string, output: string, contentType: string): FinishPass {
  const video = contentType.startsWith("video/");
  const streams = video ? ["-map", "0:v:0", "-map", "0:a?", "-vf", EVEN_SIZE_FILTER, ...videoEncoderArgs("x264"), "-c:a", "copy", "-movflags", "+faststart"] : ["-c", "copy"];
  const marked = withTestMark({
    args: ["-hide_banner", "-y", "-i", input, ...streams, output],
    files: {},
    fonts: [],
    outputName: output,
    resultFilename: output,
    contentType,
    wasmCapable: false,
    wasmHeapBytes: 0,
  });
  return { input, args: marked.args, fonts: marked.fonts };
}
