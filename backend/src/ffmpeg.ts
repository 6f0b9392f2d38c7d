/**
 * Native ffmpeg: spawn without a shell, keep the tail of stderr, stop it on abort (deadline or
 * shutdown), and turn a failure into a short message a user can read. The argv of a
 * loudness-normalised job's passes is loudness.ts's.
 */
import { spawn } from "node:child_process";
import { describeFfmpegLog } from "@media-credits/wire/ffmpeg-log";
import { OVERSIZED_FRAME } from "@media-credits/wire/decode-limits";

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
  /** A decoder refused frames over `-max_pixels` (decode-limits.ts), seen anywhere in stderr. */
  oversizedFrames: boolean;
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
  /** Address space the process may reserve (prlimit --as); 0 or undefined: none. */
  memoryLimitBytes?: number;
  /** Threads each decoder, filter graph and encoder may start (threadCapped); undefined: ffmpeg's own choice. */
  threads?: number;
}

/**
 * `args` with every thread pool capped at `threads`: each input's decoder (`-threads` before its
 * `-i`), the filter graphs, and the output's encoder unless the command chose its own count.
 * ffmpeg sizes them from the host's cores (x264: 1.5 per core), and every thread holds frames: a
 * 4K x264 encode under the 3 GiB address-space limit passes with 8 threads and fails with 16, what
 * an 11-core host would pick (malloc of 44 MB refused). So the limit holds on any host.
 */
export function threadCapped(args: string[], threads: number): string[] {
  const count = String(threads);
  const lastInput = args.lastIndexOf("-i");
  const encoderChosen = args.some((arg, i) => arg === "-threads" && i > lastInput);
  const out = ["-filter_threads", count, "-filter_complex_threads", count];
  args.forEach((arg, i) => {
    if (arg === "-i") out.push("-threads", count);
    if (i === args.length - 1 && !encoderChosen) out.push("-threads", count);
    out.push(arg);
  });
  return out;
}

/**
 * The program and argv that run ffmpeg under an address-space limit: util-linux's prlimit (on
 * every Debian system) sets RLIMIT_AS and execs ffmpeg, so the child is ffmpeg itself. A file that
 * makes ffmpeg ask for more fails that run alone instead of the container running out of memory.
 */
export function limitedCommand(
  program: string,
  args: string[],
  memoryLimitBytes: number | undefined,
): [string, string[]] {
  if (!memoryLimitBytes) return [program, args];
  return ["prlimit", [`--as=${memoryLimitBytes}`, "--", program, ...args]];
}

/** glibc keeps a reserved arena per thread by default; two keep the address space within the limit. */
export const LIMITED_ENV = { MALLOC_ARENA_MAX: "2" };

export class FfmpegStartError extends Error {}

export function runFfmpeg(options: FfmpegOptions): Promise<FfmpegRun> {
  const started = Date.now();
  const { signal } = options;
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      resolve({ exitCode: null, signal: null, stderr: "", oversizedFrames: false, aborted: true, durationMs: 0 });
      return;
    }
    const args = options.threads ? threadCapped(options.args, options.threads) : options.args;
    const [program, argv] = limitedCommand(options.ffmpegPath, ["-nostdin", ...args], options.memoryLimitBytes);
    const child = spawn(program, argv, {
      cwd: options.cwd,
      env: { ...(options.env ?? process.env), ...(options.memoryLimitBytes ? LIMITED_ENV : {}) },
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
    // The refusal line is looked for as stderr arrives (it may leave the kept tail); a line split
    // between two chunks is found in their join.
    let oversizedFrames = false;
    let carry = "";
    child.stderr.on("data", (chunk: Buffer) => {
      tail.push(chunk);
      if (oversizedFrames) return;
      const text = carry + chunk.toString("latin1");
      oversizedFrames = OVERSIZED_FRAME.test(text);
      carry = text.slice(-200);
    });
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
        oversizedFrames,
        aborted,
        durationMs: Date.now() - started,
      });
    });
  });
}

/** "ffmpeg exited with code 1: <last meaningful stderr lines>", or that the input is damaged. */
export function describeFfmpegFailure(
  run: Pick<FfmpegRun, "exitCode" | "signal" | "stderr"> & Partial<FfmpegRun>,
): string {
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
