/**
 * merge: 2 to 20 videos played one after the other, as one H.264/AAC MP4, through the concat
 * filter; every input brought to the first one's size, rate and format, each segment's sound kept
 * on its own picture (late tracks padded, missing audio as silence).
 * Why: docs/decisions/0009-merge-concat-filter.md.
 */
import type { MergeInput } from "../../tools/merge";
import type { ProbeResult } from "../types";
import { type MediaCommand, type MediaInput, resultName } from "./command";
import { audioEncoderArgs, seconds, videoEncoderArgs, wasmHeapEstimate } from "./encoders";

/** Frame rate when the first input's is unknown (headers that state none, uploads probed before rates were read). */
export const DEFAULT_MERGE_FRAME_RATE = 30;
/** Frame size when the first input's is unknown (every video probe reports one in practice). */
const FALLBACK_SIZE = { width: 1280, height: 720 };
/** Decoders of all inputs are open at once: a rough per-input allowance, per source pixel. */
const DECODER_HEAP_BYTES_PER_PIXEL = 12;

/** The fps filter's rate: the first input's (NTSC rates as exact fractions) or the default. */
export function frameRateOf(probe: ProbeResult): string {
  const rate = probe.frameRate;
  if (rate === undefined || !Number.isFinite(rate) || rate <= 0 || rate > 240) return String(DEFAULT_MERGE_FRAME_RATE);
  for (const base of [24, 30, 60]) {
    if (Math.abs(rate - (base * 1000) / 1001) < 0.005) return `${base * 1000}/1001`;
  }
  return seconds(rate);
}

const even = (value: number) => Math.max(2, Math.floor(value / 2) * 2);

export function buildMergeCommand(_params: Partial<MergeInput>, inputs: MediaInput[]): MediaCommand {
  if (inputs.length < 2) throw new TypeError("merge takes at least two inputs");
  const first = inputs[0]!.probe;
  const width = even(first.width ?? FALLBACK_SIZE.width);
  const height = even(first.height ?? FALLBACK_SIZE.height);
  const rate = frameRateOf(first);
  const withAudio = inputs.some((input) => input.probe.hasAudio);

  const chains: string[] = [];
  const segments: string[] = [];
  inputs.forEach((input, i) => {
    // Each segment lasts the input's probed duration, what the merge bills: an AAC stream's
    // decoder padding (about 20 ms an input) would otherwise add up over 20 inputs.
    const duration = seconds(Math.max(input.probe.durationMs, 1) / 1000);
    chains.push(
      `[${i}:V:0]scale=${width}:${height}:force_original_aspect_ratio=decrease:force_divisible_by=2,` +
        `pad=${width}:${height}:(ow-iw)/2:(oh-ih)/2:color=black,setsar=1,fps=${rate}:start_time=0,format=yuv420p,trim=duration=${duration},setpts=PTS-STARTPTS[v${i}]`,
    );
    segments.push(`[v${i}]`);
    if (!withAudio) return;
    if (input.probe.hasAudio) {
      chains.push(
        `[${i}:a:0]aresample=48000:first_pts=0,aformat=sample_fmts=fltp:sample_rates=48000:channel_layouts=stereo,apad,atrim=duration=${duration},asetpts=PTS-STARTPTS[a${i}]`,
      );
    } else {
      // Silence as long as the input; concat also pads any shorter audio to its segment's video.
      chains.push(`anullsrc=r=48000:cl=stereo,atrim=duration=${duration},aformat=sample_fmts=fltp[a${i}]`);
    }
    segments.push(`[a${i}]`);
  });
  const graph = [
    ...chains,
    `${segments.join("")}concat=n=${inputs.length}:v=1:a=${withAudio ? 1 : 0}[v]${withAudio ? "[a]" : ""}`,
  ].join(";");

  const decoderBytes = inputs.reduce(
    (sum, input) => sum + (input.probe.width ?? width) * (input.probe.height ?? height) * DECODER_HEAP_BYTES_PER_PIXEL,
    0,
  );
  const outputName = "out.mp4";
  return {
    args: [
      "-hide_banner",
      "-y",
      ...inputs.flatMap((input) => ["-i", input.name]),
      "-filter_complex",
      graph,
      "-map",
      "[v]",
      ...(withAudio ? ["-map", "[a]"] : []),
      ...videoEncoderArgs("x264", width, height),
      ...(withAudio ? audioEncoderArgs("aac") : []),
      "-movflags",
      "+faststart",
      "-f",
      "mp4",
      outputName,
    ],
    files: {},
    fonts: [],
    outputName,
    resultFilename: resultName(inputs[0]!.filename, "mp4", "-merge"),
    contentType: "video/mp4",
    wasmCapable: true,
    wasmHeapBytes: wasmHeapEstimate("x264", width, height, decoderBytes),
  };
}
