import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { parseBuffer } from "music-metadata";
import {
  balanceOf,
  call,
  callTool,
  expectError,
  expectLedgerConsistent,
  newAccount,
  newKey,
  uploadFixture,
  waitForJob,
} from "../helpers/api";
import { failStuckJobs, runMaintenance } from "../../src/services/platform/maintenance";
import { stopJobRunner } from "../../src/services/media-jobs/lifecycle";
import { consumeJobs } from "../../src/queues/consumer";
import { sha256Hex } from "../../src/lib/hash";

describe("tool calls: billing and the job envelope", () => {
  it("debits the probed duration's cost and answers the envelope", async () => {
    const account = await newAccount({ credits: 100 });
    const long = await uploadFixture(account, "long-61s.mp3");
    expect(long.durationSeconds).toBeCloseTo(61, 1);
    const response = await callTool(account, "convert", { uploadId: long.uploadId });
    expect(response.status).toBe(200);
    const envelope = (await response.json()) as Record<string, unknown>;
    expect(Object.keys(envelope).sort()).toEqual([
      "creditsRemaining",
      "creditsUsed",
      "estimatedSeconds",
      "jobId",
      "status",
    ]);
    expect(envelope.status).toBe("queued");
    expect(envelope.creditsUsed).toBe(Math.max(1, Math.ceil((5 * long.durationSeconds) / 60)));
    expect(envelope.creditsRemaining).toBe(100 - (envelope.creditsUsed as number));
    expect(envelope.estimatedSeconds).toBeGreaterThanOrEqual(1);
    expect(envelope.jobId).toMatch(/^job_/);

    // trim bills the output segment, not the source.
    const trim = await (await callTool(account, "trim", { uploadId: long.uploadId, start: 10, end: 30.5 })).json();
    expect((trim as { creditsUsed: number }).creditsUsed).toBe(2);
    // merge bills the total duration; extract-audio is a fixed 3.
    const clip = await uploadFixture(account, "clip.mp4");
    const merge = (await (
      await callTool(account, "merge", { uploadIds: [clip.uploadId, clip.uploadId, clip.uploadId] })
    ).json()) as { creditsUsed: number };
    expect(merge.creditsUsed).toBe(Math.max(1, Math.ceil((5 * 3 * clip.durationSeconds) / 60)));
    const tts = (await (await callTool(account, "text-to-speech", { text: "é".repeat(1001) })).json()) as {
      creditsUsed: number;
    };
    expect(tts.creditsUsed).toBe(6);
    await expectLedgerConsistent(account);
  });

  it("answers 402 with balance and required, and debits nothing", async () => {
    const account = await newAccount({ credits: 2 });
    const clip = await uploadFixture(account, "clip.mp4");
    const response = await callTool(account, "extract-audio", { uploadId: clip.uploadId });
    const body = await expectError(response, 402, "insufficient_credits");
    expect(body.error).toMatchObject({ balance: 2, required: 3 });
    expect(await balanceOf(account)).toBe(2);
    await expectLedgerConsistent(account);
  });

  it("makes the light tools free on monthly plans, taking plan credits first", async () => {
    const account = await newAccount({ plan: "pro", credits: 50 });
    const clip = await uploadFixture(account, "clip.mp4");
    const convert = (await (await callTool(account, "convert", { uploadId: clip.uploadId })).json()) as {
      creditsUsed: number;
      creditsRemaining: number;
    };
    expect(convert.creditsUsed).toBe(0);
    expect(convert.creditsRemaining).toBe(9050);
    const tts = (await (await callTool(account, "text-to-speech", { text: "Bonjour tout le monde" })).json()) as {
      creditsUsed: number;
    };
    expect(tts.creditsUsed).toBe(1);
    const row = await env.DB.prepare("SELECT plan_credits, purchased_credits FROM accounts WHERE id = ?")
      .bind(account.accountId)
      .first();
    expect(row).toEqual({ plan_credits: 8999, purchased_credits: 50 });
    await expectLedgerConsistent(account);
  });

  it("lets 50 concurrent calls spend a balance that covers 10: exactly 10 jobs", async () => {
    const account = await newAccount({ credits: 30 });
    const clip = await uploadFixture(account, "tone.wav");
    const responses = await Promise.all(
      Array.from({ length: 50 }, () => callTool(account, "extract-audio", { uploadId: clip.uploadId, format: "wav" })),
    );
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 402)).toHaveLength(40);
    expect(await balanceOf(account)).toBe(0);
    const jobs = await env.DB.prepare("SELECT COUNT(*) AS n FROM jobs WHERE account_id = ?")
      .bind(account.accountId)
      .first<{ n: number }>();
    expect(jobs!.n).toBe(10);
    await expectLedgerConsistent(account);
  });
});

