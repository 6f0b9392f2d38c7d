/**
 * Which engine runs a command: the one predicted to finish first (ffmpeg.wasm here, or the
 * container backend), from calibrations measured where the product runs; hard limits (settings
 * wasm cannot run, the isolate's memory budget, the CPU limit) come first whatever the prediction.
 * Local workerd enforces neither memory nor CPU, so this decision is the only guard.
 * Why a race, and the calibration: docs/decisions/0002-engine-routing.md.
 */
import { progressiveInputs, type MediaCommand, type MediaInput } from "../media/commands/command";

export const DEFAULT_WASM_MEMORY_BUDGET_BYTES = 112 * 1024 * 1024;
export const DEFAULT_WASM_MAX_CPU_SECONDS = 20;

export type Engine = "wasm" | "backend";

export interface RoutingDecision {
  engine: Engine;
  reason: string;
  memoryBytes: number;
  /** Predicted isolate CPU seconds on ffmpeg.wasm (the figure the CPU limit applies to). */
  cpuSeconds: number;
  /** Predicted seconds from dispatch to stored result, per engine. */
  wasmSeconds: number;
  backendSeconds: number;
}

/** The work in a command, as the calibration counts it. */
export interface Workload {
  /** "copy": packets only; "audio": audio decode/filter/encode, video copied or absent; else the video encoder. */
  kind: "copy" | "audio" | "x264" | "vp8" | "mpeg4";
  /** Megapixel-seconds of video encoded (output frame size x output duration). */
  megapixelSeconds: number;
  /** Seconds of media processed. */
  mediaSeconds: number;
  /** The filter graph draws on frames (drawtext, subtitles/ass, overlay). */
  draws: boolean;
  inputBytes: number;
}

/**
 * Calibration, 2 cores (AMD EPYC), wrangler 4.164 / workerd, native ffmpeg 5.1 (Debian 12),
 * measured 2026-11-23 by bench/calibrate.ts (720p 10 s clip and 10 s speech through the API,
 * every case forced onto each engine; table in bench/README.md). Seconds per unit of work. The
 * production backend (4 vCPU or a GPU host) is faster than this one, so the backend side is a
 * conservative estimate there.
 */
export const CALIBRATION = {
  wasm: {
    /** Object wake, core creation, input read from R2 and result write. */
    startSeconds: 0.1,
    copyBytesPerSecond: 40e6,
    audioPerMediaSecond: 0.02,
    /** x264 veryfast 1.65-2.3 (trim 2.29, merge 2.04, drawtext 1.72, subtitles 1.65); VP8 and MPEG-4 from FACTS.md. */
    perMegapixelSecond: { x264: 2.0, vp8: 0.8, mpeg4: 0.45 },
    /** Image overlay 2.54 against 2.0: drawing filters cost up to a quarter more. */
    drawFactor: 1.25,
  },
  native: {
    /** ffmpeg process start and probe of the inputs. */
    startSeconds: 0.1,
    copyBytesPerSecond: 400e6,
    audioPerMediaSecond: 0.01,
    perMegapixelSecond: { x264: 0.38, vp8: 0.32, mpeg4: 0.08 },
    drawFactor: 1.15,
  },
  backend: {
    /** Request, the backend's queue, the signed callback and the Durable Object's wake (backend - native: 0.2-0.5 s). */
    dispatchSeconds: 0.25,
    /** Storage <-> backend, each way (Worker-served signed URLs locally; presigned R2 in production). */
    transferBytesPerSecond: 100e6,
  },
} as const;

const VIDEO_ENCODERS: Record<string, Workload["kind"]> = { libx264: "x264", libvpx: "vp8", mpeg4: "mpeg4" };
const DRAWING_FILTER = /(^|[,;\]])\s*(drawtext|subtitles|ass|overlay)\b/;

function optionValue(args: string[], option: string): string | undefined {
  const at = args.lastIndexOf(option);
  return at >= 0 ? args[at + 1] : undefined;
}

/** What a command does, read from its arguments and its inputs' probes. */
export function workloadOf(command: MediaCommand, inputs: MediaInput[]): Workload {
  const args = command.args;
  const encoder = optionValue(args, "-c:v") ?? optionValue(args, "-vcodec");
  const videoKind = encoder ? VIDEO_ENCODERS[encoder] : undefined;
  const inputSeconds = inputs.reduce((sum, input) => sum + input.probe.durationMs / 1000, 0);
  const limit = Number(optionValue(args, "-t"));
  const mediaSeconds = Number.isFinite(limit) && limit > 0 ? Math.min(limit, inputSeconds) : inputSeconds;
  const inputBytes = inputs.reduce((sum, input) => sum + input.sizeBytes, 0);
  const graph = [optionValue(args, "-filter_complex"), optionValue(args, "-vf"), optionValue(args, "-filter:v")]
    .filter(Boolean)
    .join(";");
  const draws = DRAWING_FILTER.test(graph);
  if (videoKind) {
    const first = inputs.find((input) => input.probe.hasVideo)?.probe;
    const pixels = (first?.width ?? 1280) * (first?.height ?? 720);
    return { kind: videoKind, megapixelSeconds: (pixels / 1e6) * mediaSeconds, mediaSeconds, draws, inputBytes };
  }
  const audioCodec = optionValue(args, "-c:a") ?? optionValue(args, "-acodec") ?? optionValue(args, "-c");
  const filtersAudio = ["-af", "-filter:a", "-filter_complex"].some((option) => args.includes(option));
  const copiesOnly = (audioCodec === "copy" || args.includes("-an")) && !filtersAudio;
  return { kind: copiesOnly ? "copy" : "audio", megapixelSeconds: 0, mediaSeconds, draws: false, inputBytes };
}

