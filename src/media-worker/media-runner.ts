/**
 * One Durable Object per job (named by the job id). It claims the job (queued -> processing,
 * once) and drives it through its stages: an ffmpeg command run here on ffmpeg.wasm (which
 * blocks this isolate, hence one job per object) or on the container backend, and speech
 * stages on the backend (transcription, speech, voice change, voice profile), each ending
 * with a signed callback. An alarm at the job's deadline is the watchdog. Every failure is
 * refunded exactly once.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import type { AudioReport } from "@media-credits/wire/audio-report";
import { JobFailure } from "../errors";
import { BackendUnavailableError, backendJobState, cancelBackendJob } from "../backend-client/client";
import { FfmpegError } from "./ffmpeg-wasm";
import { OverrunError } from "@media-credits/wire/billed-duration";
import { DecodeLimitError } from "@media-credits/wire/decode-limits";
import type { Transcript } from "../media/transcript";
import {
  dispatchMediaToBackend,
  dispatchSpeechStage,
  loadJobInputs,
  mediaResultOf,
  planSpeechStage,
  prepareMediaStage,
  resultIsTranscript,
  routeMediaStage,
  runMediaOnWasm,
  saveVoiceProfile,
  speechPlanOf,
  storeTranscriptResult,
  workIdOf,
  type JobResult,
  type WorkUnit,
} from "./job-stages";
import { backendJobId, workId, type StageName } from "../backend-client/stage-ids";
import { stepUnit } from "./step-units";
import {
  completeStep,
  failStep,
  recordStepEngine,
  startStep as markStepStarted,
  stepsOfJob,
} from "../services/media-jobs/pipeline-steps";
import { claimJob, completeJob, failJob, MIN_DEADLINE_MS } from "../services/media-jobs/lifecycle";
import { isEnded, loadJob, type JobRow } from "../services/media-jobs/reads";
import { faultFires, withFailingWrites } from "../lib/faults";
import { assertDeployable } from "../lib/deployment-guard";
import { withResilientD1 } from "../db/resilient-d1";

/** What the object remembers while the backend works on a stage. */
interface PendingStage {
  jobId: string;
  /** A pipeline's step the stage belongs to. */
  step?: number;
  stage: StageName;
  /** Object the stage writes. */
  outputKey: string;
  /** The job's result (a pipeline step's output), when this stage writes it. */
  result?: JobResult;
  deadlineAt: number;
  /** One dispatch of the stage (a resend makes a new one): what a heartbeat that awaited compares. */
  attempt: string;
  /** The stage's end is being recorded (its callback, or the heartbeat standing in for it): nothing else touches it. */
  handling?: boolean;
  /** The backend accepted the stage (until then a heartbeat cannot tell a lost job from one on its way). */
  dispatched?: boolean;
  /** Heartbeats in a row the backend did not know the stage (another instance behind the URL may have answered). */
  unknownBeats?: number;
  /** Heartbeats in a row the backend did not answer. */
  missedBeats?: number;
  /** Heartbeats since the backend said the stage was finished, its callback not come yet. */
  finishedBeats?: number;
}

/**
 * While a stage runs on the backend the object's alarm is a heartbeat, not only the watchdog: it
 * asks the backend about the stage every JOB_HEARTBEAT_SECONDS (default 15). A stage the backend
 * no longer knows (it restarted; asked twice, as another instance behind the URL may answer) is
 * sent again, from the job's first stage, at most MAX_RESENDS times; a backend that does not
 * answer MAX_MISSED_BEATS times in a row (about a minute) fails the job, refunded; a finished
 * stage whose callback is lost is taken from the backend's answer.
 */
const DEFAULT_HEARTBEAT_MS = 15_000;
const MAX_MISSED_BEATS = 3;
const MAX_RESENDS = 2;
const CALLBACK_GRACE_BEATS = 2;
const UNKNOWN_BEATS_BEFORE_RESEND = 2;

export interface BackendOutcome {
  status: "completed" | "failed";
  error?: string;
  outputBytes?: number;
  /** What the stage's report measured (clean-audio), kept with the result. */
  report?: AudioReport;
}

function userMessage(error: unknown): string {
  if (error instanceof JobFailure) return error.message;
  if (error instanceof OverrunError || error instanceof DecodeLimitError)
    return `The media could not be processed: ${error.message}. Credits refunded.`;
  if (error instanceof FfmpegError) return `The media could not be processed: ${error.message}`;
  if (error instanceof BackendUnavailableError)
    return `The job could not be started: ${error.message}. Credits refunded.`;
  return "Processing failed unexpectedly; credits refunded.";
}

