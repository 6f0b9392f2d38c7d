/**
 * A tool's MediaCommand on ffmpeg.wasm in this isolate: its `args` in one run, or, for a command
 * that normalises loudness (`wasmLoudness`), a measuring run and then the run that applies the
 * measured gain. Both runs take the same input arrays (MEMFS only reads them).
 */
import { checkProcessed, PROGRESS_FILE } from "@media-credits/wire/billed-duration";
import { DecodeLimitError } from "@media-credits/wire/decode-limits";
import { gainArgs, loudnessMeterArgs, parseLoudnessMeasurement, peakSafeGainDb } from "@media-credits/wire/loudness";
import { type FfmpegWasmResult, runFfmpegWasm } from "./ffmpeg-wasm";
import type { MediaCommand } from "../media/commands/command";

/**
 * Runs the command; a result longer than its inputs were billed for (`billedInputsMs`, from the run's
 * progress report) throws OverrunError, and frames refused over the pixel cap DecodeLimitError, as
 * the backend fails such jobs (packages/wire/src/billed-duration.ts, packages/wire/src/decode-limits.ts).
 */
export async function runCommandOnWasm(
  command: MediaCommand,
  files: Record<string, Uint8Array>,
): Promise<FfmpegWasmResult> {
  const result = await runPasses(command, files);
  if (result.oversizedFrames) throw new DecodeLimitError();
  if (command.billedInputsMs !== undefined) checkProcessed(command.billedInputsMs, result.reports[PROGRESS_FILE]);
  const { finish } = command;
  if (!finish) return result;
  // The finish pass reads what the command wrote (its `finish.input`) and writes the output.
  const finished = await runFfmpegWasm({
    args: finish.args,
    inputs: { [finish.input]: result.outputs[finish.input]! },
    outputs: [command.outputName],
  });
  return {
    ...finished,
    reports: result.reports,
    peakWasmBytes: Math.max(result.peakWasmBytes, finished.peakWasmBytes),
  };
}

async function runPasses(command: MediaCommand, files: Record<string, Uint8Array>): Promise<FfmpegWasmResult> {
  const outputs = [command.finish?.input ?? command.outputName];
  const reports = [PROGRESS_FILE];
  const passes = command.wasmLoudness;
  if (!passes) return runFfmpegWasm({ args: command.args, inputs: files, outputs, reports });
  const meter = await runFfmpegWasm({
    args: loudnessMeterArgs(passes.args, passes.measureArgs),
    inputs: files,
    outputs: [],
  });
  const measured = parseLoudnessMeasurement(meter.log);
  const args = gainArgs(passes.args, measured ? peakSafeGainDb(passes.loudnorm, measured) : null);
  const result = await runFfmpegWasm({ args, inputs: files, outputs, reports });
  return {
    ...result,
    peakWasmBytes: Math.max(result.peakWasmBytes, meter.peakWasmBytes),
    oversizedFrames: result.oversizedFrames || meter.oversizedFrames,
  };
}
