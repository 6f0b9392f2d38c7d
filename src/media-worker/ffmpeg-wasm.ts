/**
 * Runs one ffmpeg command on ffmpeg.wasm inside the current isolate (a Durable Object in
 * production, so one command at a time holds the isolate).
 *
 * Every call builds a fresh core: wasm memory only ever grows, so a reused core would keep
 * the peak of its largest job for the isolate's lifetime. Core creation is cheap (~20 ms)
 * because the module is compiled once per isolate.
 */
import { describeFfmpegLog } from "@media-credits/wire/ffmpeg-log";
import { FONTS_SUBDIR, isSafeFileName, UPLOAD_INPUT_OPTIONS } from "@media-credits/wire/protocol";
import { DecodeLimitError, OVERSIZED_FRAME } from "@media-credits/wire/decode-limits";
import { createFfmpegCore, type FFmpegCoreModule } from "../../wasm/ffmpeg-core";

export interface FfmpegWasmRequest {
  /** ffmpeg arguments without the program name; `-nostdin -y` are always prepended by the core. */
  args: string[];
  /** File name (no directories) -> contents. The arrays are handed over, not copied: do not mutate them. */
  inputs: Record<string, Uint8Array>;
  /** File names the command must produce; each one missing fails the run. */
  outputs: string[];
  /** Files read back when the command wrote them (a progress report), absent otherwise. */
  reports?: string[];
  /** The log to keep, characters (LOG_LIMIT_CHARS by default): more for a run whose every line is read. */
  logChars?: number;
  /**
   * Inputs this isolate wrote itself as raw samples (clean-audio's denoised sound), read with the
   * raw demuxer their args force rather than under the upload whitelist.
   */
  rawInputs?: string[];
}

export interface FfmpegWasmResult {
  outputs: Record<string, Uint8Array>;
  /** The `reports` the command wrote, as text. */
  reports: Record<string, string>;
  /** ffmpeg's stdout and stderr, interleaved, trimmed to its last {@link LOG_LIMIT_CHARS} characters. */
  log: string;
  exitCode: number;
  /** Size of the wasm heap after the run; the heap never shrinks, so this is its peak. */
  peakWasmBytes: number;
  /** A decoder refused frames over `-max_pixels` (packages/wire/src/decode-limits.ts), seen in the whole log. */
  oversizedFrames: boolean;
}

export type FfmpegFailure = "exit-code" | "missing-output" | "crashed";

/**
 * A failed ffmpeg run; `message` is fit for a job's error: the summary and the last meaningful
 * lines of ffmpeg's log, or that the input is damaged (packages/wire/src/ffmpeg-log.ts, as the backend says it).
 */
export class FfmpegError extends Error {
  readonly reason: FfmpegFailure;
  /** ffmpeg's exit code; -1 when the wasm trapped or aborted before ffmpeg could exit. */
  readonly exitCode: number;
  readonly peakWasmBytes: number;

  constructor(fields: {
    reason: FfmpegFailure;
    exitCode: number;
    log: string;
    summary: string;
    peakWasmBytes: number;
  }) {
    super(describeFfmpegLog(fields.summary, fields.log));
    this.name = "FfmpegError";
    this.reason = fields.reason;
    this.exitCode = fields.exitCode;
    this.peakWasmBytes = fields.peakWasmBytes;
  }
}

/** Bounds the log kept in memory and returned (progress lines accumulate on long jobs). */
export const LOG_LIMIT_CHARS = 64 * 1024;
/** MEMFS directory the command runs in, so relative names cannot clash with /dev or /tmp. */
const WORK_DIR = "/job";
/** A plain file name (the backend protocol's rule, as on the native backend), or one inside the fonts subdirectory. */
const isSafeName = (name: string) =>
  isSafeFileName(name.startsWith(`${FONTS_SUBDIR}/`) ? name.slice(FONTS_SUBDIR.length + 1) : name);