export class MediaRunner extends DurableObject<Env> {
  /** Status reads waiting for the job to end (waitForEnd). */
  readonly #endWaiters = new Set<() => void>();
  /** This object ended its job (it runs one job, named by its id). */
  #ended = false;

  constructor(ctx: DurableObjectState, env: Env) {
    const resilient = withResilientD1(env);
    super(
      ctx,
      env.FAULT_R2_PUT_FAIL_RATE
        ? { ...resilient, MEDIA: withFailingWrites(env.MEDIA, env.FAULT_R2_PUT_FAIL_RATE) }
        : resilient,
    );
  }

  /**
   * Resolves when this object ends the job (completed, failed, cancelled), starts a pipeline's next step, or after `timeoutMs`;
   * at once for a job already ended. For status reads that wait (src/services/media-jobs/reads.ts waitForJobForKey).
   */
  async waitForEnd(jobId: string, timeoutMs: number): Promise<void> {
    if (this.#ended) return;
    const job = await loadJob(this.env.DB, jobId);
    // Checked again after the read: the job may have ended while it was on its way.
    if (this.#ended || !job || isEnded(job.status)) return;
    await new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.#endWaiters.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, Math.max(0, timeoutMs));
      this.#endWaiters.add(wake);
    });
  }

  /** Runs the job if it is still queued; a redelivered message finds it taken and returns. */
  async run(jobId: string): Promise<"completed" | "failed" | "dispatched" | "skipped"> {
    // The media Worker is deployed apart (wrangler.media.jsonc), with settings of its own: it
    // checks them too, before a job is claimed (the message stays queued, nothing is spent).
    assertDeployable(this.env);
    const minDeadlineMs = this.env.JOB_MIN_DEADLINE_SECONDS
      ? Number(this.env.JOB_MIN_DEADLINE_SECONDS) * 1000
      : undefined;
    const job = await claimJob(this.env.DB, jobId, Date.now(), minDeadlineMs);
    if (!job) return "skipped";
    // The watchdog is armed before any work: an object reset mid-job (eviction, crash, a deploy)
    // keeps its alarm, which fails and refunds the job at its deadline.
    await this.ctx.storage.put("claimed", jobId);
    await this.ctx.storage.setAlarm(job.deadlineAt ?? Date.now() + MIN_DEADLINE_MS);
    if (faultFires(this.env.FAULT_RUNNER_ABORT_RATE, "runner-reset"))
      this.ctx.abort("reset by FAULT_RUNNER_ABORT_RATE");
    return this.attempt(jobId, () => this.start(job));
  }

  /** The backend's verified callback for one stage: continue the job or record its end. */
  async backendFinished(jobId: string, stage: StageName, outcome: BackendOutcome, step?: number): Promise<boolean> {
    const pending = await this.ctx.storage.get<PendingStage>("pending");
    if (!pending || pending.jobId !== jobId || pending.stage !== stage || pending.step !== step || pending.handling)
      return false;
    // Claimed before any other await (storage alone keeps the input gate closed): a callback and
    // the heartbeat standing in for a lost one never both record the same stage.
    await this.ctx.storage.put("pending", { ...pending, handling: true });
    if (outcome.status === "failed") return this.finish(jobId, outcome);
    const head = await this.env.MEDIA.head(pending.outputKey);
    if (!head || head.size === 0) {
      return this.finish(jobId, {
        status: "failed",
        error: "The processing backend reported success but stored no result; credits refunded.",
      });
    }
    if (pending.result && pending.step === undefined) return this.finish(jobId, outcome);
    const job = await loadJob(this.env.DB, jobId);
    if (job?.status !== "processing") return false;
    const result = pending.result && { ...pending.result, ...(outcome.report ? { report: outcome.report } : {}) };
    // The pipeline goes on (or ends) from here; any failure on the way, reading the step's inputs
    // included, fails the job now rather than leaving it to the watchdog.
    const outcomeOfStage = await this.attempt(jobId, async () => {
      const unit = await this.unitOf(job, pending.step);
      return result ? this.unitDone(unit, result) : this.continueAfter(unit, pending);
    });
    // A pipeline is recorded as ended when its last step's result is stored, or its failure.
    return outcomeOfStage === "completed" || outcomeOfStage === "failed" || pending.step === undefined;
  }

