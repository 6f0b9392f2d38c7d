/**
 * What is processed is what was billed. A job is priced on its inputs' durations as the upload's
 * probe read them from the container headers (MP4 `mvhd`, Matroska `Duration`, MP3 Xing), which a
 * file can state falsely: an hour of audio can claim one second. So every run reads each input for
 * at most its billed duration plus a small tolerance (`-t` in front of its `-i`, on both engines
 * and in the speech jobs), and a run whose result reaches past what was paid fails, and the job is
 * refunded, instead of delivering media nobody paid for.
 *
 * Shared by the Worker (src/) and the backend, runtime-neutral like protocol.ts.
 */

/** Slack past the billed duration: containers and decoders end a little after the stated length (a last frame, encoder priming). */
export function toleranceMs(billedMs: number): number {
  return 1000 + Math.ceil(billedMs / 100);
}

/** How long a run may read of an input billed for `billedMs` (the value of its `-t`), in seconds. */
export function inputBoundSeconds(billedMs: number): string {
  return ((billedMs + toleranceMs(billedMs)) / 1000).toFixed(3);
}

/**
 * The longest result that a run over inputs billed for `billedMs` (each) can honestly make: their
 * sum and half their tolerances. An input that held more than it was billed for is cut at its bound,
 * a whole tolerance past its duration, and pushes the result over this.
 */
export function maxProcessedMs(billedMs: readonly number[]): number {
  return billedMs.reduce((sum, ms) => sum + ms + Math.floor(toleranceMs(ms) / 2), 0);
}

/** The job's error when a run went past what was billed. */
export function overrunMessage(billedMs: number, processedMs: number): string {
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  return (
    `the media runs longer than the ${seconds(billedMs)} it was billed for (at least ${seconds(processedMs)} were read): its header understates its length. ` +
    "Remux it so that its header is right (for example ffmpeg -i input -c copy output.mp4) and upload it again"
  );
}

/** The file a bounded ffmpeg run reports its progress to (`-progress`), in its work directory. */
export const PROGRESS_FILE = "ffmpeg-progress.txt";

/** `-progress` in front of an argv (a global option), so the run reports how much media it wrote. */
export const withProgress = (args: string[]): string[] => ["-progress", PROGRESS_FILE, ...args];

/** The media time a run wrote (the last `out_time_us` of its progress report), in ms; undefined when none. */
export function progressOutTimeMs(report: string): number | undefined {
  const times = [...report.matchAll(/^out_time_us=(\d+)$/gm)].map((m) => Number(m[1]));
  const last = times.at(-1);
  return last === undefined ? undefined : Math.round(last / 1000);
}

/** A run that read past what its inputs were billed for; the job fails with this message and is refunded. */
export class OverrunError extends Error {
  override name = "OverrunError";
}

/**
 * Throws OverrunError when the run's progress report says it wrote more media than inputs billed for
 * `billedMs` can make (maxProcessedMs).
 * A run without a report (an output ffmpeg does not time, as a still image) is not judged here:
 * its inputs were bounded all the same.
 */
export function checkProcessed(billedMs: readonly number[], progressReport: string | undefined): void {
  const processedMs = progressReport === undefined ? undefined : progressOutTimeMs(progressReport);
  const billed = billedMs.reduce((sum, ms) => sum + ms, 0);
  if (processedMs !== undefined && processedMs > maxProcessedMs(billedMs))
    throw new OverrunError(overrunMessage(billed, processedMs));
}

/** Input options that already bound what ffmpeg reads of the next input (a trim's own cut). */
const BOUNDING = new Set(["-t", "-to"]);

/**
 * `args` with `-t <bound>` in front of each `-i` whose input has a bound (name -> billed ms),
 * unless the options of that input already bound it.
 */
export function boundInputs(args: string[], billedMs: Readonly<Record<string, number>>): string[] {
  const out: string[] = [];
  let optionsStart = 0;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "-i" && i + 1 < args.length) {
      const name = args[i + 1]!;
      const billed = billedMs[name];
      const alreadyBounded = args.slice(optionsStart, i).some((option) => BOUNDING.has(option));
      if (billed !== undefined && !alreadyBounded) out.push("-t", inputBoundSeconds(billed));
      out.push(arg, name);
      i++;
      optionsStart = i + 1;
      continue;
    }
    out.push(arg);
  }
  return out;
}
