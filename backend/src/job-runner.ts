/**
 * The job runner: an in-memory table of jobs by id (idempotency), a concurrency-limited queue,
 * and one run per job in its own temporary directory:
 * files + fonts -> streamed downloads -> ffmpeg (twice for a loudness-normalised job) or a speech
 * job -> streamed upload -> signed callback.
 * Requests arrive validated by parseJobRequest (protocol.ts, the wire contract with the Worker).
 */
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { access, copyFile, mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { sendCallback, type CallbackPayload, type CallbackResult } from "./callback.ts";
import { log, type Faults } from "./config.ts";
import { denoiseRawFile } from "./denoise.ts";
import { describeFfmpegFailure, FfmpegStartError, runFfmpeg } from "./ffmpeg.ts";
import { loudnessFinalArgs } from "@media-credits/wire/loudness";
import { type AudioReport, withAudioReport } from "@media-credits/wire/audio-report";
import {
  FONTS_SUBDIR,
  type JobRequest,
  type StreamedDemuxer,
  UPLOAD_INPUT_OPTIONS,
} from "@media-credits/wire/protocol";
import { checkProcessed, OverrunError, PROGRESS_FILE } from "@media-credits/wire/billed-duration";
import { OVERSIZED_MESSAGE } from "@media-credits/wire/decode-limits";
import { ProgressiveServer } from "./progressive.ts";
import { DownloadProgress, downloadToFile, TransferError, uploadFile } from "./transfer.ts";
import { runSpeechJob } from "./speech/speech-job.ts";
import { SpeechError } from "./speech/proc.ts";
import type { SpeechRuntime } from "./speech/runtime.ts";

// ---------------------------------------------------------------------------------------------
// Before a run: what the request's schema cannot know (the fonts on this machine), and the argv run

/** The fonts a job places in its work directory: an ffmpeg job's and its finish pass's. */
function fontsOf(job: JobRequest): string[] {
  const finishFonts = "finish" in job ? (job.finish?.fonts ?? []) : [];
  if (job.kind === "ffmpeg") return [...new Set([...job.fonts, ...finishFonts])];
  return finishFonts;
}

/** The fonts of `job` missing from `fontsDir`. */
export async function missingFonts(job: JobRequest, fontsDir: string): Promise<string[]> {
  const missing: string[] = [];
  for (const font of fontsOf(job)) {
    try {
      await access(path.join(fontsDir, font));
    } catch {
      missing.push(font);
    }
  }
  return missing;
}

/** An input ffmpeg reads over HTTP (protocol: FfmpegJobSchema.streamedInputs). */
export interface StreamedInput {
  url: string;
  demuxer: StreamedDemuxer;
}

/**
 * Options in front of a streamed input: only the protocols a signed URL needs, the demuxer
 * forced (no playlist demuxer), a read that stalls for 60 s fails instead of waiting for the
 * deadline, and a dropped connection is reopened at the position reached.
 */
const STREAM_INPUT_OPTIONS = [
  "-protocol_whitelist",
  "http,https,tcp,tls",
  "-rw_timeout",
  "60000000",
  "-reconnect",
  "1",
  "-reconnect_on_network_error",
  "1",
  "-reconnect_delay_max",
  "4",
];

/**
 * The argv actually run: `-protocol_whitelist file` before every `-i`, so that a declared input
 * (a playlist, a concat list) cannot make ffmpeg open network or other protocols, and an uploaded
 * one is read by an upload container's demuxer only (UPLOAD_DEMUXERS); a streamed input is
 * replaced by its URL, behind STREAM_INPUT_OPTIONS and its demuxer.
 */
export function hardenArgs(
  args: string[],
  streamed: ReadonlyMap<string, StreamedInput> = new Map(),
  uploads: ReadonlySet<string> = new Set(),
): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] !== "-i") {
      out.push(args[i]!);
      continue;
    }
    const name = args[++i]!;
    const stream = streamed.get(name);
    if (stream) out.push(...STREAM_INPUT_OPTIONS, "-f", stream.demuxer, "-i", stream.url);
    else out.push("-protocol_whitelist", "file", ...(uploads.has(name) ? UPLOAD_INPUT_OPTIONS : []), "-i", name);
  }
  return out;
}