  /** The caller cancelled the job (already failed and refunded): stop the pending stage and forget it. */
  async cancel(jobId: string): Promise<void> {
    this.jobEnded();
    const pending = await this.ctx.storage.get<PendingStage>("pending");
    if (pending?.jobId === jobId) {
      await cancelBackendJob(this.env, backendJobId(workId(jobId, pending.step), pending.stage));
      await this.env.MEDIA.delete(pending.outputKey);
    }
    await this.deleteStepOutputs(jobId);
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
  }

  /** Heartbeat of a pending backend stage, and the watchdog at the job's deadline (the backend never reported, or the object was reset). */
  async alarm(): Promise<void> {
    const pending = await this.ctx.storage.get<PendingStage>("pending");
    if (pending && Date.now() < pending.deadlineAt) return this.heartbeat(pending);
    const jobId = pending?.jobId ?? (await this.ctx.storage.get<string>("claimed"));
    if (!jobId) return;
    const job = await loadJob(this.env.DB, jobId);
    if (job?.status === "processing") {
      // Stop the backend first, so a late run does not write a result nobody will read.
      if (pending) await cancelBackendJob(this.env, backendJobId(workId(jobId, pending.step), pending.stage));
      await this.finish(jobId, { status: "failed", error: "Processing did not finish in time; credits refunded." });
    } else {
      await this.ctx.storage.deleteAll();
    }
  }

  private async attempt<T extends string>(jobId: string, work: () => Promise<T>): Promise<T | "failed"> {
    try {
      return await work();
    } catch (error) {
      if (
        !(error instanceof JobFailure) &&
        !(error instanceof BackendUnavailableError) &&
        !(error instanceof OverrunError) &&
        !(error instanceof DecodeLimitError)
      )
        console.error("job failed", jobId, error instanceof Error ? error.stack : String(error));
      await this.finish(jobId, { status: "failed", error: userMessage(error) });
      return "failed";
    }
  }

  /** Starts the job, or a pipeline at step `position` (its first, or the one the backend lost). */
  private async start(job: JobRow, position = 0): Promise<"completed" | "dispatched"> {
    if (job.tool === "pipeline") return this.startStep(job, position);
    return this.startUnit(job);
  }

  private async startUnit(unit: WorkUnit): Promise<"completed" | "dispatched"> {
    const inputs = await loadJobInputs(this.env.DB, unit);
    return speechPlanOf(unit, inputs) ? this.startSpeech(unit) : this.startMedia(unit);
  }

  /** A pipeline's step: recorded as started (the step the job is at, should it fail), then run as a job is. */
  private async startStep(job: JobRow, position: number): Promise<"completed" | "dispatched"> {
    await this.ctx.storage.put("step", position);
    await markStepStarted(this.env.DB, job.id, position, Date.now());
    // A status read waiting on the job answers at each step too: a client follows the steps with
    // one long read per step rather than polling.
    if (position > 0) this.wakeWaiters();
    return this.startUnit(await this.unitOf(job, position));
  }

  /** The job itself, or its pipeline step `position`. */
  private async unitOf(job: JobRow, position: number | undefined): Promise<WorkUnit> {
    if (position === undefined) return job;
    return stepUnit(this.env, job, await stepsOfJob(this.env.DB, job.id), position);
  }

  /**
   * A unit's result is stored: a job (or a pipeline's last step) completes; another step's output is
   * recorded for the next step, which starts at once. Each step's output is deleted once the step
   * after it has read it: intermediate media never stays, nor leaves the service.
   */
  private async unitDone(unit: WorkUnit, result: JobResult): Promise<"completed" | "dispatched"> {
    const now = Date.now();
    if (unit.step) {
      await completeStep(this.env.DB, unit.id, unit.step.position, result, now);
      for (const input of unit.step.inputs)
        if (input.objectKey.startsWith(`work/${unit.id}/`)) await this.env.MEDIA.delete(input.objectKey);
    }
    if (unit.step && !unit.step.last) {
      // Cancelled while the step ran (ffmpeg.wasm cannot be interrupted): the next step never starts.
      if ((await loadJob(this.env.DB, unit.id))?.status !== "processing") {
        await this.deleteStepOutputs(unit.id);
        this.jobEnded();
        await this.ctx.storage.deleteAlarm();
        await this.ctx.storage.deleteAll();
        return "completed";
      }
      // Between steps the alarm is the watchdog again (a heartbeat had it while the backend worked),
      // and each step may be sent again as many times as a job.
      await this.ctx.storage.delete(["pending", "resends"]);
      await this.ctx.storage.setAlarm(unit.deadlineAt ?? now + MIN_DEADLINE_MS);
      return this.startStep(unit, unit.step.position + 1);
    }
    // Cancelled while ffmpeg.wasm ran (it cannot be interrupted): the result is not kept.
    if (!(await completeJob(this.env.DB, unit.id, result, now))) await this.env.MEDIA.delete(result.key);
    this.jobEnded();
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    return "completed";
  }

