/**
 * Two-pass loudness normalisation: the argv of each pass and the reading of its measurement. No
 * Node API here: both engines use it, the backend's native ffmpeg (protocol:
 * FfmpegJobSchema.loudnorm) and ffmpeg.wasm in the media Worker (src/media-worker/job-stages.ts).
 *
 * The args hold one `loudnorm` filter and end with the output name (checked by the protocol);
 * pass 1 measures, pass 2 applies the measurement. Pass 1 measures with `ebur128`, and when one
 * gain keeps the true peak and the range within the target (loudnorm's `linear=true` rule, the
 * usual case after clean-audio's limiter) pass 2 applies it with `volume`. loudnorm itself works
 * at 192 kHz outside its linear mode, measuring included: on a 60 s stereo clip clean-audio's
 * measuring pass took 5.0-5.5 s of ffmpeg with it and 2.4 s with ebur128. Only when one gain
 * cannot do does loudnorm measure (its dynamic mode needs its own first pass's `target_offset`)
 * and apply in its dynamic mode: on the backend, where its memory is no concern.
 */
import { LOUDNORM_FILTER, type LoudnormTarget } from "./protocol.ts";

/** What ebur128 measured over the whole input (EBU R128 units). */
export interface LoudnessMeasurement {
  /** Integrated loudness, LUFS. */
  integrated: number;
  /** True peak, dBTP. */
  truePeak: number;
  /** Loudness range, LU. */
  lra: number;
}

/** What `loudnorm` printed with print_format=json (the input's figures and its own offset). */
export interface LoudnormMeasurement {
  inputI: number;
  inputTp: number;
  inputLra: number;
  inputThresh: number;
  targetOffset: number;
}

/** ebur128 prints one decimal: a peak read as -1.6 may be -1.55, so one gain keeps this margin. */
const PRINTED_PEAK_MARGIN_DB = 0.05;

const targetOptions = (target: LoudnormTarget) => `I=${target.integrated}:TP=${target.truePeak}:LRA=${target.lra}`;

function withLoudnorm(args: string[], filter: string): string[] {
  return args.map((arg) => arg.replace(LOUDNORM_FILTER, (_match, before: string) => `${before}${filter}`));
}

/** The args measuring with `filter` in loudnorm's place: into the null muxer, or as the job's own measuring pass. */
function measuringArgs(args: string[], filter: string, measurePassArgs?: string[]): string[] {
  if (measurePassArgs) return ["-nostats", ...withLoudnorm(measurePassArgs, filter)];
  return ["-nostats", ...withLoudnorm(args.slice(0, -1), filter), "-f", "null", "-"];
}

/**
 * Pass 1: the same inputs and filters with ffmpeg's EBU R128 meter in loudnorm's place (its
 * per-frame lines at the verbose level, so only its summary is printed), the output to the null
 * muxer; or, given a measuring pass of its own (protocol: FfmpegJobSchema.measurePass), that
 * pass's args with the meter there, writing its intermediate.
 */
export function loudnessMeterArgs(args: string[], measurePassArgs?: string[]): string[] {
  return measuringArgs(args, "ebur128=peak=true:framelog=verbose", measurePassArgs);
}

/** The gain in dB that brings `measured` to the target, or null when one gain cannot (loudnorm's linear rule). */
export function linearGainDb(target: LoudnormTarget, measured: LoudnessMeasurement): number | null {
  const gain = target.integrated - measured.integrated;
  const fits = measured.truePeak + PRINTED_PEAK_MARGIN_DB + gain <= target.truePeak && measured.lra <= target.lra;
  return fits ? gain : null;
}

/**
 * The gain in dB of ffmpeg.wasm's pass 2, which has no loudnorm dynamic mode (192 kHz: beyond an
 * isolate's memory): loudnorm's linear gain when it fits, else the largest gain up to the target
 * loudness that keeps the true peak under the target's (a quiet, peaky voice ends a little under
 * the target instead of clipping). The range is left as it is.
 */
export function peakSafeGainDb(target: LoudnormTarget, measured: LoudnessMeasurement): number {
  return Math.min(
    target.integrated - measured.integrated,
    target.truePeak - PRINTED_PEAK_MARGIN_DB - measured.truePeak,
  );
}

/** Pass 2 with one gain, or with `anull` when nothing was measured (silence, under the 0.4 s a loudness block needs). */
export function gainArgs(args: string[], gainDb: number | null): string[] {
  return withLoudnorm(args, gainDb === null ? "anull" : `volume=${gainDb.toFixed(2)}dB`);
}