/**
 * `text` with the job's work directory taken out of its paths (`/tmp/media-job-<id>-Xy12/in0.mp3`
 * becomes `in0.mp3`): a customer reads job errors, which need not show the backend's disk.
 */
export function withoutWorkDir(text: string): string {
  return text.replace(/(?:\/[^\s/'"|]+)*\/media-job-[^\s/'"|]+\//g, "");
}

/** `text` with each streamed input's URL replaced by the input's name: job errors never carry URLs. */
function withoutUrls(text: string, streamed: ReadonlyMap<string, StreamedInput>): string {
  let out = text;
  for (const [name, { url }] of streamed) out = out.split(url).join(name);
  return out;
}

/**
 * Fails the job when its run wrote more media than its inputs were billed for (their headers
 * understated their length; packages/wire/src/billed-duration.ts); the run's progress report says how much.
 */
async function checkBilled(billedInputsMs: number[], progressFile: string): Promise<void> {
  const report = await readFile(progressFile, "utf8").catch(() => undefined);
  try {
    checkProcessed(billedInputsMs, report);
  } catch (error) {
    if (error instanceof OverrunError) throw new JobFailure(error.message);
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------
// Runner

export type JobStatus = "queued" | "running" | "completed" | "failed";

/** A job's expected failure, with a message for the user. */
export class JobFailure extends Error {}

/** The abort reason for deadline and shutdown. */
class JobAbort extends Error {}

interface JobEntry {
  jobId: string;
  kind: JobRequest["kind"];
  callbackUrl: string;
  /** The request; dropped once the job is finished (its `files` can be large). */
  job?: JobRequest;
  status: JobStatus;
  phase: string;
  acceptedAt: number;
  finishedAt?: number;
  error?: string;
  abort: AbortController;
  deadlineTimer: NodeJS.Timeout;
  /** Settles once the job is finished and its callback was attempted. */
  done: Promise<void>;
  resolveDone: () => void;
}

export interface RunnerOptions {
  secret: string;
  ffmpegPath: string;
  fontsDir: string;
  maxConcurrentJobs: number;
  /** Speech engines (kinds other than "ffmpeg"). */
  speech?: SpeechRuntime;
  callbackDelaysMs?: number[];
  /** Finished jobs remembered for idempotency (older ones are forgotten first). */
  maxRemembered?: number;
  rememberMs?: number;
  /** Injected faults (soak campaign only). */
  faults?: Faults;
  /** Address space each ffmpeg process may reserve (FFMPEG_MEMORY_LIMIT_BYTES; 0: none). */
  ffmpegMemoryLimitBytes?: number;
  /** Threads per decoder, filter graph and encoder of each ffmpeg (FFMPEG_THREADS). */
  ffmpegThreads?: number;
}

interface Outcome {
  payload: CallbackPayload;
  timings: Record<string, number>;
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}

export class JobRunner {
  #options: RunnerOptions;
  #entries = new Map<string, JobEntry>();
  #queue: JobEntry[] = [];
  #active = 0;
  #closing = false;
  /** ffmpeg's environment: the backend's, without its secret. */
  #childEnv: NodeJS.ProcessEnv;

  constructor(options: RunnerOptions) {
    this.#options = options;
    this.#childEnv = { ...process.env };
    delete this.#childEnv.BACKEND_SECRET;
    delete this.#childEnv.OPENAI_AUDIO_API_KEY;
  }

  get closing(): boolean {
    return this.#closing;
  }

  stats(): { active: number; queued: number; known: number } {
    return { active: this.#active, queued: this.#queue.length, known: this.#entries.size };
  }

  status(jobId: string): { jobId: string; status: JobStatus; error?: string } | undefined {
    const entry = this.#entries.get(jobId);
    if (!entry) return undefined;
    return { jobId, status: entry.status, ...(entry.error ? { error: entry.error } : {}) };
  }

  /**
   * Stops a queued or running job at the Worker's request (the caller cancelled it): it fails,
   * its work directory goes, and its callback reports the cancellation. False when unknown or done.
   */
  cancel(jobId: string): boolean {
    const entry = this.#entries.get(jobId);
    if (!entry || entry.finishedAt !== undefined || entry.abort.signal.aborted) return false;
    entry.abort.abort(new JobAbort("cancelled by the caller"));
    return true;
  }

  /** "duplicate" when the id is already known (running or done): nothing more happens. */
  submit(job: JobRequest): "accepted" | "duplicate" | "closing" {
    if (this.#entries.has(job.jobId)) return "duplicate";
    if (this.#closing) return "closing";
    this.#forgetOld();
    let resolveDone!: () => void;
    const done = new Promise<void>((resolve) => (resolveDone = resolve));
    const abort = new AbortController();
    const entry: JobEntry = {
      jobId: job.jobId,
      kind: job.kind,
      callbackUrl: job.callbackUrl,
      job,
      status: "queued",
      phase: "waiting in the queue",
      acceptedAt: Date.now(),
      abort,
      deadlineTimer: setTimeout(
        () => abort.abort(new JobAbort(`job deadline of ${seconds(job.deadlineMs)} exceeded`)),
        job.deadlineMs,
      ),
      done,
      resolveDone,
    };
    // A queued job that hits its deadline (or a shutdown) fails at once, without a slot.
    abort.signal.addEventListener("abort", () => {
      const index = this.#queue.indexOf(entry);
      if (index === -1) return;
      this.#queue.splice(index, 1);
      void this.#finish(entry, this.#failure(entry, abort.signal.reason, Date.now()));
    });
    this.#entries.set(job.jobId, entry);
    this.#queue.push(entry);
    this.#pump();
    return "accepted";
  }

  /**
   * Stop taking jobs; let running and queued ones go on for `graceMs`, then stop them (they
   * fail with a callback). Resolves when every job is finished and its callback attempted.
   */
  async shutdown(graceMs: number): Promise<void> {
    this.#closing = true;
    const pending = () => [...this.#entries.values()].filter((e) => e.finishedAt === undefined).map((e) => e.done);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(pending()),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs))),
    ]);
    clearTimeout(timer);
    for (const entry of this.#entries.values()) {
      if (entry.finishedAt === undefined) entry.abort.abort(new JobAbort("the media backend is shutting down"));
    }
    await Promise.all([...this.#entries.values()].map((e) => e.done));
  }

  #pump(): void {
    while (this.#active < this.#options.maxConcurrentJobs && this.#queue.length > 0) {
      const entry = this.#queue.shift()!;
      this.#active++;
      void this.#run(entry)
        .catch((err: unknown) => this.#failure(entry, err, Date.now()))
        .then((outcome) => {
          this.#active--;
          this.#pump();
          return this.#finish(entry, outcome);
        });
    }
  }

  #failure(entry: JobEntry, err: unknown, started: number, timings: Record<string, number> = {}): Outcome {
    let message: string;
    const signal = entry.abort.signal;
    if (signal.aborted && (err === signal.reason || err instanceof JobAbort || !(err instanceof JobFailure))) {
      const reason = signal.reason instanceof Error ? signal.reason.message : "the job was stopped";
      message = `${reason} while ${entry.phase}`;
    } else if (
      err instanceof JobFailure ||
      err instanceof TransferError ||
      err instanceof FfmpegStartError ||
      err instanceof SpeechError
    ) {
      message = err.message;
    } else {
      const errorId = randomUUID().slice(0, 8);
      log("job_internal_error", {
        jobId: entry.jobId,
        errorId,
        error: err instanceof Error ? (err.stack ?? err.message) : String(err),
      });
      message = `internal error in the media backend (ref ${errorId})`;
    }
    return {
      payload: {
        jobId: entry.jobId,
        status: "failed",
        error: withoutWorkDir(message),
        durationMs: Date.now() - started,
      },
      timings,
    };
  }

  async #run(entry: JobEntry): Promise<Outcome> {
    const job = entry.job!;
    const signal = entry.abort.signal;
    const started = Date.now();
    const timings: Record<string, number> = { queuedMs: started - entry.acceptedAt };
    entry.status = "running";
    let dir: string | undefined;
    let server: ProgressiveServer | undefined;
    const progressiveDownloads: Promise<number>[] = [];
    // Stops the downloads and ffmpeg: the first failed download (its error is the job's), or the
    // end of the run for a progressive input ffmpeg did not read to its end.
    const stopDownloads = new AbortController();
    try {
      signal.throwIfAborted();
      const faults = this.#options.faults;
      if (faults && Math.random() < faults.slowRate) {
        entry.phase = "delayed by FAULT_SLOW_RATE";
        log("fault_slow", { jobId: job.jobId, delayMs: faults.slowMs });
        await sleep(faults.slowMs, undefined, { signal });
      }
      entry.phase = "preparing the work directory";
      dir = await mkdtemp(path.join(os.tmpdir(), `media-job-${job.jobId}-`));
      const workDir = dir;
      const files = job.kind === "ffmpeg" ? job.files : {};
      const finish = "finish" in job ? job.finish : undefined;
      const fonts = fontsOf(job);
      const inputs = "inputs" in job ? job.inputs : [];
      for (const [name, content] of Object.entries(files)) {
        await writeFile(path.join(workDir, name), Buffer.from(content, "base64"));
      }
      if (fonts.length > 0) await mkdir(path.join(workDir, FONTS_SUBDIR));
      for (const font of fonts) {
        try {
          await copyFile(path.join(this.#options.fontsDir, font), path.join(workDir, font));
          await copyFile(path.join(this.#options.fontsDir, font), path.join(workDir, FONTS_SUBDIR, font));
        } catch {
          throw new JobFailure(`font '${font}' is not available on the media backend`);
        }
      }

      const uploads = new Set(inputs.map((input) => input.name));
      const streamed = new Map<string, StreamedInput>();
      const progressive = job.kind === "ffmpeg" ? job.progressiveInputs : {};
      for (const input of inputs) {
        const demuxer = job.kind === "ffmpeg" ? job.streamedInputs[input.name] : undefined;
        if (demuxer) streamed.set(input.name, { url: input.url, demuxer });
      }
      entry.phase = "downloading the inputs";
      let t = Date.now();
      const downloadSignal = AbortSignal.any([signal, stopDownloads.signal]);
      const download = (input: (typeof inputs)[number], progress?: DownloadProgress) =>
        downloadToFile(input.url, path.join(workDir, input.name), {
          label: `input '${input.name}'`,
          signal: downloadSignal,
          progress,
        }).catch((err: unknown) => {
          if (!stopDownloads.signal.aborted) stopDownloads.abort(err);
          throw err;
        });
      // Progressive inputs are read by ffmpeg as they arrive (progressive.ts): their downloads go on while it runs.
      const following = inputs.filter((input) => input.name in progressive && !streamed.has(input.name));
      if (following.length > 0) {
        server = await ProgressiveServer.start();
        for (const input of following) {
          const progress = new DownloadProgress();
          const pending = download(input, progress).then((bytes) => {
            timings.progressiveDownloadMs = Math.max(timings.progressiveDownloadMs ?? 0, Date.now() - t);
            return bytes;
          });
          pending.catch(() => {}); // a failure reaches the job through stopDownloads, while ffmpeg runs
          progressiveDownloads.push(pending);
          streamed.set(input.name, {
            url: server.add(path.join(workDir, input.name), progress),
            demuxer: progressive[input.name]!,
          });
        }
        timings.progressiveInputs = following.length;
      }
      // All settle before going on: no download may still write into the directory when it is removed.
      const results = await Promise.allSettled(
        inputs.filter((input) => !streamed.has(input.name)).map((input) => download(input)),
      );
      if (stopDownloads.signal.aborted) throw stopDownloads.signal.reason;
      timings.downloadMs = Date.now() - t;
      timings.inputBytes = results.reduce((sum, r) => sum + (r.status === "fulfilled" ? r.value : 0), 0);
      if (streamed.size > following.length) timings.streamedInputs = streamed.size - following.length;

      t = Date.now();
      let producer = "ffmpeg";
      let report: AudioReport | undefined;
      const ffmpeg = async (args: string[], phase: string, logChars?: number) => {
        entry.phase = phase;
        const run = await runFfmpeg({
          ffmpegPath: this.#options.ffmpegPath,
          args: hardenArgs(args, streamed, uploads),
          cwd: workDir,
          signal: downloadSignal,
          env: this.#childEnv,
          memoryLimitBytes: this.#options.ffmpegMemoryLimitBytes,
          threads: this.#options.ffmpegThreads,
          ...(logChars ? { stderrLimit: logChars } : {}),
        });
        if (run.aborted) {
          entry.phase = `${phase} (ffmpeg was stopped)`;
          throw signal.aborted ? signal.reason : stopDownloads.signal.reason;
        }
        // Frames over the pixel cap were refused: the result would lack them (or the run failed for it).
        if (run.oversizedFrames) throw new JobFailure(OVERSIZED_MESSAGE);
        if (run.exitCode !== 0 && stopDownloads.signal.aborted) throw stopDownloads.signal.reason;
        if (run.exitCode !== 0)
          throw new JobFailure(describeFfmpegFailure({ ...run, stderr: withoutUrls(run.stderr, streamed) }));
        return run;
      };
      if (job.kind === "ffmpeg") {
        const runCommand = async () => {
          let args = job.args;
          if (job.denoisePass) {
            // clean-audio's RNNoise (backend/src/denoise.ts): decoded raw, denoised in place, read by the passes after.
            await ffmpeg(job.denoisePass.args, "decoding the sound for the denoiser (ffmpeg)");
            entry.phase = "removing the noise (RNNoise)";
            await denoiseRawFile(path.join(workDir, job.denoisePass.writes), job.denoisePass.channels, signal);
            timings.denoiseMs = Date.now() - t;
            t = Date.now();
          }
          if (job.loudnorm) {
            // Two-pass loudness normalisation (protocol: FfmpegJobSchema.loudnorm): measure, then apply.
            const final = await loudnessFinalArgs(job.args, job.loudnorm, job.measurePass?.args, ffmpeg);
            args = final.args;
            // Logged: 1 when pass 2 applies one gain, 0 when it runs loudnorm's dynamic mode.
            if (final.linear !== undefined) timings.loudnormLinear = final.linear ? 1 : 0;
            timings.loudnormMeasureMs = Date.now() - t;
            t = Date.now();
          }
          await ffmpeg(args, streamed.size > 0 ? "running ffmpeg (reading its input over HTTP)" : "running ffmpeg");
          timings.ffmpegMs = Date.now() - t;
          if (job.billedInputsMs) await checkBilled(job.billedInputsMs, path.join(workDir, PROGRESS_FILE));
        };
        if (job.audioReport) {
          // clean-audio's report (packages/wire/src/audio-report.ts): loudness before and after, pauses cut.
          const written = job.audioReport.silence?.output ?? job.finish?.input ?? job.output.name;
          report = await withAudioReport(job.audioReport, written, ffmpeg, runCommand);
          timings.reportMs = Date.now() - t;
        } else {
          await runCommand();
        }
        if (finish) {
          t = Date.now();
          await ffmpeg(finish.args, "finishing the result (ffmpeg)");
          timings.finishMs = Date.now() - t;
        }
      } else {
        producer = `the ${job.kind} job`;
        const speech = this.#options.speech;
        if (!speech) throw new JobFailure(`job kind '${job.kind}' is not available on this media backend`);
        entry.phase = `running the ${job.kind} job`;
        // With a finish pass, the speech job writes the pass's input and the pass writes the output.
        const speechJob = finish ? { ...job, output: { ...job.output, name: finish.input } } : job;
        const speechTimings = await runSpeechJob(speechJob, {
          workDir,
          signal,
          runtime: speech,
          memoryLimitBytes: this.#options.ffmpegMemoryLimitBytes,
          setPhase: (phase) => (entry.phase = phase),
        });
        Object.assign(timings, speechTimings);
        timings.speechMs = Date.now() - t;
        if (finish) {
          t = Date.now();
          await ffmpeg(finish.args, "finishing the result (ffmpeg)");
          timings.finishMs = Date.now() - t;
        }
      }
      if (progressiveDownloads.length > 0) {
        // A progressive input ffmpeg did not read to its end is still arriving: the job needs no more of it.
        if (!stopDownloads.signal.aborted) stopDownloads.abort(new JobAbort("ffmpeg has finished"));
        const settled = await Promise.allSettled(progressiveDownloads.splice(0));
        timings.progressiveInputBytes = settled.reduce((sum, r) => sum + (r.status === "fulfilled" ? r.value : 0), 0);
      }
      const outputPath = path.join(workDir, job.output.name);
      const info = await stat(outputPath).catch(() => undefined);
      if (!info?.isFile()) throw new JobFailure(`${producer} finished without writing '${job.output.name}'`);
      if (info.size === 0) throw new JobFailure(`${producer} wrote an empty '${job.output.name}'`);

      entry.phase = "uploading the output";
      t = Date.now();
      const outputBytes = await uploadFile(job.output.url, outputPath, {
        contentType: job.output.contentType,
        signal,
      });
      timings.uploadMs = Date.now() - t;
      return {
        payload: {
          jobId: job.jobId,
          status: "completed",
          outputBytes,
          durationMs: Date.now() - started,
          queuedMs: timings.queuedMs,
          ...(report ? { report } : {}),
        },
        timings,
      };
    } catch (err) {
      const outcome = this.#failure(entry, err, started, timings);
      outcome.payload.queuedMs = timings.queuedMs;
      return outcome;
    } finally {
      // Nothing may write into the directory once it is removed: a job that failed stops its progressive downloads.
      if (progressiveDownloads.length > 0 && !stopDownloads.signal.aborted)
        stopDownloads.abort(new JobAbort("the job has ended"));
      await Promise.allSettled(progressiveDownloads);
      await server?.close();
      if (dir) {
        await rm(dir, { recursive: true, force: true, maxRetries: 3 }).catch((err: unknown) =>
          log("job_cleanup_failed", { jobId: job.jobId, error: String(err) }),
        );
      }
    }
  }

  async #finish(entry: JobEntry, outcome: Outcome): Promise<void> {
    clearTimeout(entry.deadlineTimer);
    const { payload } = outcome;
    entry.status = payload.status;
    entry.error = payload.error;
    entry.finishedAt = Date.now();
    let callback: CallbackResult;
    try {
      entry.job = undefined;
      const faults = this.#options.faults;
      const send = () =>
        sendCallback(entry.callbackUrl, payload, {
          secret: this.#options.secret,
          delaysMs: this.#options.callbackDelaysMs,
        });
      if (faults && Math.random() < faults.callbackDropRate) {
        log("fault_callback_dropped", { jobId: entry.jobId });
        callback = { delivered: false, attempts: 0, error: "dropped by FAULT_CALLBACK_DROP_RATE" };
      } else {
        callback = await send();
        if (faults && Math.random() < faults.callbackDuplicateRate) {
          log("fault_callback_duplicate", { jobId: entry.jobId });
          await send();
        }
      }
    } catch (err) {
      callback = { delivered: false, attempts: 0, error: String(err) };
    }
    log("job", {
      jobId: entry.jobId,
      kind: entry.kind,
      status: payload.status,
      ...(payload.error ? { error: payload.error } : {}),
      durationMs: payload.durationMs,
      ...outcome.timings,
      ...(payload.outputBytes !== undefined ? { outputBytes: payload.outputBytes } : {}),
      callback: callback.delivered ? "delivered" : `failed: ${callback.error ?? "unknown"}`,
      callbackAttempts: callback.attempts,
    });
    entry.resolveDone();
  }

  #forgetOld(): void {
    const max = this.#options.maxRemembered ?? 10_000;
    const cutoff = Date.now() - (this.#options.rememberMs ?? 24 * 3600 * 1000);
    for (const [id, entry] of this.#entries) {
      if (entry.finishedAt === undefined) continue;
      if (entry.finishedAt < cutoff || this.#entries.size > max) this.#entries.delete(id);
    }
  }
}
