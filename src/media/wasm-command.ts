/**
 * A tool's MediaCommand on ffmpeg.wasm in this isolate: its `args` in one run, or, for a command
 * that normalises loudness (`wasmLoudness`), a measuring run and then the run that applies the
 * measured gain. Both runs take the same input arrays (MEMFS only reads them).
 */
import { gainArgs, loudnessMeterArgs, parseLoudnessMeasurement, peakSafeGainDb } from "../../backend/src/loudness.ts";
import { type FfmpegWasmResult, runFfmpegWasm } from "./ffmpeg-wasm";
import type { MediaCommand } from "./tools/command";

export async function runCommandOnWasm(command: MediaCommand, files: Record<string, Uint8Array>): Promise<FfmpegWasmResult> {
  const outputs = [command.outputName];
  const passes = command.wasmLoudness;
  if (!passes) return runFfmpegWasm({ args: command.args, inputs: files, outputs });
  const meter = await runFfmpegWasm({ args: loudnessMeterArgs(passes.args, passes.measureArgs), inputs: files, outputs: [] });
  const measured = parseLoudnessMeasurement(meter.log);
  const args = gainArgs(passes.args, measured ? peakSafeGainDb(passes.loudnorm, measured) : null);
  const result = await runFfmpegWasm({ args, inputs: files, outputs });
  return { ...result, peakWasmBytes: Math.max(result.peakWasmBytes, meter.peakWasmBytes) };
}
