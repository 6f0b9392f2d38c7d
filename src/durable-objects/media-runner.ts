/**
 * One Durable Object per job (named by the job id). It claims the job (queued -> processing,
 * once), builds its command, routes it, and either runs it on ffmpeg.wasm here (which blocks
 * this isolate, hence one job per object) or hands it to the container backend and waits for
 * the signed callback, with an alarm at the job's deadline as the watchdog. Every failure is
 * refunded exactly once.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { claimJob, completeJob, failJob, loadJob } from "../services/jobs";
import { dispatchToBackend, JobFailure, prepareJob, routeJob, runOnWasm, type JobResult } from "../media/execute";
import { FfmpegError } from "../media/ffmpeg-wasm";

/** What the object remembers while the backend works. */
interface PendingBackendJob {
  jobId: string;
  result: JobResult;
  deadlineAt: number;
}

export interface BackendOutcome {
  status: "completed" | "failed";
  error?: string;
  outputBytes?: number;
}

function userMessage(error: unknown): string {
  if (error instanceof JobFailure) return error.message;
  if (error instanceof FfmpegError) return `The media could not be processed: ${error.message}`;
  return "Processing failed unexpectedly; credits refunded.";
}

export class MediaRunner extends DurableObject<Env> {
  /** Runs the job if it is still queued; a redelivered message finds it taken and returns. */
  async run(jobId: string): Promise<"completed" | "failed" | "dispatched" | "skipped"> {
    const job = await claimJob(this.env.DB, jobId, Date.now());
    if (!job) return "skipped";
    try {
      const prepared = await prepareJob(this.env, job);
      const route = routeJob(this.env, prepared);
      console.log("job route", jobId, job.tool, route.engine, route.reason);
      if (route.engine === "wasm") {
        await completeJob(this.env.DB, jobId, await runOnWasm(this.env, prepared), Date.now());
        return "completed";
      }
      const deadlineAt = job.deadline_at ?? Date.now() + 15 * 60 * 1000;
      const pending: PendingBackendJob = {
        jobId,
        result: { key: prepared.resultKey, filename: prepared.command.resultFilename, contentType: prepared.command.contentType },
        deadlineAt,
      };
      await this.ctx.storage.put("pending", pending);
      await this.ctx.storage.setAlarm(deadlineAt);
      await dispatchToBackend(this.env, jobId, prepared, deadlineAt - Date.now());
      return "dispatched";
    } catch (error) {
      if (!(error instanceof JobFailure)) console.error("job failed", jobId, error instanceof Error ? error.stack : String(error));
      await this.finish(jobId, { status: "failed", error: userMessage(error) });
      return "failed";
    }
  }

  /** The backend's verified callback: record the outcome once. */
  async backendFinished(jobId: string, outcome: BackendOutcome): Promise<boolean> {
    const pending = await this.ctx.storage.get<PendingBackendJob>("pending");
    if (!pending || pending.jobId !== jobId) return false;
    if (outcome.status === "completed") {
      const head = await this.env.MEDIA.head(pending.result.key);
      if (!head || head.size === 0) {
        return this.finish(jobId, { status: "failed", error: "The processing backend reported success but stored no result; credits refunded." });
      }
    }
    return this.finish(jobId, outcome);
  }

  /** Watchdog: the backend never reported before the deadline. */
  async alarm(): Promise<void> {
    const pending = await this.ctx.storage.get<PendingBackendJob>("pending");
    if (!pending) return;
    const job = await loadJob(this.env.DB, pending.jobId);
    if (job?.status === "processing") {
      await this.finish(pending.jobId, { status: "failed", error: "Processing did not finish in time; credits refunded." });
    } else {
      await this.ctx.storage.deleteAll();
    }
  }

  private async finish(jobId: string, outcome: BackendOutcome): Promise<boolean> {
    const pending = await this.ctx.storage.get<PendingBackendJob>("pending");
    const now = Date.now();
    const changed =
      outcome.status === "completed" && pending
        ? await completeJob(this.env.DB, jobId, pending.result, now)
        : await failJob(this.env.DB, jobId, outcome.error ?? "Processing failed; credits refunded.", now);
    if (outcome.status === "failed" && pending) await this.env.MEDIA.delete(pending.result.key);
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    return changed;
  }
}
