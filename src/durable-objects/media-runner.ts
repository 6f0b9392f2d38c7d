/**
 * One Durable Object per job (named by the job id): ffmpeg.wasm blocks its isolate while it
 * runs, so jobs must not share one. It claims the job (queued -> processing, once), runs it
 * and records completed or failed; a failure is refunded exactly once.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { claimJob, completeJob, failJob } from "../services/jobs";
import { executeJob, JobFailure } from "../media/execute";
import { FfmpegError } from "../media/ffmpeg-wasm";

export class MediaRunner extends DurableObject<Env> {
  /** Runs the job if it is still queued; a redelivered message finds it taken and returns. */
  async run(jobId: string): Promise<"completed" | "failed" | "skipped"> {
    const job = await claimJob(this.env.DB, jobId, Date.now());
    if (!job) return "skipped";
    try {
      const result = await executeJob(this.env, job);
      await completeJob(this.env.DB, jobId, result, Date.now());
      return "completed";
    } catch (error) {
      const message =
        error instanceof JobFailure
          ? error.message
          : error instanceof FfmpegError
            ? `The media could not be processed: ${error.message}`
            : "Processing failed unexpectedly.";
      if (!(error instanceof JobFailure)) console.error("job failed", jobId, error instanceof Error ? error.stack : String(error));
      await failJob(this.env.DB, jobId, message, Date.now());
      return "failed";
    }
  }
}
