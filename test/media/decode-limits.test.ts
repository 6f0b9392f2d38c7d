/**
 * Media bombs: what a decoder may be made to allocate is capped by what it sees, not by what the
 * header states. A video whose header states more than 8K is refused at the call, before any
 * debit; one whose header says 64x64 while its frames are larger than 8K fails in the run (the
 * decoder refuses those frames, allocating nothing for them) and is refunded. Jobs run on
 * ffmpeg.wasm here; test/e2e/security.test.ts runs the same file on native ffmpeg.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MAX_VIDEO_PIXELS, withDecodeLimits } from "@media-credits/wire/decode-limits";
import { runFfmpegWasm } from "../../src/media-worker/ffmpeg-wasm";
import { forgeMp4Dimensions } from "../helpers/forged-media";
import {
  balanceOf,
  call,
  callTool,
  expectError,
  expectLedgerConsistent,
  fixtureBytes,
  newAccount,
  uploadBytes,
  waitForJob,
} from "../helpers/api";

describe("decode limits", () => {
  it("puts -max_pixels before every upload's -i and the allocation cap in front", () => {
    expect(
      withDecodeLimits(["-y", "-i", "in0.mp4", "-i", "logo.png", "-f", "lavfi", "-i", "anullsrc", "out.mp4"], {
        "in0.mp4": "video",
        "logo.png": "image",
      }),
    ).toEqual([
      "-max_alloc",
      "268435456",
      "-y",
      "-max_pixels",
      String(MAX_VIDEO_PIXELS),
      "-i",
      "in0.mp4",
      "-max_pixels",
      "50000000",
      "-i",
      "logo.png",
      "-f",
      "lavfi",
      "-i",
      "anullsrc",
      "out.mp4",
    ]);
  });

  it("keeps a result whose sound stream is rightly empty: a trim past the end of a shorter sound track", async () => {
    const account = await newAccount({ credits: 100 });
    const upload = (await (
      await uploadBytes(account, await fixtureBytes("short-sound.mp4"), "short-sound.mp4")
    ).json()) as { uploadId: string };
    const envelope = (await (
      await callTool(account, "trim", { uploadId: upload.uploadId, start: 1.5, end: 2.5 })
    ).json()) as { jobId: string };
    const job = await waitForJob(account, envelope.jobId, 120_000);
    expect(job.status, job.error).toBe("completed");
    const bytes = new Uint8Array(await (await call(job.result!.url)).arrayBuffer());
    // One second of the 160x120 picture at 25 frames a second, decoded.
    const frames = await runFfmpegWasm({
      args: ["-i", "in.mp4", "-map", "0:v", "-f", "rawvideo", "-pix_fmt", "rgb24", "out.rgb"],
      inputs: { "in.mp4": bytes },
      outputs: ["out.rgb"],
    });
    expect(Math.round(frames.outputs["out.rgb"]!.byteLength / (160 * 120 * 3))).toBeGreaterThanOrEqual(24);
    expect(Math.round(frames.outputs["out.rgb"]!.byteLength / (160 * 120 * 3))).toBeLessThanOrEqual(26);
  });

  it("refuses before any debit a video whose header states more than 8K", async () => {
    const account = await newAccount({ credits: 100 });
    const stated = forgeMp4Dimensions(await fixtureBytes("frames-over-8k.mp4"), 8704, 4352);
    const upload = (await (await uploadBytes(account, stated, "big.mp4")).json()) as { uploadId: string };
    await expectError(
      await callTool(account, "convert", { uploadId: upload.uploadId, format: "webm" }),
      400,
      "invalid_request",
      /^uploadId: the video is 8704x4352; frames larger than 8192x4320 \(8K\) are not processed/,
    );
    expect(await balanceOf(account)).toBe(100);
    const jobs = await env.DB.prepare("SELECT COUNT(*) AS n FROM jobs WHERE account_id = ?")
      .bind(account.accountId)
      .first<{ n: number }>();
    expect(jobs!.n).toBe(0);
  });

  it("fails and refunds a job whose 64x64 header hides frames over 8K, the decoder allocating nothing for them", async () => {
    const account = await newAccount({ credits: 100 });
    const bomb = forgeMp4Dimensions(await fixtureBytes("frames-over-8k.mp4"), 64, 64);
    const upload = (await (await uploadBytes(account, bomb, "small.mp4")).json()) as { uploadId: string };
    for (const call of [
      { tool: "convert", body: { uploadId: upload.uploadId, format: "mov" } },
      { tool: "watermark", body: { uploadId: upload.uploadId, watermarkText: "mark" } },
    ]) {
      const envelope = (await (await callTool(account, call.tool, call.body)).json()) as {
        jobId: string;
        creditsUsed: number;
      };
      expect(envelope.creditsUsed).toBe(1);
      const job = await waitForJob(account, envelope.jobId, 120_000);
      expect(job.status, call.tool).toBe("failed");
      expect(job.error).toMatch(/a frame of the video is larger than 8192x4320/);
    }
    expect(await balanceOf(account)).toBe(100);
    await expectLedgerConsistent(account);
    // The same decode without the cap makes the wasm heap hold 8K frames; with it the heap stays small.
    const uncapped = await runFfmpegWasm({
      args: ["-i", "in.mp4", "-f", "null", "-"],
      inputs: { "in.mp4": bomb },
      outputs: [],
    });
    await expect(
      runFfmpegWasm({
        args: withDecodeLimits(["-i", "in.mp4", "-f", "null", "-"], { "in.mp4": "video" }),
        inputs: { "in.mp4": bomb },
        outputs: [],
      }),
    ).rejects.toThrow(/larger than 8192x4320/);
    expect(uncapped.peakWasmBytes).toBeGreaterThan(100 * 1024 * 1024);
  });
});