describe("Idempotency-Key", () => {
  it("replays the first response without a new debit; another body is a 400", async () => {
    const account = await newAccount({ credits: 100 });
    const clip = await uploadFixture(account, "clip.mp4");
    const headers = { "idempotency-key": "order-42" };
    const first = await (await callTool(account, "extract-audio", { uploadId: clip.uploadId }, headers)).json();
    const again = await (
      await callTool(account, "extract-audio", { format: "mp3", uploadId: clip.uploadId }, headers)
    ).json();
    expect(again).toEqual(first);
    expect(await balanceOf(account)).toBe(97);
    await expectError(
      await callTool(account, "extract-audio", { uploadId: clip.uploadId, format: "wav" }, headers),
      400,
      "invalid_request",
      /Idempotency-Key/,
    );
    // Concurrent duplicates get one job between them.
    const concurrent = await Promise.all(
      Array.from({ length: 5 }, () =>
        callTool(account, "extract-audio", { uploadId: clip.uploadId }, { "idempotency-key": "burst" }),
      ),
    );
    const ids = new Set(await Promise.all(concurrent.map(async (r) => ((await r.json()) as { jobId: string }).jobId)));
    expect(ids.size).toBe(1);
    expect(await balanceOf(account)).toBe(94);
    await expectLedgerConsistent(account);
  });

  it("is scoped to the API key: another key of the account with the same Idempotency-Key gets a job of its own, which it can read", async () => {
    const account = await newAccount({ credits: 100 });
    const other = await newKey(account);
    const clip = await uploadFixture(account, "clip.mp4");
    const headers = { "idempotency-key": "shared-42" };
    const first = (await (await callTool(account, "extract-audio", { uploadId: clip.uploadId }, headers)).json()) as {
      jobId: string;
    };
    const second = (await (await callTool(other, "extract-audio", { uploadId: clip.uploadId }, headers)).json()) as {
      jobId: string;
    };
    expect(second.jobId).not.toBe(first.jobId);
    // Each key reads its own job, and only its own (docs/contract.md: a job is readable only by the key that created it).
    expect((await call(`/api/v1/jobs/${second.jobId}`, { headers: other.auth })).status).toBe(200);
    await expectError(await call(`/api/v1/jobs/${first.jobId}`, { headers: other.auth }), 404, "not_found");
    // Each key replays its own first answer.
    expect(
      (
        (await (await callTool(other, "extract-audio", { uploadId: clip.uploadId }, headers)).json()) as {
          jobId: string;
        }
      ).jobId,
    ).toBe(second.jobId);
    expect(await balanceOf(account)).toBe(94);
    await expectLedgerConsistent(account);
  });

  it("a call whose dispatch failed (500, refunded) does not hold its key: the retry starts a job", async () => {
    const { buildApp } = await import("../../src/app");
    const account = await newAccount({ credits: 100 });
    const clip = await uploadFixture(account, "clip.mp4");
    const init = {
      method: "POST",
      headers: { ...account.auth, "content-type": "application/json", "idempotency-key": "retry-me" },
      body: JSON.stringify({ uploadId: clip.uploadId }),
    };
    // The queue refusing the message, as a Queues outage would.
    const queueDown = { ...env, JOBS_QUEUE: { send: () => Promise.reject(new Error("queue unavailable")) } };
    const failed = await buildApp().request("/api/v1/extract-audio", init, queueDown);
    await expectError(failed, 500, "internal_error", /nothing was charged/);
    expect(await balanceOf(account)).toBe(100);
    const retry = await callTool(
      account,
      "extract-audio",
      { uploadId: clip.uploadId },
      { "idempotency-key": "retry-me" },
    );
    const envelope = (await retry.json()) as { jobId: string; creditsUsed: number };
    expect(retry.status).toBe(200);
    expect(envelope.creditsUsed).toBe(3);
    expect((await waitForJob(account, envelope.jobId)).status).toBe("completed");
    expect(await balanceOf(account)).toBe(97);
    await expectLedgerConsistent(account);
  });
});