  private async startMedia(unit: WorkUnit, transcript?: Transcript): Promise<"completed" | "dispatched"> {
    const prepared = await prepareMediaStage(this.env, unit, await loadJobInputs(this.env.DB, unit), transcript);
    const route = routeMediaStage(this.env, prepared);
    console.log("job route", workIdOf(unit), unit.tool, route.engine, route.reason);
    if (unit.step) await recordStepEngine(this.env.DB, unit.id, unit.step.position, route.engine);
    if (route.engine === "wasm") return this.unitDone(unit, await runMediaOnWasm(this.env, prepared));
    const result = mediaResultOf(prepared);
    const deadlineAt = await this.remember(unit, { stage: "ffmpeg", outputKey: result.key, result });
    await dispatchMediaToBackend(this.env, workIdOf(unit), prepared, deadlineAt - Date.now(), route.reason);
    await this.dispatched(unit.id, "ffmpeg", unit.step?.position);
    return "dispatched";
  }

  private async startSpeech(unit: WorkUnit): Promise<"dispatched"> {
    const inputs = await loadJobInputs(this.env.DB, unit);
    const plan = speechPlanOf(unit, inputs);
    if (!plan) throw new JobFailure(`The ${unit.tool} tool has no speech stage; credits refunded.`);
    if (unit.step) await recordStepEngine(this.env.DB, unit.id, unit.step.position, "backend");
    const stage = await planSpeechStage(this.env, unit, inputs, plan);
    const deadlineAt = await this.remember(unit, {
      stage: stage.kind,
      outputKey: stage.outputKey,
      result: stage.result,
    });
    await dispatchSpeechStage(this.env, workIdOf(unit), stage, deadlineAt - Date.now());
    await this.dispatched(unit.id, stage.kind, unit.step?.position);
    return "dispatched";
  }

  /** After a stage that does not produce the result: transcript -> file or burn-in; profile -> speech. */
  private async continueAfter(job: WorkUnit, pending: PendingStage): Promise<"completed" | "dispatched"> {
    const object = await this.env.MEDIA.get(pending.outputKey);
    if (!object) throw new JobFailure("An intermediate result went missing; credits refunded.");
    const body = await object.text();
    await this.env.MEDIA.delete(pending.outputKey);
    if (pending.stage === "voice-profile") {
      await saveVoiceProfile(this.env.DB, job.accountId, body);
      return this.startSpeech(job);
    }
    const transcript = JSON.parse(body) as Transcript;
    if (!resultIsTranscript(job)) return this.startMedia(job, transcript);
    const result = await storeTranscriptResult(this.env, job, await loadJobInputs(this.env.DB, job), transcript);
    return this.unitDone(job, result);
  }

  private async remember(
    unit: WorkUnit,
    stage: Omit<PendingStage, "jobId" | "step" | "deadlineAt" | "attempt">,
  ): Promise<number> {
    const deadlineAt = unit.deadlineAt ?? Date.now() + 15 * 60 * 1000;
    await this.beatLater({
      jobId: unit.id,
      ...(unit.step ? { step: unit.step.position } : {}),
      deadlineAt,
      attempt: crypto.randomUUID(),
      ...stage,
    });
    return deadlineAt;
  }

  /** Records that the backend accepted the pending stage (a later heartbeat may then take a 404 as a loss). */
  private async dispatched(jobId: string, stage: StageName, step?: number): Promise<void> {
    const pending = await this.ctx.storage.get<PendingStage>("pending");
    if (pending?.jobId === jobId && pending.stage === stage && pending.step === step && !pending.handling)
      await this.ctx.storage.put("pending", { ...pending, dispatched: true });
  }

  private heartbeatMs(): number {
    const seconds = Number(this.env.JOB_HEARTBEAT_SECONDS);
    return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : DEFAULT_HEARTBEAT_MS;
  }

  /** Stores the stage's state and arms the next heartbeat, never past the deadline (the watchdog). */
  private async beatLater(pending: PendingStage): Promise<void> {
    await this.ctx.storage.put("pending", pending);
    await this.ctx.storage.setAlarm(Math.min(pending.deadlineAt, Date.now() + this.heartbeatMs()));
  }