export async function runFfmpegWasm(request: FfmpegWasmRequest): Promise<FfmpegWasmResult> {
  const names = [...Object.keys(request.inputs), ...request.outputs, ...(request.reports ?? [])];
  const unsafe = names.find((name) => !isSafeName(name));
  if (unsafe !== undefined)
    throw new TypeError(`ffmpeg file name must be a plain file name: ${JSON.stringify(unsafe)}`);

  const core = await createFfmpegCore();
  const log = new LogCollector(request.logChars ?? LOG_LIMIT_CHARS);
  core.setLogger((entry) => log.add(entry.message));
  core.FS.mkdir(WORK_DIR);
  core.FS.chdir(WORK_DIR);
  if (names.some((name) => name.startsWith(`${FONTS_SUBDIR}/`))) core.FS.mkdir(FONTS_SUBDIR);
  for (const [name, data] of Object.entries(request.inputs)) {
    // canOwn lets MEMFS keep the caller's bytes instead of copying them: inputs are the
    // largest allocation of a job and memory is what limits the size of a wasm job.
    core.FS.writeFile(name, data, { canOwn: true });
  }

  const exitCode = execCatchingTraps(
    core,
    withUploadDemuxers(request.args, request.inputs, request.rawInputs ?? []),
    log,
  );
  // Read after exec: Emscripten replaces HEAPU8 with a larger view whenever memory grows.
  const peakWasmBytes = core.HEAPU8.byteLength;
  const fail = (reason: FfmpegFailure, summary: string) =>
    new FfmpegError({ reason, exitCode, log: log.text(), summary, peakWasmBytes });

  // Whatever else went wrong, frames over the pixel cap are the reason to give.
  if (exitCode !== 0 && log.oversizedFrames) throw new DecodeLimitError();
  if (exitCode === -1) throw fail("crashed", "ffmpeg crashed");
  if (exitCode !== 0) throw fail("exit-code", `ffmpeg exited with code ${exitCode}`);
  const outputs: Record<string, Uint8Array> = {};
  for (const name of request.outputs) {
    const data = readIfPresent(core, name);
    if (data === undefined || data.byteLength === 0) throw fail("missing-output", `ffmpeg produced no ${name}`);
    outputs[name] = data;
  }
  const reports: Record<string, string> = {};
  for (const name of request.reports ?? []) {
    const data = readIfPresent(core, name);
    if (data !== undefined) reports[name] = new TextDecoder().decode(data);
  }
  return { outputs, reports, log: log.text(), exitCode, peakWasmBytes, oversizedFrames: log.oversizedFrames };
}

/** Each input file read by an upload container's demuxer only, as on the backend (UPLOAD_DEMUXERS). */
function withUploadDemuxers(args: string[], files: Record<string, Uint8Array>, raw: string[]): string[] {
  return args.flatMap((arg, i) =>
    arg === "-i" && args[i + 1] !== undefined && Object.hasOwn(files, args[i + 1]!) && !raw.includes(args[i + 1]!)
      ? [...UPLOAD_INPUT_OPTIONS, arg]
      : [arg],
  );
}

/**
 * A wasm trap (out-of-bounds access, unreachable) escapes `exec` as an exception instead of
 * an exit code; it is recorded in the log and reported as exit code -1.
 */
function execCatchingTraps(core: FFmpegCoreModule, args: string[], log: LogCollector): number {
  try {
    return core.exec(...args);
  } catch (error) {
    log.add(`wasm trap: ${error instanceof Error ? error.message : String(error)}`);
    return -1;
  }
}

function readIfPresent(core: FFmpegCoreModule, name: string): Uint8Array | undefined {
  try {
    return core.FS.readFile(name);
  } catch {
    return undefined;
  }
}

/** Keeps the most recent log lines within a character budget. */
class LogCollector {
  private lines: string[] = [];
  private chars = 0;
  /** Noted as lines arrive: the line may have left the kept tail by the end of a long run. */
  oversizedFrames = false;

  constructor(private readonly limit: number) {}

  add(message: string): void {
    // Emscripten prints "Aborted()" whenever ffmpeg exits, successfully or not.
    if (message === "Aborted()") return;
    if (OVERSIZED_FRAME.test(message)) this.oversizedFrames = true;
    this.lines.push(message);
    this.chars += message.length + 1;
    while (this.chars > this.limit && this.lines.length > 1) {
      this.chars -= this.lines.shift()!.length + 1;
    }
  }

  text(): string {
    return this.lines.join("\n");
  }
}