describe("jobs: processing, reading, downloading", () => {
  it("extracts audio end to end with ffmpeg.wasm and serves the result with Range", async () => {
    const account = await newAccount({ credits: 100 });
    const clip = await uploadFixture(account, "clip.mp4");
    const { jobId } = (await (await callTool(account, "extract-audio", { uploadId: clip.uploadId })).json()) as {
      jobId: string;
    };
    const job = await waitForJob(account, jobId);
    expect(job.status, job.error).toBe("completed");
    expect(job.progress).toBeNull();
    expect(job.result!.filename).toBe("clip.mp3");
    expect(job.result!.url).toMatch(/^\/api\/download\/[A-Za-z0-9_-]{32}$/);
    expect(job.result!.url).not.toContain(jobId);
    // D1 keeps only the capability's SHA-256: the stored value does not download anything.
    const stored = await env.DB.prepare("SELECT download_id FROM jobs WHERE id = ?")
      .bind(jobId)
      .first<{ download_id: string }>();
    expect(stored!.download_id).toBe(await sha256Hex(job.result!.url.split("/").pop()!));
    expect((await call(`/api/download/${stored!.download_id}`)).status).toBe(404);

    const download = await call(job.result!.url);
    expect(download.status).toBe(200);
    expect(download.headers.get("content-type")).toBe("audio/mpeg");
    expect(download.headers.get("content-disposition")).toBe('attachment; filename="clip.mp3"');
    const bytes = new Uint8Array(await download.arrayBuffer());
    expect(Number(download.headers.get("content-length"))).toBe(bytes.byteLength);
    const meta = await parseBuffer(bytes, { mimeType: "audio/mpeg" }, { duration: true });
    expect(meta.format.codec).toMatch(/MPEG 1 Layer 3/);
    expect(meta.format.duration!).toBeGreaterThan(clip.durationSeconds - 0.1);
    expect(meta.format.duration!).toBeLessThan(clip.durationSeconds + 0.1);

    const partial = await call(job.result!.url, { headers: { range: "bytes=10-19" } });
    expect(partial.status).toBe(206);
    expect(partial.headers.get("content-range")).toBe(`bytes 10-19/${bytes.byteLength}`);
    expect(new Uint8Array(await partial.arrayBuffer())).toEqual(bytes.slice(10, 20));
    // A last position before the first is no valid range: ignored, the whole file (RFC 9110 14.1.1).
    const reversed = await call(job.result!.url, { headers: { range: "bytes=5-1" } });
    expect(reversed.status).toBe(200);
    expect((await reversed.arrayBuffer()).byteLength).toBe(bytes.byteLength);
    const suffix = await call(job.result!.url, { headers: { range: "bytes=-5" } });
    expect(new Uint8Array(await suffix.arrayBuffer())).toEqual(bytes.slice(-5));
    const head = await call(job.result!.url, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-length")).toBe(String(bytes.byteLength));
    expect((await call(job.result!.url, { headers: { range: `bytes=${bytes.byteLength}-` } })).status).toBe(416);
    // Conditional requests (RFC 9110 §13): a cached copy is revalidated; a range of a changed file is not served.
    const etag = download.headers.get("etag")!;
    expect(etag).toMatch(/^"/);
    const cached = await call(job.result!.url, { headers: { "if-none-match": `"other", ${etag}` } });
    expect(cached.status).toBe(304);
    expect(cached.headers.get("etag")).toBe(etag);
    expect((await cached.arrayBuffer()).byteLength).toBe(0);
    expect((await call(job.result!.url, { headers: { "if-none-match": '"other"' } })).status).toBe(200);
    const sameFile = await call(job.result!.url, { headers: { range: "bytes=0-9", "if-range": etag } });
    expect(sameFile.status).toBe(206);
    const sameDate = await call(job.result!.url, {
      headers: { range: "bytes=0-9", "if-range": download.headers.get("last-modified")! },
    });
    expect(sameDate.status).toBe(206);
    const changed = await call(job.result!.url, { headers: { range: "bytes=0-9", "if-range": '"nope"' } });
    expect(changed.status).toBe(200);
    expect((await changed.arrayBuffer()).byteLength).toBe(bytes.byteLength);
    await expectError(await call("/api/download/nope"), 404, "not_found");
    expect(await balanceOf(account)).toBe(97);
  });

  it("lets only the creating key read a job (404 otherwise)", async () => {
    const account = await newAccount({ credits: 100 });
    const clip = await uploadFixture(account, "clip.mp4");
    const { jobId } = (await (await callTool(account, "extract-audio", { uploadId: clip.uploadId })).json()) as {
      jobId: string;
    };
    const secondKey = await call(`/api/admin/accounts/${account.accountId}/keys`, {
      method: "POST",
      headers: { authorization: "Bearer test-admin-token" },
    });
    const { apiKey } = (await secondKey.json()) as { apiKey: string };
    await expectError(
      await call(`/api/v1/jobs/${jobId}`, { headers: { authorization: `Bearer ${apiKey}` } }),
      404,
      "not_found",
    );
    const stranger = await newAccount();
    await expectError(await call(`/api/v1/jobs/${jobId}`, { headers: stranger.auth }), 404, "not_found");
    await expectError(await call(`/api/v1/jobs/job_unknown`, { headers: account.auth }), 404, "not_found");
    await expectError(await call(`/api/v1/jobs/${jobId}`), 401, "unauthorized");
  });

  it("fails a job that cannot be processed and refunds it exactly once, even when delivered twice", async () => {
    const account = await newAccount({ credits: 100 });
    const clip = await uploadFixture(account, "clip.mp4");
    // Corrupt the stored source after upload: the engine must fail cleanly.
    const upload = await env.DB.prepare("SELECT object_key FROM uploads WHERE id = ?")
      .bind(clip.uploadId)
      .first<{ object_key: string }>();
    await env.MEDIA.put(upload!.object_key, new Uint8Array(4096).fill(7));
    const { jobId } = (await (await callTool(account, "extract-audio", { uploadId: clip.uploadId })).json()) as {
      jobId: string;
    };
    const job = await waitForJob(account, jobId);
    expect(job.status).toBe("failed");
    expect(job.error).toMatch(/could not be processed/);
    expect(job.result).toBeUndefined();
    expect(await balanceOf(account)).toBe(100);

    // A redelivery of the same message changes nothing.
    const acked: string[] = [];
    const message = {
      id: "m1",
      timestamp: new Date(),
      body: { jobId },
      attempts: 2,
      ack: () => acked.push("ack"),
      retry: () => acked.push("retry"),
    };
    await consumeJobs(
      { queue: "media-jobs", messages: [message], ackAll() {}, retryAll() {} } as unknown as MessageBatch<unknown>,
      env,
    );
    expect(acked).toEqual(["ack"]);
    const refunds = await env.DB.prepare("SELECT COUNT(*) AS n FROM ledger WHERE job_id = ? AND kind = 'refund'")
      .bind(jobId)
      .first<{ n: number }>();
    expect(refunds!.n).toBe(1);
    expect(await balanceOf(account)).toBe(100);
    await expectLedgerConsistent(account);
  });

  it("handles a batch of a job the tool call started, one still queued, an unknown job and a malformed message: only the queued one runs, all are acknowledged", async () => {
    const account = await newAccount({ credits: 100 });
    const clip = await uploadFixture(account, "clip.mp4");
    const start = async () =>
      ((await (await callTool(account, "extract-audio", { uploadId: clip.uploadId })).json()) as { jobId: string })
        .jobId;
    const [started, lost] = [await start(), await start()];
    for (const jobId of [started, lost]) expect((await waitForJob(account, jobId)).status).toBe("completed");
    const finishedAt = async (jobId: string) =>
      (await env.DB.prepare("SELECT finished_at FROM jobs WHERE id = ?")
        .bind(jobId)
        .first<{ finished_at: number | null }>())!.finished_at;
    const startedFinishedAt = await finishedAt(started);
    // As if the tool call had never reached the runner for `lost`.
    await env.DB.prepare(
      "UPDATE jobs SET status = 'queued', started_at = NULL, finished_at = NULL, expires_at = NULL, result_key = NULL, result_filename = NULL WHERE id = ?",
    )
      .bind(lost)
      .run();

    const outcomes: string[] = [];
    const message = (id: string, body: unknown) => ({
      id,
      timestamp: new Date(),
      body,
      attempts: 1,
      ack: () => outcomes.push(`${id} ack`),
      retry: () => outcomes.push(`${id} retry`),
    });
    const messages = [
      message("m-started", { jobId: started }),
      message("m-lost", { jobId: lost }),
      message("m-unknown", { jobId: "job_unknown" }),
      message("m-bad", { nope: 1 }),
    ];
    await consumeJobs(
      { queue: "media-jobs", messages, ackAll() {}, retryAll() {} } as unknown as MessageBatch<unknown>,
      env,
    );

    expect(outcomes.sort()).toEqual(["m-bad ack", "m-lost ack", "m-started ack", "m-unknown ack"]);
    expect(await finishedAt(started)).toBe(startedFinishedAt);
    const rerun = await waitForJob(account, lost);
    expect(rerun.status).toBe("completed");
    expect(rerun.result?.filename).toMatch(/\.mp3$/);
    await expectLedgerConsistent(account);
  });

  it("refunds tools this server cannot run yet", async () => {
    const account = await newAccount({ credits: 100 });
    const { jobId } = (await (await callTool(account, "text-to-speech", { text: "Bonjour" })).json()) as {
      jobId: string;
    };
    const job = await waitForJob(account, jobId);
    expect(job.status).toBe("failed");
    expect(job.error).toMatch(/refunded/);
    expect(await balanceOf(account)).toBe(100);
    await expectLedgerConsistent(account);
  });
});

describe("maintenance: watchdog, expiry, plan renewal", () => {
  /** A finished 3-credit extract-audio job, for a test to put back into a stalled state. */
  async function finishedJob() {
    const account = await newAccount({ credits: 100 });
    const clip = await uploadFixture(account, "clip.mp4");
    const { jobId } = (await (await callTool(account, "extract-audio", { uploadId: clip.uploadId })).json()) as {
      jobId: string;
    };
    await waitForJob(account, jobId);
    return { account, jobId };
  }

  /** The watchdog fails the stalled job once (a second run finds nothing) and refunds its 3 credits. */
  async function expectWatchdogRefundsOnce(account: Awaited<ReturnType<typeof newAccount>>, jobId: string) {
    const balanceBefore = await balanceOf(account);
    expect(await failStuckJobs(env.DB, Date.now())).toBeGreaterThanOrEqual(1);
    expect(await failStuckJobs(env.DB, Date.now())).toBe(0);
    const job = await waitForJob(account, jobId);
    expect(await balanceOf(account)).toBe(balanceBefore + 3);
    return job;
  }

  it("fails and refunds a job stuck in processing past its deadline, once", async () => {
    const { account, jobId } = await finishedJob();
    // Simulate a worker that died mid-job.
    await env.DB.prepare(
      "UPDATE jobs SET status = 'processing', deadline_at = ?, finished_at = NULL, expires_at = NULL WHERE id = ?",
    )
      .bind(Date.now() - 1, jobId)
      .run();
    const job = await expectWatchdogRefundsOnce(account, jobId);
    expect(job.status).toBe("failed");
  });

  it("tells the runner of a job it fails to stop its pending stage: output deleted, alarm and state gone", async () => {
    const { account, jobId } = await finishedJob();
    await env.DB.prepare(
      "UPDATE jobs SET status = 'processing', deadline_at = ?, finished_at = NULL, expires_at = NULL WHERE id = ?",
    )
      .bind(Date.now() - 1, jobId)
      .run();
    // The runner still waits for a backend stage (its alarm lost or not due), which has written part of its output.
    const outputKey = `tmp/${jobId}/stage.mp3`;
    await env.MEDIA.put(outputKey, new Uint8Array(1024));
    const runner = env.MEDIA_RUNNER.get(env.MEDIA_RUNNER.idFromName(jobId));
    await runInDurableObject(runner, async (_instance, state) => {
      await state.storage.put("pending", { jobId, stage: "ffmpeg", outputKey, deadlineAt: Date.now() + 3600_000 });
      await state.storage.setAlarm(Date.now() + 3600_000);
    });
    await runMaintenance(env.DB, env.MEDIA, Date.now(), (id) => stopJobRunner(env, id));
    expect((await waitForJob(account, jobId)).status).toBe("failed");
    expect(await env.MEDIA.head(outputKey)).toBeNull();
    const left = await runInDurableObject(runner, async (_instance, state) => ({
      alarm: await state.storage.getAlarm(),
      keys: [...(await state.storage.list()).keys()],
    }));
    expect(left).toEqual({ alarm: null, keys: [] });
  });

  it("fails and refunds a job still queued an hour after its call (its message was lost), once", async () => {
    const { account, jobId } = await finishedJob();
    // As if the queue had never delivered it: queued, created over an hour ago.
    await env.DB.prepare(
      "UPDATE jobs SET status = 'queued', created_at = ?, started_at = NULL, finished_at = NULL, expires_at = NULL, result_key = NULL WHERE id = ?",
    )
      .bind(Date.now() - 3600_001, jobId)
      .run();
    const job = await expectWatchdogRefundsOnce(account, jobId);
    expect(job).toMatchObject({ status: "failed", error: "The job was never started; credits refunded." });
  });

  it("expires uploads, jobs and results after 3 hours and deletes their objects", async () => {
    const account = await newAccount({ credits: 100 });
    const clip = await uploadFixture(account, "clip.mp4");
    const { jobId } = (await (await callTool(account, "extract-audio", { uploadId: clip.uploadId })).json()) as {
      jobId: string;
    };
    const job = await waitForJob(account, jobId);
    const row = await env.DB.prepare("SELECT result_key FROM jobs WHERE id = ?")
      .bind(jobId)
      .first<{ result_key: string }>();
    const upload = await env.DB.prepare("SELECT object_key FROM uploads WHERE id = ?")
      .bind(clip.uploadId)
      .first<{ object_key: string }>();

    const later = Date.now() + 3 * 3600 * 1000 + 60_000;
    await runMaintenance(env.DB, env.MEDIA, later);
    expect(await env.MEDIA.head(row!.result_key)).toBeNull();
    expect(await env.MEDIA.head(upload!.object_key)).toBeNull();
    await expectError(await call(job.result!.url), 404, "not_found");
    // The wall clock has not moved, but the rows are gone or marked expired for readers at `later`.
    const uploadRow = await env.DB.prepare("SELECT id FROM uploads WHERE id = ?").bind(clip.uploadId).first();
    expect(uploadRow).toBeNull();
  });

  it("keeps the inputs of a job that has not ended past the uploads' expiry", async () => {
    const account = await newAccount({ credits: 100 });
    const clip = await uploadFixture(account, "clip.mp4");
    const { jobId } = (await (await callTool(account, "extract-audio", { uploadId: clip.uploadId })).json()) as {
      jobId: string;
    };
    await waitForJob(account, jobId);
    // As if it were still running (a completed job never goes back; this only pins its inputs).
    await env.DB.prepare("UPDATE jobs SET status = 'processing', deadline_at = ? WHERE id = ?")
      .bind(Date.now() + 99 * 3600_000, jobId)
      .run();
    await runMaintenance(env.DB, env.MEDIA, Date.now() + 4 * 3600 * 1000);
    expect(await env.DB.prepare("SELECT id FROM uploads WHERE id = ?").bind(clip.uploadId).first()).not.toBeNull();
  });

  it("renews monthly plan credits without rollover; purchased credits stay", async () => {
    const account = await newAccount({ plan: "pro", credits: 40 });
    const { plan_period_end } = (await env.DB.prepare("SELECT plan_period_end FROM accounts WHERE id = ?")
      .bind(account.accountId)
      .first<{ plan_period_end: number }>())!;
    expect(plan_period_end).toBeGreaterThan(Date.now());
    await runMaintenance(env.DB, env.MEDIA, plan_period_end + 1);
    const row = await env.DB.prepare(
      "SELECT plan_credits, purchased_credits, plan_period_end FROM accounts WHERE id = ?",
    )
      .bind(account.accountId)
      .first<Record<string, number>>();
    expect(row!.plan_credits).toBe(9000);
    expect(row!.purchased_credits).toBe(40);
    expect(row!.plan_period_end).toBeGreaterThan(plan_period_end);
    // Running again in the same period does nothing.
    await runMaintenance(env.DB, env.MEDIA, plan_period_end + 2);
    const entries = await env.DB.prepare(
      "SELECT kind, amount FROM ledger WHERE account_id = ? AND kind IN ('plan_expiry', 'plan_grant') ORDER BY created_at, kind DESC",
    )
      .bind(account.accountId)
      .all<{ kind: string; amount: number }>();
    expect(entries.results).toEqual([
      { kind: "plan_grant", amount: 9000 },
      { kind: "plan_grant", amount: 9000 },
      { kind: "plan_expiry", amount: -9000 },
    ]);
    expect(await balanceOf(account)).toBe(9040);
    await expectLedgerConsistent(account);
  });
});
