/** Waiting for a job to end and downloading its result. */
import { createWriteStream, existsSync, rmSync, statSync } from "node:fs";
import { rename } from "node:fs/promises";
import path from "node:path";
import { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { type Api, type JobStatus, toApiError, unwrap } from "./client.ts";
import type { Config } from "./config.ts";
import { byteProgress, type Progress, waitProgress } from "./progress.ts";

/** Seconds each status read waits for the end: short enough that the status line follows queued -> processing. */
const WAIT_PER_READ_SECONDS = 20;
/** The same for a pipeline, whose steps change state before the job ends (a read answers at once at the end). */
const STEP_READ_SECONDS = 2;

/** A pipeline step as GET /api/v1/jobs/{id} shows it. */
type JobStep = NonNullable<JobStatus["steps"]>[number];

/** `step 2/4 clean-audio: completed (wasm, 1.2 s)`: where it ran, how long, why it failed. */
export function stepLine(step: JobStep, index: number, total: number): string {
  const seconds =
    step.startedAt && step.finishedAt
      ? `${((Date.parse(step.finishedAt) - Date.parse(step.startedAt)) / 1000).toFixed(1)} s`
      : undefined;
  const details = [step.engine, step.status === "completed" || step.status === "failed" ? seconds : undefined].filter(
    Boolean,
  );
  const where = details.length > 0 ? ` (${details.join(", ")})` : "";
  return `step ${index + 1}/${total} ${step.tool}: ${step.status}${where}${step.error ? `: ${step.error}` : ""}`;
}

/** A line on stderr each time a step's state changes (plain lines, on a terminal too: no bar to redraw). */
function stepProgress(label: string, total: number, quiet = false): Progress & { steps(steps: JobStep[]): void } {
  const seen: string[] = Array.from({ length: total }, () => "queued");
  if (!quiet) process.stderr.write(`${label}: ${total} step${total === 1 ? "" : "s"}\n`);
  return {
    update() {},
    steps(steps) {
      steps.forEach((step, index) => {
        if (step.status === seen[index]) return;
        seen[index] = step.status;
        if (!quiet) process.stderr.write(`${stepLine(step, index, steps.length)}\n`);
      });
    },
    stop(summary) {
      if (!quiet) process.stderr.write(`${label}: ${summary}\n`);
    },
  };
}

/**
 * Reads GET /api/v1/jobs/{id} until the job is completed or failed: at once, then with `wait`, which
 * the API answers the moment the job ends (no polling delay, one request per 20 s at most). A
 * pipeline's steps are read every 2 s, each change a line.
 */
export async function waitForJob(
  api: Api,
  jobId: string,
  options: { quiet?: boolean; timeoutSeconds?: number } = {},
): Promise<JobStatus> {
  const label = `job ${jobId}`;
  const started = Date.now();
  const deadline = started + (options.timeoutSeconds ?? 3600) * 1000;
  let progress: Progress | undefined;
  let steps: ReturnType<typeof stepProgress> | undefined;
  for (let attempt = 0; ; attempt++) {
    const perRead = steps ? STEP_READ_SECONDS : WAIT_PER_READ_SECONDS;
    const wait = attempt === 0 ? 0 : Math.max(0, Math.min(perRead, Math.ceil((deadline - Date.now()) / 1000)));
    const job = unwrap(await api.GET("/api/v1/jobs/{id}", { params: { path: { id: jobId }, query: { wait } } }));
    const jobSteps = job.steps;
    if (attempt === 0 && jobSteps) steps = stepProgress(label, jobSteps.length, options.quiet);
    progress ??= steps ?? waitProgress(label, options.quiet);
    if (steps && jobSteps) steps.steps(jobSteps);
    progress.update(0, job.status);
    if (job.status === "completed" || job.status === "failed") {
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      // A failure's reason is printed once, by the caller.
      progress.stop(job.status === "completed" ? `completed in ${seconds} s` : `failed after ${seconds} s`);
      return job;
    }
    if (Date.now() > deadline)
      throw new Error(`job ${jobId} is still ${job.status} after ${options.timeoutSeconds ?? 3600} s`);
  }
}

export const isFolder = (target: string) => existsSync(target) && statSync(target).isDirectory();

/** The temporary file of the download under way: removed if the process is interrupted. */
let partialFile: string | undefined;

/** Removes the half-written download (Ctrl-C): nothing is left behind, as after any failure. */
export function abandonDownload(): void {
  if (partialFile) rmSync(partialFile, { force: true });
  partialFile = undefined;
}

/**
 * Streams a completed job's result to `out`: a file (written through a temporary name, so a cut
 * leaves no half file), a folder (the result's own name inside it), or - (stdout). Returns where
 * it went.
 */
export async function downloadResult(config: Config, job: JobStatus, out: string, quiet = false): Promise<string> {
  if (!job.result) throw new Error(`job ${job.jobId} has no result to download`);
  const response = await fetch(`${config.baseUrl}${job.result.url}`);
  if (!response.ok || !response.body) throw toApiError(response.status, await response.json().catch(() => undefined));
  const target = out !== "-" && isFolder(out) ? path.join(out, path.basename(job.result.filename)) : out;
  const total = Number(response.headers.get("content-length") ?? 0);
  const progress = byteProgress(`download ${job.result.filename}`, total, quiet);
  let bytes = 0;
  const count = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      bytes += chunk.length;
      progress.update(bytes);
      callback(null, chunk);
    },
  });
  const body = Readable.fromWeb(response.body as import("node:stream/web").ReadableStream);
  if (target === "-") {
    await pipeline(body, count, process.stdout);
  } else {
    partialFile = `${target}.part`;
    try {
      await pipeline(body, count, createWriteStream(partialFile));
      await rename(partialFile, target);
      partialFile = undefined;
    } catch (error) {
      abandonDownload();
      throw error;
    }
  }
  progress.stop(`${target === "-" ? "stdout" : target} (${(bytes / 1e6).toFixed(1)} MB)`);
  return target;
}
