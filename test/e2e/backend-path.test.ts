/**
 * The tools the router normally keeps in the Worker (copies, audio, small re-encodes), run on
 * the native backend as they are for large inputs: same commands, results checked by content.
 */
import path from "node:path";
import { beforeAll, describe, expect, inject, it } from "vitest";
import {
  balance,
  download,
  ffprobe,
  FIXTURES,
  frameAt,
  generate,
  markPixels,
  newClient,
  pixel,
  rmsDb,
  runTool,
  stream,
  testKeyOf,
  upload,
  type Client,
  type FinishedJob,
} from "./client";

let client: Client;
let clip: { uploadId: string; durationSeconds: number };

beforeAll(async () => {
  client = await newClient(inject("e2eForcedBackendUrl"));
  clip = await upload(client, path.join(FIXTURES, "clip.mp4"));
});

describe("on the native backend", () => {
  it.each([
    ["mp3", "mp3"],
    ["wav", "pcm_s16le"],
    ["aac", "aac"],
  ])("extract-audio %s", async (format, codec) => {
    const probe = ffprobe(
      await download(client, await runTool(client, "extract-audio", { uploadId: clip.uploadId, format })),
    );
    expect(stream(probe, "audio")!.codec_name).toBe(codec);
    expect(stream(probe, "video")).toBeUndefined();
    expect(Number(probe.format.duration)).toBeCloseTo(clip.durationSeconds, 1);
  });

  it("convert to mkv by stream copy", async () => {
    const probe = ffprobe(
      await download(client, await runTool(client, "convert", { uploadId: clip.uploadId, format: "mkv" })),
    );
    expect(probe.format.format_name).toContain("matroska");
    expect(stream(probe, "video")!.codec_name).toBe("h264");
    expect(Number(probe.format.duration)).toBeCloseTo(clip.durationSeconds, 1);
  });

  it("trim of an audio file stays audio, exact length", async () => {
    const tone = await upload(client, path.join(FIXTURES, "tone.mp3"));
    const probe = ffprobe(
      await download(client, await runTool(client, "trim", { uploadId: tone.uploadId, start: 0.5, end: 2 })),
    );
    expect(stream(probe, "video")).toBeUndefined();
    expect(Math.abs(Number(probe.format.duration) - 1.5)).toBeLessThan(0.06);
  });

  it("trims a long MP4 read over HTTP (ranges from the keyframe) to the exact frame, with its audio", async () => {
    // Each frame's grey level follows its number (7 levels apart), one keyframe every 10 s.
    const counter = generate("counter-30s.mp4", [
      "-f",
      "lavfi",
      "-i",
      "color=c=black:size=160x120:rate=25:duration=30,geq=lum='mod(N*7,200)+20':cb=128:cr=128",
      "-f",
      "lavfi",
      "-i",
      "sine=frequency=440:duration=30",
      "-c:v",
      "libx264",
      "-g",
      "250",
      "-pix_fmt",
      "yuv420p",
      "-c:a",
      "aac",
      "-shortest",
    ]);
    const source = await upload(client, counter);
    const file = await download(
      client,
      await runTool(client, "trim", { uploadId: source.uploadId, start: 20.4, end: 21.4 }),
    );
    const probe = ffprobe(file);
    expect(Math.abs(Number(probe.format.duration) - 1)).toBeLessThan(0.06);
    expect(stream(probe, "audio")!.codec_name).toBe("aac");
    const grey = (video: string, at: number) => pixel(frameAt(video, at, 160, 120), 160, 80, 60)[0];
    const first = grey(file, 0);
    // Frame 510 (20.4 s) of the source, not its neighbours 509 and 511 nor the keyframe at 20 s.
    expect(Math.abs(first - grey(counter, 20.4))).toBeLessThanOrEqual(3);
    for (const other of [20.36, 20.44, 20])
      expect(Math.abs(first - grey(counter, other)), `against ${other} s`).toBeGreaterThan(4);
  });

  it("clean-audio keeps the video and the duration", async () => {
    const probe = ffprobe(await download(client, await runTool(client, "clean-audio", { uploadId: clip.uploadId })));
    expect(stream(probe, "video")!.codec_name).toBe("h264");
    expect(Number(probe.format.duration)).toBeCloseTo(clip.durationSeconds, 1);
  });

  it("clean-audio keeps an audio track that starts after the picture in its place (filtered once, then normalised)", async () => {
    const source = path.join(FIXTURES, "late-audio.mp4");
    const before = ffprobe(source);
    const late = await upload(client, source);
    const after = ffprobe(await download(client, await runTool(client, "clean-audio", { uploadId: late.uploadId })));
    const start = (probe: typeof before) => Number(stream(probe, "audio")!.start_time);
    expect(start(before)).toBeGreaterThan(0.4);
    // Within one AAC frame of priming (21 ms at 48 kHz).
    expect(Math.abs(start(after) - start(before))).toBeLessThan(0.03);
    expect(Math.abs(Number(stream(after, "audio")!.duration) - Number(stream(before, "audio")!.duration))).toBeLessThan(
      0.05,
    );
    expect(stream(after, "video")!.codec_name).toBe("h264");
  });

  it("watermark text and subtitles render with the shipped fonts", async () => {
    const black = await upload(
      client,
      generate("black-backend.mp4", [
        "-f",
        "lavfi",
        "-i",
        "color=c=black:size=320x240:rate=25:duration=2",
        "-c:v",
        "libx264",
        "-pix_fmt",
        "yuv420p",
      ]),
    );
    const marked = await download(
      client,
      await runTool(client, "watermark", { uploadId: black.uploadId, watermarkText: "Démo", opacity: 100 }),
    );
    const srt = "1\n00:00:00,000 --> 00:00:02,000\nÇa marche\n";
    const captioned = await download(
      client,
      await runTool(client, "subtitles", { uploadId: black.uploadId, srtContent: srt, fontId: "anton" }),
    );
    // The script faces travel to the backend too (a missing font fails the job).
    const arabicMark = await download(
      client,
      await runTool(client, "watermark", { uploadId: black.uploadId, watermarkText: "مرحبا", opacity: 100 }),
    );
    const scriptSrt = "1\n00:00:00,000 --> 00:00:02,000\nمرحبا שלום नमस्ते สวัสดี\n日本語です 你好 안녕\n";
    const scriptCaptions = await download(
      client,
      await runTool(client, "subtitles", { uploadId: black.uploadId, srtContent: scriptSrt }),
    );
    for (const file of [marked, captioned, arabicMark, scriptCaptions]) {
      const frame = frameAt(file, 1, 320, 240);
      let bright = 0;
      for (let y = 0; y < 240; y++) for (let x = 0; x < 320; x++) if (pixel(frame, 320, x, y)[0] > 150) bright++;
      expect(bright).toBeGreaterThan(30);
    }
  });

  it("marks a test key's results TEST as the in-Worker engine does, spending nothing", async () => {
    const key = await testKeyOf(client);
    const before = await balance(client);
    const black = generate("black-test-key.mp4", [
      "-f",
      "lavfi",
      "-i",
      "color=c=black:size=320x240:rate=25:duration=2",
      "-f",
      "lavfi",
      "-i",
      "anullsrc=r=48000:cl=stereo",
      "-shortest",
      "-c:v",
      "libx264",
      "-pix_fmt",
      "yuv420p",
      "-c:a",
      "aac",
    ]);
    const source = await upload(key, black);
    for (const [tool, body] of [
      ["trim", { start: 0, end: 1.5 }],
      ["convert", { format: "mkv" }],
    ] as const) {
      const job = await runTool(key, tool, { uploadId: source.uploadId, ...body });
      expect(job.creditsUsed).toBe(0);
      const file = await download(key, job);
      const probe = ffprobe(file);
      expect(probe.format.tags?.comment ?? probe.format.tags?.COMMENT).toBe("TEST");
      expect(stream(probe, "video")!.codec_name).toBe("h264");
      // The source is black: the mark's white letters are the only bright pixels, all in the top right.
      const { corner, elsewhere } = markPixels(file);
      expect(corner, tool).toBeGreaterThan(100);
      expect(elsewhere, tool).toBe(0);
      // The source is silent: what the result's sound carries is the beep (0.3 s of -14 dBFS in the first 1.5 s).
      expect(rmsDb(file), tool).toBeGreaterThan(-30);
    }
    expect(await balance(client)).toBe(before);
  });

  it("answers a status read that waits when its time is up with the job still running, then the moment the job ends", async () => {
    // 20 s of 640x360 into VP8: seconds of work on the backend.
    const long = generate("long-640x360.mp4", [
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=640x360:rate=25:duration=20",
      "-f",
      "lavfi",
      "-i",
      "sine=duration=20",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-pix_fmt",
      "yuv420p",
      "-c:a",
      "aac",
      "-shortest",
    ]);
    const source = await upload(client, long);
    const response = await fetch(`${client.base}/api/v1/convert`, {
      method: "POST",
      headers: { ...client.auth, "content-type": "application/json" },
      body: JSON.stringify({ uploadId: source.uploadId, format: "webm" }),
    });
    const { jobId } = (await response.json()) as { jobId: string };
    const read = async (wait: number) => {
      const started = Date.now();
      const job = (await (
        await fetch(`${client.base}/api/v1/jobs/${jobId}?wait=${wait}`, { headers: client.auth })
      ).json()) as FinishedJob;
      return { job, ms: Date.now() - started };
    };
    const early = await read(1);
    expect(["queued", "processing"]).toContain(early.job.status);
    expect(early.ms).toBeGreaterThanOrEqual(1000);
    const ended = await read(50);
    expect(ended.job.status, ended.job.error).toBe("completed");
    const probe = ffprobe(await download(client, ended.job));
    expect(stream(probe, "video")!.codec_name).toBe("vp8");
    expect(stream(probe, "audio")!.codec_name).toBe("opus");
    expect(Number(probe.format.duration)).toBeCloseTo(20, 0);
  });
});
