/**
 * POST /api/v1/jobs/{id}/cancel: a queued job is failed and refunded once, never runs, and a
 * second cancel (or a cancel of an ended job) answers 400 naming the state; other keys get 404.
 */
import { env } from "cloudflare:workers";
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import {
  balanceOf,
  call,
  callTool,
  expectError,
  expectLedgerConsistent,
  newAccount,
  uploadFixture,
  waitForJob,
} from "../helpers/api";

const cancel = (auth: { authorization: string }, jobId: string) =>
  call(`/api/v1/jobs/${jobId}/cancel`, { method: "POST", headers: auth });

describe("cancelling a job", () => {
  it("refunds a queued job once, and the queue consumer then skips it", async () => {
    const account = await newAccount({ credits: 100 });
    const clip = await uploadFixture(account, "clip.mp4");
    const started = (await (await callTool(account, "convert", { uploadId: clip.uploadId, format: "mkv" })).json()) as {
      jobId: string;
      creditsRemaining: number;
    };
    expect(started.creditsRemaining).toBe(99);
    // The consumer batches for up to a second: the job is still queued.
    const response = await cancel(account.auth, started.jobId);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      jobId: started.jobId,
      status: "failed",
      progress: null,
      error: "Cancelled at the caller's request; credits refunded.",
    });
    expect(await balanceOf(account)).toBe(100);
    await expectError(await cancel(account.auth, started.jobId), 400, "invalid_request", /already failed/);
    // The job's message reaches the consumer (here at once, as the queue delivers it after its
    // batch timeout): acknowledged, and the job is still the cancelled one, refunded once.
    const batch = createMessageBatch("media-jobs", [
      { id: "cancelled-job", timestamp: new Date(), attempts: 1, body: { jobId: started.jobId } },
    ]);
    const ctx = createExecutionContext();
    await worker.queue!(batch, env);
    expect(await getQueueResult(batch, ctx)).toMatchObject({ explicitAcks: ["cancelled-job"], retryMessages: [] });
    expect((await waitForJob(account, started.jobId)).error).toMatch(/^Cancelled/);
    const refunds = await env.DB.prepare("SELECT COUNT(*) AS n FROM ledger WHERE job_id = ? AND kind = 'refund'")
      .bind(started.jobId)
      .first<{ n: number }>();
    expect(refunds!.n).toBe(1);
    await expectLedgerConsistent(account);
  });

  it("refuses to cancel a completed job, naming its state, and hides other keys' jobs", async () => {
    const account = await newAccount({ credits: 100 });
    const clip = await uploadFixture(account, "clip.mp4");
    const started = (await (await callTool(account, "extract-audio", { uploadId: clip.uploadId })).json()) as {
      jobId: string;
    };
    expect((await waitForJob(account, started.jobId)).status).toBe("completed");
    await expectError(await cancel(account.auth, started.jobId), 400, "invalid_request", /already completed/);
    const other = await newAccount({ credits: 1 });
    await expectError(await cancel(other.auth, started.jobId), 404, "not_found");
    await expectError(await cancel(account.auth, "job_unknown"), 404, "not_found");
    expect(await balanceOf(account)).toBe(97);
  });
});