function engineSeconds(side: typeof CALIBRATION.wasm | typeof CALIBRATION.native, work: Workload): number {
  switch (work.kind) {
    case "copy":
      return work.inputBytes / side.copyBytesPerSecond;
    case "audio":
      return work.mediaSeconds * side.audioPerMediaSecond + work.inputBytes / side.copyBytesPerSecond;
    default:
      return work.megapixelSeconds * side.perMegapixelSecond[work.kind] * (work.draws ? side.drawFactor : 1);
  }
}

/** RNNoise's time per second of one channel on the backend (packages/wire/src/rnnoise.ts): 0.015 measured in Node, with margin. */
const RNNOISE_SECONDS_PER_CHANNEL_SECOND = 0.02;

/** Predicted seconds from dispatch to stored result on each engine. */
export function predictSeconds(
  command: MediaCommand,
  inputs: MediaInput[],
): { wasm: number; backend: number; wasmCpu: number } {
  const work = workloadOf(command, inputs);
  // A loudness-normalised command runs twice on ffmpeg.wasm: a measuring run, then the real one.
  const denoise = command.denoise
    ? work.mediaSeconds * command.denoise.channels * RNNOISE_SECONDS_PER_CHANNEL_SECOND
    : 0;
  const wasmCpu = engineSeconds(CALIBRATION.wasm, work) * (command.wasmLoudness ? 2 : 1);
  const native = engineSeconds(CALIBRATION.native, work) + denoise;
  // Inputs read over HTTP (streamed) or while they download (progressive) arrive as ffmpeg works,
  // whichever is slower setting the pace; the others are downloaded before it starts.
  const streamed = command.backendStreaming;
  const progressive = progressiveInputs(command, inputs);
  let overlappedBytes = 0;
  let firstBytes = 0;
  for (const input of inputs) {
    if (streamed && input.name in streamed.inputs) overlappedBytes += input.sizeBytes * streamed.readFraction;
    else if (input.name in progressive) overlappedBytes += input.sizeBytes;
    else firstBytes += input.sizeBytes;
  }
  const rate = CALIBRATION.backend.transferBytesPerSecond;
  const downloadAndRun = firstBytes / rate + Math.max(overlappedBytes / rate, native);
  // The output is rarely larger than what is read of the inputs: count it as that.
  const upload = (overlappedBytes + firstBytes) / rate;
  return {
    wasm: CALIBRATION.wasm.startSeconds + wasmCpu,
    backend: CALIBRATION.backend.dispatchSeconds + CALIBRATION.native.startSeconds + downloadAndRun + upload,
    wasmCpu,
  };
}

/** The limits of the in-Worker engine; `forced` pins one engine (tests, benchmarks). */
export interface RoutingConfig {
  memoryBudgetBytes: number;
  maxCpuSeconds: number;
  forced?: Engine;
}

export const defaultRoutingConfig: RoutingConfig = {
  memoryBudgetBytes: DEFAULT_WASM_MEMORY_BUDGET_BYTES,
  maxCpuSeconds: DEFAULT_WASM_MAX_CPU_SECONDS,
};

export function chooseEngine(
  config: RoutingConfig,
  command: MediaCommand,
  inputs: MediaInput[],
  backendAvailable: boolean,
): RoutingDecision {
  const budget = config.memoryBudgetBytes;
  const maxCpu = config.maxCpuSeconds;
  const inputBytes = inputs.reduce((sum, input) => sum + input.sizeBytes, 0);
  // The output is rarely larger than the inputs; aux files and fonts are small but counted.
  const auxBytes =
    Object.values(command.files).reduce((sum, f) => sum + f.byteLength, 0) + command.fonts.length * 400_000;
  const memoryBytes = command.wasmHeapBytes + 2 * inputBytes + auxBytes;
  const predicted = predictSeconds(command, inputs);
  const decide = (engine: Engine, reason: string): RoutingDecision => ({
    engine,
    reason,
    memoryBytes,
    cpuSeconds: predicted.wasmCpu,
    wasmSeconds: predicted.wasm,
    backendSeconds: predicted.backend,
  });
  const race = `predicted wasm ${predicted.wasm.toFixed(1)} s, backend ${predicted.backend.toFixed(1)} s`;

  if (config.forced === "backend") return decide("backend", "forced by MEDIA_ENGINE");
  if (config.forced === "wasm") return decide("wasm", "forced by MEDIA_ENGINE");
  if (!command.wasmCapable) return decide("backend", "settings ffmpeg.wasm cannot run");
  // libopus in @ffmpeg/core 0.12.10 overflows its stack on 48 kHz stereo (upstream #591, fixed after this release).
  if (command.args.includes("libopus")) return decide("backend", "libopus crashes ffmpeg.wasm 0.12.10");
  if (memoryBytes > budget) return decide("backend", `memory ${memoryBytes} > budget ${budget}`);
  if (predicted.wasmCpu > maxCpu) return decide("backend", `cpu ${predicted.wasmCpu.toFixed(1)} s > ${maxCpu} s`);
  if (!backendAvailable) return decide("wasm", "fits the in-Worker limits; no backend configured");
  // RNNoise's wasm does not fit beside ffmpeg.wasm under the Worker's 10 MiB (wasm-command.ts).
  if (command.denoise) return decide("backend", "RNNoise runs on the backend only");
  if (predicted.backend < predicted.wasm) return decide("backend", `faster: ${race}`);
  return decide("wasm", `faster: ${race}`);
}
