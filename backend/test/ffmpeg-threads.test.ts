/**
 * Every native ffmpeg runs with its thread pools capped (FFMPEG_THREADS): ffmpeg sizes them from the
 * host's cores, and on a large host the threads of one 4K encode hold more frames than the 3 GiB
 * address-space limit allows. Real runs under prlimit, as the backend spawns them.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runFfmpeg, threadCapped } from "../src/ffmpeg.ts";
import { ffmpeg, scratchDir } from "./helpers.ts";
import { rmSync } from "node:fs";
import path from "node:path";

const LIMIT = 3 * 1024 ** 3;
let dir: string;

beforeAll(async () => {
  dir = scratchDir();
  await ffmpeg([
    "-f",
    "lavfi",
    "-i",
    "testsrc2=size=3840x2160:rate=25:duration=1",
    "-c:v",
    "libx264",
    "-preset",
    "ultrafast",
    "-pix_fmt",
    "yuv420p",
    path.join(dir, "4k.mp4"),
  ]);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("ffmpeg thread cap", () => {
  it("caps each decoder, the filter graphs and the encoder, keeping an encoder count the command chose", () => {
    expect(threadCapped(["-y", "-i", "a.mp4", "-i", "b.wav", "-c:v", "libx264", "out.mp4"], 8)).toEqual([
      "-filter_threads",
      "8",
      "-filter_complex_threads",
      "8",
      "-y",
      "-threads",
      "8",
      "-i",
      "a.mp4",
      "-threads",
      "8",
      "-i",
      "b.wav",
      "-c:v",
      "libx264",
      "-threads",
      "8",
      "out.mp4",
    ]);
    // VP8's single thread (encoders.ts) stays.
    expect(threadCapped(["-i", "a.mp4", "-c:v", "libvpx", "-threads", "1", "out.webm"], 8)).toEqual([
      "-filter_threads",
      "8",
      "-filter_complex_threads",
      "8",
      "-threads",
      "8",
      "-i",
      "a.mp4",
      "-c:v",
      "libvpx",
      "-threads",
      "1",
      "out.webm",
    ]);
  });

  it("keeps a 4K x264 encode within the memory limit, which 16 threads (an 11-core host's choice) break", async () => {
    const encode = (threads: number) =>
      runFfmpeg({
        ffmpegPath: "ffmpeg",
        args: [
          "-v",
          "error",
          "-y",
          "-i",
          "4k.mp4",
          "-c:v",
          "libx264",
          "-preset",
          "veryfast",
          "-crf",
          "23",
          "-f",
          "null",
          "-",
        ],
        cwd: dir,
        memoryLimitBytes: LIMIT,
        threads,
      });
    const capped = await encode(8);
    expect(capped.exitCode, capped.stderr).toBe(0);
    const wide = await encode(16);
    expect(wide.exitCode).not.toBe(0);
    expect(wide.stderr).toMatch(/malloc of size \d+ failed|Cannot allocate memory/);
  }, 120_000);
});
