/**
 * A header cannot set the price: files whose container header understates their length (MP4
 * `mvhd`, Matroska `Duration`, MP3 Xing) are billed for what the header says, and every run reads
 * no more than that (plus a small tolerance). A job whose media runs past what was paid fails and
 * is refunded in full; an honest file of the same kind completes. Jobs run on ffmpeg.wasm here
 * (this Worker has no backend); test/e2e/security.test.ts runs the same attack on native ffmpeg
 * and the speech engines.
 */
import { describe, expect, it } from "vitest";
import {
  boundInputs,
  checkProcessed,
  inputBoundSeconds,
  maxProcessedMs,
  OverrunError,
  progressOutTimeMs,
} from "@media-credits/wire/billed-duration";
import { runFfmpegWasm } from "../../src/media-worker/ffmpeg-wasm";
import { forgeMatroskaDuration, forgeMp3Duration, forgeMp4Duration } from "../helpers/forged-media";
import {
  ADMIN,
  balanceOf,
  call,
  callTool,
  expectLedgerConsistent,
  fixtureBytes,
  newAccount,
  uploadBytes,
  waitForJob,
  type TestAccount,
} from "../helpers/api";

async function uploadForged(account: TestAccount, bytes: Uint8Array, name: string) {
  const response = await uploadBytes(account, bytes, name);
  const body = (await response.json()) as { uploadId: string; durationSeconds: number };
  expect(response.status, JSON.stringify(body)).toBe(200);
  return body;
}

const forgeries = [
  ["long-30s.mp4", (b: Uint8Array) => forgeMp4Duration(b, 1)],
  ["long-30s.mkv", (b: Uint8Array) => forgeMatroskaDuration(b, 1)],
  ["long-61s.mp3", (b: Uint8Array) => forgeMp3Duration(b, 1)],
] as const;

describe("billed duration", () => {
  it("bounds each media input with -t and judges the result against what was billed", () => {
    expect(inputBoundSeconds(1000)).toBe("2.010");
    expect(boundInputs(["-y", "-i", "in0.mp4", "-i", "logo.png", "out.mp4"], { "in0.mp4": 1000 })).toEqual([
      "-y",
      "-t",
      "2.010",
      "-i",
      "in0.mp4",
      "-i",
      "logo.png",
      "out.mp4",
    ]);
    // A trim's own bound is kept.
    expect(boundInputs(["-ss", "1", "-t", "2", "-i", "in0.mp4", "out.mp4"], { "in0.mp4": 5000 })).toEqual([
      "-ss",
      "1",
      "-t",
      "2",
      "-i",
      "in0.mp4",
      "out.mp4",
    ]);
    expect(maxProcessedMs([1000, 2000])).toBe(1000 + 505 + 2000 + 510);
    expect(() => checkProcessed([1000], "out_time_us=1400000\nprogress=end\n")).not.toThrow();
    expect(() => checkProcessed([1000], "out_time_us=2010000\nprogress=end\n")).toThrow(OverrunError);
  });

  for (const [fixture, forge] of forgeries) {
    it(`refunds a job on ${fixture} whose header claims 1 s: the run stops at the bound and fails`, async () => {
      const account = await newAccount({ credits: 100 });
      const upload = await uploadForged(account, forge(await fixtureBytes(fixture)), fixture);
      expect(upload.durationSeconds).toBeLessThan(1.01);
      const envelope = (await (await callTool(account, "clean-audio", { uploadId: upload.uploadId })).json()) as {
        jobId: string;
        creditsUsed: number;
      };
      expect(envelope.creditsUsed).toBe(1);
      const job = await waitForJob(account, envelope.jobId, 120_000);
      expect(job.status).toBe("failed");
      expect(job.error).toMatch(/runs longer than the 1\.0 s it was billed for/);
      expect(await balanceOf(account)).toBe(100);
      await expectLedgerConsistent(account);
    });
  }

  it("stops a stream copy too (convert), and reads no more than the bound", async () => {
    const account = await newAccount({ credits: 100 });
    const forged = forgeMp4Duration(await fixtureBytes("long-30s.mp4"), 1);
    const upload = await uploadForged(account, forged, "forged.mp4");
    const job = await waitForJob(
      account,
      (
        (await (await callTool(account, "convert", { uploadId: upload.uploadId, format: "mkv" })).json()) as {
          jobId: string;
        }
      ).jobId,
      120_000,
    );
    expect(job.status).toBe("failed");
    expect(job.error).toMatch(/billed for/);
    // What ffmpeg does with the bound alone: about two seconds of 30 s.
    const run = await runFfmpegWasm({
      args: ["-progress", "p.txt", "-t", inputBoundSeconds(1000), "-i", "in.mp4", "-c", "copy", "out.mkv"],
      inputs: { "in.mp4": forged },
      outputs: ["out.mkv"],
      reports: ["p.txt"],
    });
    const written = progressOutTimeMs(run.reports["p.txt"]!)! / 1000;
    expect(written).toBeGreaterThan(1.9);
    expect(written).toBeLessThan(2.2);
    expect(await balanceOf(account)).toBe(100);
  });

  it("completes honest files of the same kinds", async () => {
    const account = await newAccount({ credits: 100 });
    for (const fixture of ["long-30s.mkv", "long-61s.mp3"]) {
      const upload = await uploadForged(account, await fixtureBytes(fixture), fixture);
      const job = await waitForJob(
        account,
        (
          (await (await callTool(account, "extract-audio", { uploadId: upload.uploadId, format: "wav" })).json()) as {
            jobId: string;
          }
        ).jobId,
        120_000,
      );
      expect(job.status, job.error).toBe("completed");
    }
  });

  it("keeps a test key within its two minutes whatever the header says", async () => {
    const account = await newAccount({ credits: 0 });
    const keyResponse = await call(`/api/admin/accounts/${account.accountId}/keys?mode=test`, {
      method: "POST",
      headers: ADMIN,
    });
    const { apiKey } = (await keyResponse.json()) as { apiKey: string };
    const key = { ...account, apiKey, auth: { authorization: `Bearer ${apiKey}` } };
    // 150 s of audio claiming 60 s passes the cap at the call, and is cut and refused in the run.
    const upload = await uploadForged(key, forgeMp3Duration(await fixtureBytes("long-150s.mp3"), 60), "long.mp3");
    expect(upload.durationSeconds).toBeLessThan(61);
    const job = await waitForJob(
      key,
      (
        (await (await callTool(key, "extract-audio", { uploadId: upload.uploadId, format: "wav" })).json()) as {
          jobId: string;
        }
      ).jobId,
      120_000,
    );
    expect(job.status).toBe("failed");
    expect(job.error).toMatch(/runs longer than the 6\d\.\d s it was billed for/);
  });
});
