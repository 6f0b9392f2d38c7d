/**
 * What clean-audio reports with its result, on both engines (the backend's native ffmpeg and
 * ffmpeg.wasm in the media Worker): the loudness of the source and of the result, and, when the
 * request removes silences, the pauses it cut. The silences are found in the cleaned audio (its
 * noise already gone, so a pause is a pause whatever the recording's noise), then cut from picture
 * and sound at the same instants, so they stay in sync. No Node API here.
 */
import { parseLoudnessMeasurement } from "./loudness.ts";
import type { AudioReport, AudioReportPass, SilenceCut, SilencePass } from "./protocol.ts";
import { parseSilences, planCuts, removedSeconds, silenceCutArgs, silenceDetectArgs } from "./silence.ts";

export type { AudioReport, AudioReportPass, SilenceCut, SilencePass };

const EBUR128 = "ebur128=peak=true:framelog=verbose";

/** ffmpeg's EBU R128 meter over the first audio stream of `input`, into the null muxer. */
export function loudnessMeterOf(input: string): string[] {
  return ["-hide_banner", "-nostats", "-i", input, "-map", "0:a:0", "-af", EBUR128, "-f", "null", "-"];
}

/** Room for the pause lines of a long recording (about 130 characters a pause) in the log a run keeps. */
export const SILENCE_LOG_CHARS = 1024 * 1024;

/** What a run of ffmpeg gives back (its stderr, at least its last `logChars` characters). */
export type RunFfmpeg = (args: string[], phase: string, logChars?: number) => Promise<{ stderr: string }>;

/** Finds the pauses of the pass's input, cuts them into its output, and says what went. */
export async function runSilencePass(pass: SilencePass, run: RunFfmpeg): Promise<NonNullable<AudioReport["silence"]>> {
  const detected = await run(silenceDetectArgs(pass), "finding the pauses (ffmpeg)", SILENCE_LOG_CHARS);
  const cuts = planCuts(parseSilences(detected.stderr), pass, pass.durationSeconds);
  await run(silenceCutArgs(pass, cuts), "cutting the pauses (ffmpeg)");
  return { removedSeconds: removedSeconds(cuts), cuts };
}

/**
 * The report around a command's own run: the source's loudness first, then the command
 * (`runCommand`, writing `pass.silence.input` when there are pauses to cut), the silence pass,
 * and the result's loudness (`resultName`, the file the command or the silence pass wrote).
 */
export async function withAudioReport(
  pass: AudioReportPass,
  resultName: string,
  run: RunFfmpeg,
  runCommand: () => Promise<void>,
): Promise<AudioReport> {
  const meter = async (args: string[], phase: string) => parseLoudnessMeasurement((await run(args, phase)).stderr);
  const before = await meter(pass.sourceMeterArgs, "measuring the source's loudness (ffmpeg)");
  await runCommand();
  const silence = pass.silence ? await runSilencePass(pass.silence, run) : undefined;
  const after = await meter(loudnessMeterOf(resultName), "measuring the result's loudness (ffmpeg)");
  return { loudness: { before, after }, ...(silence ? { silence } : {}) };
}