  private async heartbeat(asked: PendingStage): Promise<void> {
    if (asked.handling) return this.beatLater(asked);
    const job = await loadJob(this.env.DB, asked.jobId);
    const answer = await backendJobState(this.env, backendJobId(workId(asked.jobId, asked.step), asked.stage));
    // Events ran during those awaits (a callback, the next stage, a dispatch's acknowledgement):
    // what is decided applies to the stage as it is now, and only if it is still the one asked about.
    const pending = await this.ctx.storage.get<PendingStage>("pending");
    if (!pending || pending.attempt !== asked.attempt || pending.handling) return;
    if (job?.status !== "processing") {
      await this.ctx.storage.deleteAll();
      return;
    }
    switch (answer.state) {
      case "working":
        return this.beatLater({ ...pending, missedBeats: 0, finishedBeats: 0, unknownBeats: 0 });
      case "unknown": {
        // Not yet accepted: the dispatch is on its way (or failing, which fails the job itself).
        if (!pending.dispatched) return this.beatLater(pending);
        const unknownBeats = (pending.unknownBeats ?? 0) + 1;
        if (unknownBeats < UNKNOWN_BEATS_BEFORE_RESEND) return this.beatLater({ ...pending, unknownBeats });
        return this.resend(job, pending.step);
      }
      case "finished": {
        const finishedBeats = (pending.finishedBeats ?? 0) + 1;
        if (finishedBeats < CALLBACK_GRACE_BEATS) return this.beatLater({ ...pending, missedBeats: 0, finishedBeats });
        console.warn(
          "backend callback lost; taking the stage's outcome from the backend",
          pending.jobId,
          pending.stage,
        );
        const error = answer.error ? `The media could not be processed: ${answer.error}` : undefined;
        await this.backendFinished(pending.jobId, pending.stage, { status: answer.status, error }, pending.step);
        return;
      }
      case "unreachable": {
        const missedBeats = (pending.missedBeats ?? 0) + 1;
        if (missedBeats < MAX_MISSED_BEATS) return this.beatLater({ ...pending, missedBeats });
        console.warn("backend unreachable; failing the job", pending.jobId, answer.why);
        await cancelBackendJob(this.env, backendJobId(workId(pending.jobId, pending.step), pending.stage));
        await this.finish(pending.jobId, {
          status: "failed",
          error: "The processing backend stopped answering while it ran the job; credits refunded.",
        });
        return;
      }
    }
  }

  /** The backend lost the job (a restart): it starts again from its first stage (a pipeline's step's), a bounded number of times. */
  private async resend(job: JobRow, step?: number): Promise<void> {
    const resends = (await this.ctx.storage.get<number>("resends")) ?? 0;
    if (resends >= MAX_RESENDS) {
      await this.finish(job.id, {
        status: "failed",
        error: `The processing backend lost the job ${resends + 1} times (it restarted); credits refunded.`,
      });
      return;
    }
    await this.ctx.storage.put("resends", resends + 1);
    console.warn("backend lost the job; sending it again", job.id, resends + 1);
    await this.attempt(job.id, () => this.start(job, step));
  }

  private async finish(jobId: string, outcome: BackendOutcome): Promise<boolean> {
    const pending = await this.ctx.storage.get<PendingStage>("pending");
    const now = Date.now();
    const error = outcome.error ?? "Processing failed; credits refunded.";
    const changed =
      outcome.status === "completed" && pending?.result
        ? await completeJob(this.env.DB, jobId, { ...pending.result, report: outcome.report }, now)
        : await failJob(this.env.DB, jobId, error, now);
    if (outcome.status === "failed") {
      if (pending) await this.env.MEDIA.delete(pending.outputKey);
      // A pipeline's failure is its current step's: that step says why, the ones after were skipped.
      const step = pending?.step ?? (await this.ctx.storage.get<number>("step"));
      if (step !== undefined) await failStep(this.env.DB, jobId, step, error, now);
      await this.deleteStepOutputs(jobId);
    }
    this.jobEnded();
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    return changed;
  }

  /** A pipeline's intermediate outputs (work/<job>/s<n>/...), once it ended without them. */
  private async deleteStepOutputs(jobId: string): Promise<void> {
    const listed = await this.env.MEDIA.list({ prefix: `work/${jobId}/` });
    if (listed.objects.length > 0) await this.env.MEDIA.delete(listed.objects.map((object) => object.key));
  }

  private jobEnded(): void {
    this.#ended = true;
    this.wakeWaiters();
  }

  private wakeWaiters(): void {
    for (const wake of [...this.#endWaiters]) wake();
  }
}
