/**
 * The one definition of a media tool run, shared by both engines: a tool's builder turns
 * validated parameters and probed inputs into ffmpeg arguments over plain file names in one
 * working directory. The in-Worker engine (ffmpeg.wasm) and the container backend (native
 * ffmpeg) place the same files under the same names and run exactly these arguments; the
 * backend runs the command's `backend` variant instead when it has one (two-pass loudnorm).
 */
import { FONTS_SUBDIR, type FinishPass, type LoudnormTarget, type StreamedDemuxer } from "@media-credits/wire/protocol";
import type { AudioReportPass } from "@media-credits/wire/audio-report";
import type { DenoisePass } from "@media-credits/wire/protocol";
import type { ProbeResult } from "../types";

/** An uploaded input, placed in the working directory as `name` (e.g. `in0.mp4`). */
export interface MediaInput {
  name: string;
  /** The name the user uploaded, for naming the result. */
  filename: string;
  sizeBytes: number;
  probe: ProbeResult;
}

export interface MediaCommand {
  /** ffmpeg arguments, without the program name. Never contains user text verbatim except inside `files`. */
  args: string[];
  /** Generated auxiliary files (ASS subtitles, text for drawtext...), name -> content. */
  files: Record<string, Uint8Array>;
  /** Shipped font files, placed in the `fonts/` subdirectory of the working directory (names from src/media/fonts.ts). */
  fonts: string[];
  /** The file the command writes. */
  outputName: string;
  /** The name the user downloads. */
  resultFilename: string;
  contentType: string;
  /**
   * Whether ffmpeg.wasm can run these settings at all (no VP9 there, and the memory of the
   * chosen encoder settings), before any size-based routing.
   */
  wasmCapable: boolean;
  /** Rough extra wasm heap the encoder settings need, in bytes (FACTS: x264 no-lookahead 55 MiB, VP8 66.5 MiB). */
  wasmHeapBytes: number;
  /**
   * What the container backend runs instead of `args`, when native ffmpeg can do better than one
   * ffmpeg.wasm run: two-pass loudness normalisation (clean-audio). Same files, fonts and output;
   * the args hold one `loudnorm` filter, run twice as the protocol's `loudnorm` field says, or
   * after a measuring pass of their own that writes an intermediate they read (`measurePass`).
   */
  backend?: { args: string[]; loudnorm: LoudnormTarget; measurePass?: { args: string[]; writes: string } };
  /**
   * What ffmpeg.wasm runs instead of `args`: loudness normalisation in two runs (clean-audio).
   * Both arg lists hold one `loudnorm` filter: the first run is `measureArgs` (audio only, into
   * the null muxer) with ebur128 in its place, the second `args` with one gain there
   * (packages/wire/src/loudness.ts; src/media-worker/wasm-command.ts runs them).
   */
  wasmLoudness?: { measureArgs: string[]; args: string[]; loudnorm: LoudnormTarget };
  /**
   * Inputs the backend's ffmpeg reads over HTTP with range requests instead of downloading them
   * first (name -> demuxer), and the share of their bytes it is expected to read: a trim of a
   * long file reads about the part it keeps, and the encode starts with the first bytes.
   */
  backendStreaming?: { inputs: Record<string, StreamedDemuxer>; readFraction: number };
  /**
   * The billed duration of each media input, once the command is bounded to them
   * (src/media-worker/job-stages.ts, packages/wire/src/billed-duration.ts): both engines then fail a run whose
   * result is longer than those inputs can honestly make.
   */
  billedInputsMs?: number[];
  /**
   * A pass over what the command wrote before it is delivered (a test key's audible mark): the
   * args write `finish.input`, and the finish args turn it into `outputName`, on both engines.
   */
  finish?: FinishPass;
  /**
   * What the result's report measures (clean-audio, packages/wire/src/audio-report.ts), on both
   * engines: the source's loudness before the run, the result's after, and with a silence pass
   * the pauses found in what the args wrote (`silence.input`) and cut into `silence.output`
   * (the finish pass's input, or the output).
   */
  audioReport?: AudioReportPass;
  /**
   * A pass before all others (protocol: DenoisePassSchema): its args decode the sound into raw
   * samples, which the backend denoises in place with RNNoise (the Worker, which has no room for
   * it, leaves them as decoded) and the other passes then read.
   */
  denoise?: DenoisePass;
}

/** The file the command's own args write: the silence pass's input, the finish pass's, or the output. */
export const commandWrites = (command: Pick<MediaCommand, "audioReport" | "finish" | "outputName">): string =>
  command.audioReport?.silence?.input ?? command.finish?.input ?? command.outputName;

/** Containers the backend can read over HTTP (their index makes a seek one range request), by demuxer. */
const STREAMED_DEMUXER: Partial<Record<string, StreamedDemuxer>> = {
  mp4: "mov",
  m4v: "mov",
  mov: "mov",
  m4a: "mov",
  mkv: "matroska",
  webm: "matroska",
  mp3: "mp3",
};

/**
 * `input` read over HTTP by the backend, of which about `readFraction` is read, or undefined when
 * its container must be downloaded first.
 */
export function streamedInput(input: MediaInput, readFraction = 1): MediaCommand["backendStreaming"] {
  const demuxer = STREAMED_DEMUXER[input.probe.container];
  return demuxer ? { inputs: { [input.name]: demuxer }, readFraction } : undefined;
}

/**
 * The inputs the backend reads while it downloads them (protocol: progressiveInputs), name ->
 * demuxer: every input in a container it can read over HTTP that the command does not stream, so
 * an encode starts with the first part of its input instead of after the last.
 */
export function progressiveInputs(
  command: Pick<MediaCommand, "backendStreaming">,
  inputs: MediaInput[],
): Record<string, StreamedDemuxer> {
  const streamed = command.backendStreaming?.inputs ?? {};
  const entries = inputs.flatMap((input) => {
    const demuxer = STREAMED_DEMUXER[input.probe.container];
    return demuxer && !(input.name in streamed) ? [[input.name, demuxer] as const] : [];
  });
  return Object.fromEntries(entries);
}

/**
 * Fonts live in a subdirectory of their own: libass reads every file of its `fontsdir` into
 * memory, which must not include the (possibly huge) inputs. The name is the backend protocol's.
 */
export const FONTS_DIR = FONTS_SUBDIR;

/** `clip.mov` + `mp4` -> `clip.mp4`; a safe stem (letters, digits, . _ -), `fallback` when none is left. */
export function resultName(sourceFilename: string, extension: string, suffix = "", fallback = "result"): string {
  const base = sourceFilename.split(/[\\/]/).pop() ?? "";
  const stem = base
    .replace(/\.[^.]*$/, "")
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .replace(/[^A-Za-z0-9._-]+/g, "_")
    .replace(/^[._-]+|[._-]+$/g, "")
    .slice(0, 100);
  return `${/[A-Za-z0-9]/.test(stem) ? stem : fallback}${suffix}.${extension}`;
}
