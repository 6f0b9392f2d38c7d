/**
 * Child processes of the speech engines (pocketsphinx, pico2wave, rubberband, ffmpeg): spawned
 * without a shell, stopped with SIGKILL on abort (deadline, shutdown), stdout collected (bounded),
 * the tail of stderr kept for the error message.
 */
import { spawn } from "node:child_process";
import { access, constants } from "node:fs/promises";
import path from "node:path";
import { limitedCommand, LIMITED_ENV, TailBuffer } from "../ffmpeg.ts";
import { summarizeFfmpegLog } from "@media-credits/wire/ffmpeg-log";
import { UPLOAD_INPUT_OPTIONS } from "@media-credits/wire/protocol";

/** A speech job's expected failure; its message is shown to the user (no URL, no secret). */
export class SpeechError extends Error {}

export interface ToolRun {
  stdout: string;
  stderr: string;
  durationMs: number;
}

export interface ToolOptions {
  cwd?: string;
  signal?: AbortSignal;
  env?: NodeJS.ProcessEnv;
  /** stdout kept at most (bytes); more fails the run. */
  maxStdout?: number;
  /** Name in error messages (default: the program's base name). */
  label?: string;
  /** Kill the program after this long and fail with a SpeechError (a hung engine must not hold a slot). */
  timeoutMs?: number;
  /** Address space the program may reserve (prlimit, as the backend's own ffmpeg runs: ffmpeg.ts). */
  memoryLimitBytes?: number;
}

/** Runs `program args`; resolves on exit code 0, otherwise rejects with a SpeechError. */
export function runTool(program: string, args: string[], options: ToolOptions = {}): Promise<ToolRun> {
  const label = options.label ?? path.basename(program);
  const started = Date.now();
  const { signal } = options;
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const [limited, argv] = limitedCommand(program, args, options.memoryLimitBytes);
    const child = spawn(limited, argv, {
      cwd: options.cwd,
      env: { ...(options.env ?? process.env), ...(options.memoryLimitBytes ? LIMITED_ENV : {}) },
      stdio: ["ignore", "pipe", "pipe"],
      shell: false,
      windowsHide: true,
    });
    const maxStdout = options.maxStdout ?? 64 * 1024 * 1024;
    const out: Buffer[] = [];
    let outBytes = 0;
    let overflow = false;
    const tail = new TailBuffer(16 * 1024);
    let settled = false;
    const onAbort = () => child.kill("SIGKILL");
    signal?.addEventListener("abort", onAbort, { once: true });
    let timedOut = false;
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            child.kill("SIGKILL");
          }, options.timeoutMs);
    child.stdout.on("data", (chunk: Buffer) => {
      outBytes += chunk.length;
      if (outBytes > maxStdout) {
        overflow = true;
        child.kill("SIGKILL");
      } else out.push(chunk);
    });
    child.stderr.on("data", (chunk: Buffer) => tail.push(chunk));
    child.once("error", (err: NodeJS.ErrnoException) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      reject(new SpeechError(`${label} could not be started (${err.code ?? err.message})`));
    });
    child.once("close", (code, exitSignal) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      if (signal?.aborted) return reject(signal.reason);
      if (timedOut)
        return reject(new SpeechError(`${label} did not finish within ${Math.ceil(options.timeoutMs! / 1000)} s`));
      const stderr = tail.toString();
      if (overflow) return reject(new SpeechError(`${label} wrote more than ${maxStdout} bytes`));
      if (code !== 0) {
        const summary = summarizeFfmpegLog(stderr, 3, 600);
        const head = code === null ? `${label} was killed by ${exitSignal}` : `${label} exited with code ${code}`;
        return reject(new SpeechError(summary ? `${head}: ${summary}` : head));
      }
      resolve({ stdout: Buffer.concat(out).toString("utf8"), stderr, durationMs: Date.now() - started });
    });
  });
}

/** Whether `program` (a path, or a name looked up on PATH) is an executable file. */
export async function hasProgram(program: string, env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  const candidates = program.includes("/")
    ? [program]
    : (env.PATH ?? "/usr/bin:/bin")
        .split(path.delimiter)
        .filter(Boolean)
        .map((dir) => path.join(dir, program));
  for (const file of candidates) {
    try {
      await access(file, constants.X_OK);
      return true;
    } catch {
      // next
    }
  }
  return false;
}

