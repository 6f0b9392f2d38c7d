/**
 * Native ffmpeg: spawn without a shell, keep the tail of stderr, stop it on abort (deadline or
 * shutdown), and turn a failure into a short message a user can read; the argv of the two passes
 * of a loudness-normalised job (protocol: FfmpegJobSchema.loudnorm).
 */
import { spawn } from "node:child_process";
import { LOUDNORM_FILTER, type LoudnormTarget } from "./protocol.ts";

export const STDERR_TAIL_BYTES = 64 * 1024;

/** Keeps the last `limit` bytes written to it. */
export class TailBuffer {
  #limit: number;
  #chunks: Buffer[] = [];
  #size = 0;

  constructor(limit: number) {
    this.#limit = limit;
  }

  push(chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#size += chunk.length;
    while (this.#chunks.length > 1 && this.#size - this.#chunks[0]!.length >= this.#limit) {
      this.#size -= this.#chunks.shift()!.length;
    }
  }

  toString(): string {
    const all = Buffer.concat(this.#chunks);
    return all.subarray(Math.max(0, all.length - this.#limit)).toString("utf8");
  }
}

export interface FfmpegRun {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** The last STDERR_TAIL_BYTES of stderr. */
  stderr: string;
  /** Stopped through the abort signal (deadline, shutdown). */
  aborted: boolean;
  durationMs: number;
}

export interface FfmpegOptions {
  ffmpegPath: string;
  /** Arguments without the program name; `-nostdin` is put in front. */
  args: string[];
  cwd: string;
  signal?: AbortSignal;
  env?: NodeJS.ProcessEnv;
  stderrLimit?: number;
}

export class FfmpegStartError extends Error {}

export function runFfmpeg(options: FfmpegOptions): Promise<FfmpegRun> {
  const started = Date.now();
  const { signal } = options;
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      resolve({ exitCode: null, signal: null, stderr: "", aborted: true, durationMs: 0 });
      return;
    }
    const child = spawn(options.ffmpegPath, ["-nostdin", ...options.args], {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ["ignore", "ignore", "pipe"],
      shell: false,
      windowsHide: true,
    });
    const tail = new TailBuffer(options.stderrLimit ?? STDERR_TAIL_BYTES);
    let aborted = false;
    let settled = false;
    const onAbort = () => {
      aborted = true;
      // The output is thrown away: no need for ffmpeg's graceful SIGTERM finish.
      child.kill("SIGKILL");
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    child.stderr.on("data", (chunk: Buffer) => tail.push(chunk));
    child.once("error", (err: NodeJS.ErrnoException) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener("abort", onAbort);
      reject(new FfmpegStartError(`ffmpeg could not be started (${err.code ?? err.message})`));
    });
    child.once("close", (exitCode, exitSignal) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener("abort", onAbort);
      resolve({
        exitCode,
        signal: exitSignal,
        stderr: tail.toString(),
        aborted,
        durationMs: Date.now() - started,
      });
    });
  });
}

const NOISE = [
  /^(frame|size)=/, // progress (written with \r)
  /^Press \[q\]/,
  /^(Input|Output) #\d+/,
  /^Stream mapping:/,
  /^Stream #\d+:\d+ -> #\d+:\d+/,
  /^ffmpeg version /,
  /^(built with|configuration:|lib\w+\s+\d)/,
  /^\[(out|in)#/, // per-file summaries of newer ffmpeg
  /^video:\S+ audio:\S+/, // final size summary
];

/**
 * The last meaningful lines of ffmpeg's stderr, on one line: progress, banners, stream listings
 * and indented metadata are dropped, repeated lines are kept once.
 */
export function summarizeStderr(stderr: string, maxLines = 4, maxChars = 1000): string {
  const lines = stderr
    .split(/\r\n|\r|\n/)
    .filter((line) => line.trim() !== "" && !/^\s/.test(line))
    // Any URL left (a streamed input's, see jobs.ts) would carry its signature: never shown.
    .map((line) => line.trim().replace(/ @ 0x[0-9a-f]+\]/g, "]").replace(/\b(?:https?|tcp|tls):\/\/[^\s'"]+/gi, (url) => (url.endsWith(":") ? "<url>:" : "<url>")))
    .filter((line) => !NOISE.some((re) => re.test(line)));
  const picked: string[] = [];
  for (let i = lines.length - 1; i >= 0 && picked.length < maxLines; i--) {
    const line = lines[i]!;
    if (/^Last message repeated/.test(line)) continue;
    if (!picked.includes(line)) picked.unshift(line);
  }
  const text = picked.join(" | ");
  return text.length > maxChars ? `…${text.slice(text.length - maxChars + 1)}` : text;
}

/** "ffmpeg exited with code 1: <last meaningful stderr lines>" */
export function describeFfmpegFailure(run: FfmpegRun): string {
  const summary = summarizeStderr(run.stderr);
  const head =
    run.exitCode === null && run.signal
      ? `ffmpeg was killed by ${run.signal}`
      : `ffmpeg exited with code ${run.exitCode}`;
  return summary ? `${head}: ${summary}` : head;
}

/** First line of `ffmpeg -version`; rejects when ffmpeg cannot run. */
export function ffmpegVersion(ffmpegPath: string, timeoutMs = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(ffmpegPath, ["-hide_banner", "-version"], {
      stdio: ["ignore", "pipe", "ignore"],
      shell: false,
      timeout: timeoutMs,
    });
    let out = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk: string) => {
      if (out.length < 4096) out += chunk;
    });
    child.once("error", (err: NodeJS.ErrnoException) =>
      reject(new FfmpegStartError(`${ffmpegPath} could not be started (${err.code ?? err.message})`)),
    );
    child.once("close", (code) => {
      const line = out.split("\n")[0]?.trim() ?? "";
      if (code === 0 && line) resolve(line);
      else reject(new FfmpegStartError(`${ffmpegPath} -version exited with code ${code}`));
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Two-pass loudness normalisation: the args hold one `loudnorm` filter and end with the output name
// (checked by the protocol); pass 1 measures, pass 2 applies the measurement.
//
// Pass 1 measures with `ebur128`, and when one gain keeps the true peak and the range within the
// target (loudnorm's `linear=true` rule, the usual case after clean-audio's limiter) pass 2 applies
// it with `volume`. loudnorm itself works at 192 kHz outside its linear mode, measuring included:
// on a 60 s stereo clip clean-audio's measuring pass took 5.0-5.5 s of ffmpeg with it and 2.4 s
// with ebur128. Only when one gain cannot do does loudnorm measure (its dynamic mode needs its own
// first pass's `target_offset`) and apply in its dynamic mode.

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

/** Pass 2 with one gain, or with `anull` when nothing was measured (silence, under the 0.4 s a loudness block needs). */
export function gainArgs(args: string[], gainDb: number | null): string[] {
  return withLoudnorm(args, gainDb === null ? "anull" : `volume=${gainDb.toFixed(2)}dB`);
}

/** loudnorm's own first pass, for its dynamic mode: the final args, loudnorm printing its measurement, into the null muxer. */
export function loudnormMeasureArgs(args: string[], target: LoudnormTarget): string[] {
  return measuringArgs(args, `loudnorm=${targetOptions(target)}:print_format=json`);
}

/** Pass 2 in loudnorm's dynamic mode, given its first pass's measurement (or `anull` without one). */
export function loudnormApplyArgs(args: string[], target: LoudnormTarget, measured: LoudnormMeasurement | null): string[] {
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
