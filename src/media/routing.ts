/**
 * Which engine runs a command. Production isolates have 128 MB and limited CPU per request,
 * and ffmpeg.wasm holds inputs and outputs in memory and runs 2-5x slower than native on
 * re-encodes (FACTS.md). So the in-Worker engine takes a job only when its memory (wasm heap
 * of the encoder settings + inputs + estimated output) fits the budget and its estimated CPU
 * time fits the limit; everything else goes to the container backend. Local workerd enforces
 * neither limit, so this decision is the only guard.
 */
import type { MediaCommand, MediaInput } from "./tools/command";

export const DEFAULT_WASM_MEMORY_BUDGET_BYTES = 112 * 1024 * 1024;
export const DEFAULT_WASM_MAX_CPU_SECONDS = 20;

export type Engine = "wasm" | "backend";

export interface RoutingDecision {
  engine: Engine;
  reason: string;
  memoryBytes: number;
  cpuSeconds: number;
}

const HD_PIXELS = 1280 * 720;

/** Estimated wasm CPU seconds: re-encodes scale with pixels x duration (x264 ~1.7 s per 720p second on wasm), copies are cheap. */
export function estimateWasmCpuSeconds(command: MediaCommand, inputs: MediaInput[]): number {
  const reencodesVideo = command.wasmHeapBytes > 40 * 1024 * 1024;
  return inputs.reduce((sum, input) => {
    const seconds = input.probe.durationMs / 1000;
    if (!reencodesVideo || !input.probe.hasVideo) return sum + seconds * 0.05;
    const pixels = (input.probe.width ?? 1280) * (input.probe.height ?? 720);
    return sum + seconds * 1.7 * Math.max(0.1, pixels / HD_PIXELS);
  }, 0);
}

/** The limits of the in-Worker engine; `forced` pins one engine (tests, benchmarks). */
export interface RoutingConfig {
  memoryBudgetBytes: number;
  maxCpuSeconds: number;
  forced?: Engine;
}

export const defaultRoutingConfig: RoutingConfig = { memoryBudgetBytes: DEFAULT_WASM_MEMORY_BUDGET_BYTES, maxCpuSeconds: DEFAULT_WASM_MAX_CPU_SECONDS };

export function chooseEngine(config: RoutingConfig, command: MediaCommand, inputs: MediaInput[], backendAvailable: boolean): RoutingDecision {
  const budget = config.memoryBudgetBytes;
  const maxCpu = config.maxCpuSeconds;
  const inputBytes = inputs.reduce((sum, input) => sum + input.sizeBytes, 0);
  // The output is rarely larger than the inputs; aux files and fonts are small but counted.
  const auxBytes = Object.values(command.files).reduce((sum, f) => sum + f.byteLength, 0) + command.fonts.length * 400_000;
  const memoryBytes = command.wasmHeapBytes + 2 * inputBytes + auxBytes;
  const cpuSeconds = estimateWasmCpuSeconds(command, inputs);
  const forced = config.forced;
  const decide = (engine: Engine, reason: string): RoutingDecision => ({ engine, reason, memoryBytes, cpuSeconds });

  if (forced === "backend") return decide("backend", "forced by MEDIA_ENGINE");
  if (forced === "wasm") return decide("wasm", "forced by MEDIA_ENGINE");
  if (!command.wasmCapable) return decide("backend", "settings ffmpeg.wasm cannot run");
  // libopus in @ffmpeg/core 0.12.10 overflows its stack on 48 kHz stereo (upstream #591, fixed after this release).
  if (command.args.includes("libopus")) return decide("backend", "libopus crashes ffmpeg.wasm 0.12.10");
  if (memoryBytes > budget) return decide("backend", `memory ${memoryBytes} > budget ${budget}`);
  if (cpuSeconds > maxCpu) return decide("backend", `cpu ${cpuSeconds.toFixed(1)} s > ${maxCpu} s`);
  void backendAvailable;
  return decide("wasm", "fits the in-Worker limits");
}