/** loudnorm's own first pass, for its dynamic mode: the final args, loudnorm printing its measurement, into the null muxer. */
export function loudnormMeasureArgs(args: string[], target: LoudnormTarget): string[] {
  return measuringArgs(args, `loudnorm=${targetOptions(target)}:print_format=json`);
}

/** Pass 2 in loudnorm's dynamic mode, given its first pass's measurement (or `anull` without one). */
export function loudnormApplyArgs(
  args: string[],
  target: LoudnormTarget,
  measured: LoudnormMeasurement | null,
): string[] {
  if (!measured) return gainArgs(args, null);
  const clamp = (value: number, min: number, max: number) => Math.min(max, Math.max(min, value));
  const options = [
    targetOptions(target),
    `measured_I=${clamp(measured.inputI, -99, 0)}`,
    `measured_TP=${clamp(measured.inputTp, -99, 99)}`,
    `measured_LRA=${clamp(measured.inputLra, 0, 99)}`,
    `measured_thresh=${clamp(measured.inputThresh, -99, 0)}`,
    `offset=${clamp(measured.targetOffset, -99, 99)}`,
    "linear=true",
  ];
  return withLoudnorm(args, `loudnorm=${options.join(":")}`);
}

/**
 * The measurement of pass 1 from ebur128's summary at the end of `stderr`, or null when it
 * measured nothing (silence or under 0.4 s: -70 LUFS, a gate of 0, a peak of -inf).
 */
export function parseLoudnessMeasurement(stderr: string): LoudnessMeasurement | null {
  const at = stderr.lastIndexOf("Summary:");
  if (at < 0) return null;
  const summary = stderr.slice(at);
  const read = (pattern: RegExp) => Number(pattern.exec(summary)?.[1] ?? Number.NaN);
  const measured = {
    integrated: read(/Integrated loudness:\s+I:\s+(-?[\d.]+) LUFS/),
    lra: read(/Loudness range:\s+LRA:\s+(-?[\d.]+) LU/),
    truePeak: read(/True peak:\s+Peak:\s+(-?[\d.]+) dBFS/),
  };
  const gate = read(/Integrated loudness:\s+I:[^\n]*\n\s+Threshold:\s+(-?[\d.]+) LUFS/);
  if (!Object.values(measured).every(Number.isFinite)) return null;
  return measured.integrated > -70 && gate < 0 ? measured : null;
}

/** loudnorm's printed measurement (the last JSON block in `stderr`), or null when it printed none or measured nothing finite. */
export function parseLoudnormMeasurement(stderr: string): LoudnormMeasurement | null {
  const block = stderr.match(/\{[^{}]*"input_i"[^{}]*\}/g)?.at(-1);
  if (!block) return null;
  let json: Record<string, string>;
  try {
    json = JSON.parse(block) as Record<string, string>;
  } catch {
    return null;
  }
  const measured = {
    inputI: Number(json.input_i),
    inputTp: Number(json.input_tp),
    inputLra: Number(json.input_lra),
    inputThresh: Number(json.input_thresh),
    targetOffset: Number(json.target_offset),
  };
  return Object.values(measured).every(Number.isFinite) ? measured : null;
}

/** What a run of ffmpeg the job's way gives back (its stderr's tail). */
type RunPass = (args: string[], phase: string) => Promise<{ stderr: string }>;

/**
 * Runs the measuring passes of a loudness-normalised job and gives the final pass's args, and
 * whether they apply one gain (undefined when nothing was measured).
 */
export async function loudnessFinalArgs(
  args: string[],
  target: LoudnormTarget,
  measurePassArgs: string[] | undefined,
  run: RunPass,
): Promise<{ args: string[]; linear?: boolean }> {
  const meter = await run(loudnessMeterArgs(args, measurePassArgs), "measuring the loudness (ffmpeg, first pass)");
  const measured = parseLoudnessMeasurement(meter.stderr);
  if (!measured) return { args: gainArgs(args, null) };
  const gain = linearGainDb(target, measured);
  if (gain !== null) return { args: gainArgs(args, gain), linear: true };
  const loudnorm = await run(loudnormMeasureArgs(args, target), "measuring for loudnorm's dynamic mode (ffmpeg)");
  return { args: loudnormApplyArgs(args, target, parseLoudnormMeasurement(loudnorm.stderr)), linear: false };
}
