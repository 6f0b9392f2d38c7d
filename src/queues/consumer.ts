/**
 * Jobs queue consumer: hands each job to its own MediaRunner Durable Object (one job per
 * object, since ffmpeg.wasm blocks its isolate). A delivery that throws is retried by the
 * queue; after the last retry the message lands in the dead-letter queue, whose consumer
 * fails and refunds the job. Redeliveries are harmless: only a queued job can be claimed
 * and a refund happens at most once.
 */
import type { Env, JobMessage } from "../env";
import { failJob } from "../services/media-jobs/lifecycle";
import { jobDispatchStates } from "../services/media-jobs/reads";
import { dispatchJobWebhooks } from "../services/webhooks/outbox";
import { eachMessage } from "../lib/queue-batch";
import { JobMessageSchema } from "./messages";
import { faultFires } from "../lib/faults";

export async function consumeJobs(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  // The tool call usually started the job already: a job no longer queued is its runner's
  // (whose alarm ends it), so one read for the batch is spent on it, not a call to the media
  // Worker and a claim that writes nothing but still locks the database.
  const ids = batch.messages.flatMap((message) => {
    const parsed = JobMessageSchema.safeParse(message.body);
    return parsed.success ? [parsed.data.jobId] : [];
  });
  // Awaited by each message: a failed read retries each message as any failure does.
  const states = jobDispatchStates(env.DB, ids);
  await eachMessage(batch, JobMessageSchema, "job", async ({ jobId }, message) => {
    try {
      const job = (await states).get(jobId);
      if (job?.status === "queued") await env.MEDIA_RUNNER.get(env.MEDIA_RUNNER.idFromName(jobId)).run(jobId);
      if (job?.notifies) await dispatchJobWebhooks(env, jobId);
      // Soak campaign: the queue delivers a handled message again, as at-least-once delivery may.
      if (faultFires(env.FAULT_QUEUE_REDELIVER_RATE, "queue-redelivered") && message.attempts === 1)
        message.retry({ delaySeconds: 1 });
      else message.ack();
    } catch (error) {
      console.error("job delivery failed", jobId, error instanceof Error ? error.message : String(error));
      message.retry({ delaySeconds: Math.min(60, 5 * 2 ** (message.attempts - 1)) });
    }
  });
}

export async function consumeDeadLetters(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  for (const message of batch.messages) {
    const parsed = JobMessageSchema.safeParse(message.body);
    if (parsed.success) {
      await failJob(
        env.DB,
        parsed.data.jobId,
        "The job could not be processed after several attempts; credits refunded.",
        Date.now(),
      );
      await dispatchJobWebhooks(env, parsed.data.jobId);
    }
    message.ack();
  }
}

export type { JobMessage };
