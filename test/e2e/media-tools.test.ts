/**
 * The seven media tools through the public API of a running stack, results checked by what
 * they contain. `main` routes video re-encodes to the native backend and copies/audio to
 * ffmpeg.wasm, so both engines are exercised; `nobackend` shows the failure path.
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
  newClient,
  pixel,
  rmsDb,
  runTool,
  stream,
  upload,
  type Client,
} from "./client";

let client: Client;
let clip: { uploadId: string; durationSeconds: number };
let webm: { uploadId: string; durationSeconds: number };

beforeAll(async () => {
  client = await newClient(inject("e2eMainUrl"));
  clip = await upload(client, path.join(FIXTURES, "clip.mp4"));
  webm = await upload(client, path.join(FIXTURES, "clip.webm"));
});

describe("convert", () => {
  it("re-encodes mp4 to webm (VP8/Opus) on the backend", async () => {
    const file = await download(client, await runTool(client, "convert", { uploadId: clip.uploadId, format: "webm" }));
    const probe = ffprobe(file);
    expect(probe.format.format_name).toContain("webm");
    expect(stream(probe, "video")!.codec_name).toMatch(/vp8|vp9/);
    expect(stream(probe, "audio")!.codec_name).toBe("opus");
    expect(Number(probe.format.duration)).toBeCloseTo(clip.durationSeconds, 1);
    expect(path.basename(file)).toMatch(/clip\.webm$/);
  });

  it.each(["mkv", "mov", "avi", "mp4"])("gives a playable %s", async (format) => {
    const file = await download(client, await runTool(client, "convert", { uploadId: webm.uploadId, format }));
    const probe = ffprobe(file);
    expect(stream(probe, "video")).toBeDefined();
    expect(stream(probe, "audio")).toBeDefined();
    expect(Number(probe.format.duration)).toBeCloseTo(webm.durationSeconds, 1);
  });
});

describe("extract-audio and trim", () => {
  it("extracts wav on ffmpeg.wasm with the source duration", async () => {
    const file = await download(
      client,
      await runTool(client, "extract-audio", { uploadId: clip.uploadId, format: "wav" }),
    );
    const probe = ffprobe(file);
    expect(stream(probe, "audio")!.codec_name).toBe("pcm_s16le");
    expect(Number(probe.format.duration)).toBeCloseTo(clip.durationSeconds, 1);
  });

  it("trims to end - start within one frame, audio kept", async () => {
    const source = await upload(client, path.join(FIXTURES, "clip-moov-end.mov"));
    const file = await download(
      client,
      await runTool(client, "trim", { uploadId: source.uploadId, start: 0.5, end: 2.1 }),
    );
    const probe = ffprobe(file);
    expect(Math.abs(Number(probe.format.duration) - 1.6)).toBeLessThanOrEqual(0.05);
    expect(stream(probe, "audio")).toBeDefined();
  });
});

describe("merge", () => {
  it("concatenates inputs of different codecs and sizes, normalised to the first", async () => {
    const small = generate("small-silent.mp4", [
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=160x120:rate=30:duration=1.5",
      "-c:v",
      "libx264",
      "-pix_fmt",
      "yuv420p",
    ]);
    const silent = await upload(client, small);
    const job = await runTool(client, "merge", { uploadIds: [clip.uploadId, webm.uploadId, silent.uploadId] });
    const probe = ffprobe(await download(client, job));
    const video = stream(probe, "video")!;
    expect([video.width, video.height]).toEqual([320, 240]);
    expect(stream(probe, "audio")).toBeDefined();
    expect(Number(probe.format.duration)).toBeCloseTo(
      clip.durationSeconds + webm.durationSeconds + silent.durationSeconds,
      0,
    );
    expect(
      Math.abs(Number(probe.format.duration) - (clip.durationSeconds + webm.durationSeconds + silent.durationSeconds)),
    ).toBeLessThan(0.15);
  });
});

describe("watermark", () => {
  it("tiles an image mark across the frame (fixe)", async () => {
    const black = generate("black.mp4", [
      "-f",
      "lavfi",
      "-i",
      "color=c=black:size=320x240:rate=25:duration=2",
      "-f",
      "lavfi",
      "-i",
      "sine=duration=2",
      "-shortest",
      "-c:v",
      "libx264",
      "-pix_fmt",
      "yuv420p",
      "-c:a",
      "aac",
    ]);
    const video = await upload(client, black);
    const logo = await upload(client, path.join(FIXTURES, "logo.png"));
    const file = await download(
      client,
      await runTool(client, "watermark", { uploadId: video.uploadId, watermarkUploadId: logo.uploadId, opacity: 100 }),
    );
    const frame = frameAt(file, 1, 320, 240);
    let red = 0;
    const quadrants = new Set<string>();
    for (let y = 0; y < 240; y += 4) {
      for (let x = 0; x < 320; x += 4) {
        const [r, g, b] = pixel(frame, 320, x, y);
        if (r > 150 && g < 80 && b < 80) {
          red++;
          quadrants.add(`${x < 160 ? "L" : "R"}${y < 120 ? "T" : "B"}`);
        }
      }
    }
    expect(red).toBeGreaterThan(50);
    expect(quadrants.size).toBe(4);
    expect(stream(ffprobe(file), "audio")).toBeDefined();
  });

  it("moves a text mark every interval seconds (flottant)", async () => {
    const black = generate("black7.mp4", [
      "-f",
      "lavfi",
      "-i",
      "color=c=black:size=320x240:rate=25:duration=7",
      "-c:v",
      "libx264",
      "-pix_fmt",
      "yuv420p",
    ]);
    const video = await upload(client, black);
    const file = await download(
      client,
      await runTool(client, "watermark", {
        uploadId: video.uploadId,
        watermarkText: "Été © 2026",
        type: "flottant",
        interval: 3,
        opacity: 100,
      }),
    );
    const bright = (frame: Buffer) => {
      const points: number[] = [];
      for (let i = 0; i < frame.length; i += 3) if (frame[i] > 128) points.push(i / 3);
      return points;
    };
    const first = bright(frameAt(file, 0.5, 320, 240));
    const later = bright(frameAt(file, 3.5, 320, 240));
    expect(first.length).toBeGreaterThan(20);
    expect(later.length).toBeGreaterThan(20);
    const centre = (points: number[]) =>
      points.reduce((s, p) => s + (p % 320) + Math.floor(p / 320) * 1000, 0) / points.length;
    expect(Math.abs(centre(first) - centre(later))).toBeGreaterThan(10);
  });
});

describe("clean-audio", () => {
  it("lowers the noise, keeps the video stream untouched", async () => {
    const noisy = generate("noisy.mp4", [
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=160x120:rate=25:duration=4",
      "-f",
      "lavfi",
      "-i",
      "aevalsrc=0.3*sin(2*PI*440*t)+0.08*(random(0)*2-1):s=48000:d=4",
      "-c:v",
      "libx264",
      "-pix_fmt",
      "yuv420p",
      "-c:a",
      "aac",
      "-shortest",
    ]);
    const source = await upload(client, noisy);
    const file = await download(client, await runTool(client, "clean-audio", { uploadId: source.uploadId }));
    const probe = ffprobe(file);
    expect(stream(probe, "video")!.codec_name).toBe("h264");
    // Noise energy far from the 440 Hz tone: band 3-6 kHz.
    const band = "highpass=f=3000,lowpass=f=6000";
    expect(rmsDb(file, band)).toBeLessThan(rmsDb(noisy, band) - 6);
  });
});

describe("subtitles", () => {
  it("burns srtContent captions at the requested position", async () => {
    const black = generate("black-sub.mp4", [
      "-f",
      "lavfi",
      "-i",
      "color=c=black:size=320x240:rate=25:duration=2",
      "-f",
      "lavfi",
      "-i",
      "sine=duration=2",
      "-shortest",
      "-c:v",
      "libx264",
      "-pix_fmt",
      "yuv420p",
      "-c:a",
      "aac",
    ]);
    const video = await upload(client, black);
    const srt = "1\n00:00:00,000 --> 00:00:02,000\nÉté œuvre 5 €\n";
    const file = await download(
      client,
      await runTool(client, "subtitles", { uploadId: video.uploadId, srtContent: srt, position: 85, color: "#FFFFFF" }),
    );
    const frame = frameAt(file, 1, 320, 240);
    let top = 0;
    let bottom = 0;
    for (let y = 0; y < 240; y++)
      for (let x = 0; x < 320; x++) if (pixel(frame, 320, x, y)[0] > 180) y < 120 ? top++ : bottom++;
    expect(bottom).toBeGreaterThan(30);
    expect(top).toBe(0);
  });
});

describe("without a reachable backend", () => {
  it("fails a job routed to the backend with a clear error and refunds it; wasm jobs still complete", async () => {
    const other = await newClient(inject("e2eNoBackendUrl"), 100);
    const source = await upload(other, path.join(FIXTURES, "clip.mp4"));
    const failed = await runTool(other, "convert", { uploadId: source.uploadId, format: "webm" });
    expect(failed.status).toBe("failed");
    expect(failed.error).toMatch(/backend/);
    expect(await balance(other)).toBe(100);
    const done = await runTool(other, "extract-audio", { uploadId: source.uploadId });
    expect(done.status).toBe("completed");
    expect(await balance(other)).toBe(97);
  });
});
