/**
 * A tool's MediaCommand on ffmpeg.wasm in this isolate: its `args` in one run, or, for a command
 * that normalises loudness (`wasmLoudness`), a measuring run and then the run that applies the
 * measured gain. Both runs take the same input arrays (MEMFS only reads them).
 */
import { checkProcessed, PROGRESS_FILE } from "@media-credits/wire/billed-duration";
import { DecodeLimitError } from "@media-credits/wire/decode-limits";
import { gainArgs, loudnessMeterArgs, parseLoudnessMeasurement, peakSafeGainDb } from "@media-credits/wire/loudness";
import { type AudioReport, withAudioReport } from "@media-credits/wire/audio-report";
import type { DenoisePass } from "@media-credits/wire/protocol";
import { type FfmpegWasmResult, runFfmpegWasm } from "./ffmpeg-wasm";
import { commandWrites, type MediaCommand } from "../media/commands/command";

export type WasmCommandResult = FfmpegWasmResult & { report?: AudioReport };

/**
 * Runs the command; a result longer than its inputs were billed for (`billedInputsMs`, from the run's
 * progress report) throws OverrunError, and frames refused over the pixel cap DecodeLimitError, as
 * the backend fails such jobs (packages/wire/src/billed-duration.ts, packages/wire/src/decode-limits.ts).
 */
export async function runCommandOnWasm(
  command: MediaCommand,
  files: Record<string, Uint8Array>,
): Promise<WasmCommandResult> {
  const { result, report } = await runReported(command, files);
  if (result.oversizedFrames) throw new DecodeLimitError();
  const { finish } = command;
  if (!finish) return { ...result, report };
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
    report,
  };
}

/**
 * The command's own passes, checked against the billed duration, and around them the runs of its
 * report when it asks for one (packages/wire/src/audio-report.ts): each a fresh core over the files
 * it names, what it writes kept for the runs after it.
 */
async function runReported(
  command: MediaCommand,
  files: Record<string, Uint8Array>,
): Promise<{ result: FfmpegWasmResult; report?: AudioReport }> {
  const passes = async () => {
    const result = await runPasses(command, files);
    if (command.billedInputsMs !== undefined) checkProcessed(command.billedInputsMs, result.reports[PROGRESS_FILE]);
    return result;
  };
  const pass = command.audioReport;
  if (!pass) return { result: await passes() };
  const written = { ...files };
  let result: FfmpegWasmResult | undefined;
  let peakWasmBytes = 0;
  const run = async (args: string[], _phase: string, logChars?: number) => {
    const reads = args.filter((_arg, i) => args[i - 1] === "-i");
    const output = args.at(-1);
    const ran = await runFfmpegWasm({
      args,
      inputs: Object.fromEntries(reads.map((name) => [name, written[name]!])),
      outputs: output === undefined || output === "-" ? [] : [output],
      logChars,
    });
    peakWasmBytes = Math.max(peakWasmBytes, ran.peakWasmBytes);
    Object.assign(written, ran.outputs);
    return { stderr: ran.log };
  };
  const resultName = pass.silence?.output ?? commandWrites(command);
  const report = await withAudioReport(pass, resultName, run, async () => {
    result = await passes();
    Object.assign(written, result.outputs);
  });
  if (!result) throw new TypeError("the command did not run");
  return {
    result: {
      ...result,
      outputs: { [resultName]: written[resultName]! },
      peakWasmBytes: Math.max(result.peakWasmBytes, peakWasmBytes),
    },
    report,
  };
}

/**
 * clean-audio's denoise pass (protocol: DenoisePassSchema) without RNNoise: its wasm (100 KB
 * gzipped) does not fit beside ffmpeg.wasm in the media Worker's 10 MiB (10,271 KiB measured with
 * it, test/e2e/deploy-size.test.ts), so routing sends such commands to the backend whenever there
 * is one. Here, without one, the sound is decoded as the pass asks and goes on undenoised: the
 * graph's fixed-floor afftdn passes then do the cleaning, as before RNNoise (docs/decisions/0006-clean-audio-chain.md).
 */
async function decodedForDenoiser(
  pass: DenoisePass,
  files: Record<string, Uint8Array>,
): Promise<Record<string, Uint8Array>> {
  const decoded = await runFfmpegWasm({ args: pass.args, inputs: files, outputs: [pass.writes] });
  return { ...files, [pass.writes]: decoded.outputs[pass.writes]! };
}

async function runPasses(command: MediaCommand, given: Record<string, Uint8Array>): Promise<FfmpegWasmResult> {
  const files = command.denoise ? await decodedForDenoiser(command.denoise, given) : given;
  const outputs = [commandWrites(command)];
  const reports = [PROGRESS_FILE];
  const rawInputs = command.denoise ? [command.denoise.writes] : [];
  const passes = command.wasmLoudness;
  if (!passes) return runFfmpegWasm({ args: command.args, inputs: files, outputs, reports, rawInputs });
  const meter = await runFfmpegWasm({
    args: loudnessMeterArgs(passes.args, passes.measureArgs),
    inputs: files,
    outputs: [],
    rawInputs,
  });
  const measured = parseLoudnessMeasurement(meter.log);
  const args = gainArgs(passes.args, measured ? peakSafeGainDb(passes.loudnorm, measured) : null);
  const result = await runFfmpegWasm({ args, inputs: files, outputs, reports, rawInputs });
  return {
    ...result,
    peakWasmBytes: Math.max(result.peakWasmBytes, meter.peakWasmBytes),
    oversizedFrames: result.oversizedFrames || meter.oversizedFrames,
  };
}
