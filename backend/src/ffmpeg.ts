/**
 * Native ffmpeg: spawn without a shell, keep the tail of stderr, stop it on abort (deadline or
 * shutdown), and turn a failure into a short message a user can read. The argv of a
 * loudness-normalised job's passes is loudness.ts's.
 */
import { spawn } from "node:child_process";
import { describeFfmpegLog } from "./ffmpeg-log.ts";

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

/** "ffmpeg exited with code 1: <last meaningful stderr lines>", or that the input is damaged. */
export function describeFfmpegFailure(run: FfmpegRun): string {
  const head =
    run.exitCode === null && run.signal
      ? `ffmpeg was killed by ${run.signal}`
      : `ffmpeg exited with code ${run.exitCode}`;
  return describeFfmpegLog(head, run.stderr);
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