/** Media facts parsed from `ffmpeg -i` (no ffprobe needed). */
export interface MediaInfo {
  durationSeconds: number;
  hasVideo: boolean;
  hasAudio: boolean;
  /** The first audio stream's channel layout as ffmpeg names it ("mono", "stereo", "5.1(side)"), when it has a name. */
  audioLayout?: string;
}

/** `-t <seconds>` in front of an input read for at most its billed duration (packages/wire/src/billed-duration.ts). */
const boundArgs = (boundSeconds: string | undefined) => (boundSeconds === undefined ? [] : ["-t", boundSeconds]);

export async function probeMedia(
  ffmpegPath: string,
  file: string,
  options: ToolOptions = {},
  boundSeconds?: string,
): Promise<MediaInfo> {
  // `ffmpeg -i x` without an output exits 1 after printing the input's description: decode to
  // the null muxer instead only for the duration when the container does not tell it.
  let stderr = "";
  try {
    const run = await runTool(
      ffmpegPath,
      [
        "-nostdin",
        "-hide_banner",
        "-protocol_whitelist",
        "file",
        ...UPLOAD_INPUT_OPTIONS,
        ...boundArgs(boundSeconds),
        "-i",
        file,
        "-map",
        "0:a?",
        "-f",
        "null",
        "-",
      ],
      { ...options, label: "ffmpeg" },
    );
    stderr = run.stderr;
  } catch (err) {
    if (err instanceof SpeechError) throw new SpeechError(`the input could not be read: ${err.message}`);
    throw err;
  }
  const hasVideo = /Stream #\d+:\d+.*: Video:/.test(stderr);
  const hasAudio = /Stream #\d+:\d+.*: Audio:/.test(stderr);
  let durationSeconds = 0;
  const declared = /Duration: (\d+):(\d+):(\d+(?:\.\d+)?)/.exec(stderr);
  if (declared) durationSeconds = Number(declared[1]) * 3600 + Number(declared[2]) * 60 + Number(declared[3]);
  if (!durationSeconds) {
    const times = [...stderr.matchAll(/time=(\d+):(\d+):(\d+(?:\.\d+)?)/g)];
    const last = times.at(-1);
    if (last) durationSeconds = Number(last[1]) * 3600 + Number(last[2]) * 60 + Number(last[3]);
  }
  // "Stream #0:1(und): Audio: aac (LC) (mp4a / 0x6134706D), 48000 Hz, 5.1, fltp, 394 kb/s"; a layout
  // without a name reads "3 channels", which a filter cannot ask for.
  const layout = /Stream #\d+:\d+[^\n]*: Audio: [^\n]*?, \d+ Hz, ([^,\n]+)/.exec(stderr)?.[1]?.trim();
  const audioLayout = layout && /^[a-z0-9.()-]+$/.test(layout) ? layout : undefined;
  return { durationSeconds, hasVideo, hasAudio, ...(audioLayout ? { audioLayout } : {}) };
}

/**
 * Decodes any audio/video file's first audio stream to a 16-bit PCM mono WAV at `rate` Hz; with
 * `boundSeconds`, no more than that much of the input (its billed duration and tolerance).
 */
export async function toMonoWav(
  ffmpegPath: string,
  input: string,
  output: string,
  rate: number,
  options: ToolOptions = {},
  boundSeconds?: string,
): Promise<void> {
  await runTool(
    ffmpegPath,
    [
      "-nostdin",
      "-hide_banner",
      "-loglevel",
      "error",
      "-y",
      "-protocol_whitelist",
      "file",
      ...UPLOAD_INPUT_OPTIONS,
      ...boundArgs(boundSeconds),
      "-i",
      input,
      // first_pts=0: a track that starts after the picture keeps its offset, so word times are
      // times in the video (transcripts, captions, re-synthesised voices land on the picture).
      "-map",
      "0:a:0",
      "-vn",
      "-af",
      "aresample=first_pts=0",
      "-ac",
      "1",
      "-ar",
      String(rate),
      "-c:a",
      "pcm_s16le",
      "-f",
      "wav",
      output,
    ],
    { ...options, label: "ffmpeg" },
  ).catch((err: unknown) => {
    if (err instanceof SpeechError) {
      throw new SpeechError(`the audio of the input could not be decoded: ${err.message}`);
    }
    throw err;
  });
}
