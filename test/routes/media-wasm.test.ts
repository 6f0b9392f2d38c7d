/**
 * The media tools through the public API on the in-Worker engine (this test Worker has no
 * backend, and the fixtures fit the in-Worker limits): the queue, the Durable Object and
 * ffmpeg.wasm really run; results are checked by what they contain.
 */
import { env } from "cloudflare:workers";
import { parseBuffer } from "music-metadata";
import { runFfmpegWasm } from "../../src/media-worker/ffmpeg-wasm";
import { probeR2Object } from "../../src/media/probe";
import { parseWav, toneFrequency } from "../helpers/audio-checks";
import { beforeAll, describe, expect, it } from "vitest";
import { call, callTool, newAccount, uploadFixture, waitForJob, type TestAccount, balanceOf } from "../helpers/api";

let account: TestAccount;
let clip: { uploadId: string; durationSeconds: number };

async function result(tool: string, body: Record<string, unknown>) {
  const response = await callTool(account, tool, body);
  const { jobId } = (await response.json()) as { jobId: string };
  const job = await waitForJob(account, jobId, 120_000);
  expect(job.status, job.error).toBe("completed");
  const download = await call(job.result!.url);
  const bytes = new Uint8Array(await download.arrayBuffer());
  const meta = await parseBuffer(
    bytes,
    { mimeType: download.headers.get("content-type") ?? undefined },
    { duration: true },
  );
  return { job, bytes, meta, contentType: download.headers.get("content-type") };
}

const FRAME_PIXELS = 320 * 240;

/** One frame at `second` as raw RGB (decoded by ffmpeg.wasm). */
async function frameAt(bytes: Uint8Array, second: number): Promise<Uint8Array> {
  const run = await runFfmpegWasm({
    args: ["-ss", String(second), "-i", "in.mp4", "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", "out.rgb"],
    inputs: { "in.mp4": bytes },
    outputs: ["out.rgb"],
  });
  return run.outputs["out.rgb"]!;
}

async function fixtureFrame(): Promise<Uint8Array> {
  const response = await fetch(`${env.FIXTURE_BASE_URL}/clip.mp4`);
  return frameAt(new Uint8Array(await response.arrayBuffer()), 1);
}

/** Pixels whose colour moved by more than codec noise, overall and in the lower third. */
function changedPixels(a: Uint8Array, b: Uint8Array) {
  let total = 0;
  let bottom = 0;
  for (let p = 0; p < FRAME_PIXELS; p++) {
    const i = p * 3;
    if (Math.abs(a[i] - b[i]) + Math.abs(a[i + 1] - b[i + 1]) + Math.abs(a[i + 2] - b[i + 2]) > 90) {
      total++;
      if (p / 320 >= 160) bottom++;
    }
  }
  return { total, bottom };
}

/** Mean absolute difference per channel of two same-size RGB frames (0 identical, 255 opposite). */
function meanDifference(a: Uint8Array, b: Uint8Array): number {
  expect(b.byteLength).toBe(a.byteLength);
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += Math.abs(a[i]! - b[i]!);
  return sum / a.length;
}

beforeAll(async () => {
  account = await newAccount({ credits: 10_000 });
  clip = await uploadFixture(account, "clip.mp4");
});

describe("media tools on ffmpeg.wasm through the API", () => {
  it("trim gives end - start", async () => {
    const { meta, job } = await result("trim", { uploadId: clip.uploadId, start: 0.5, end: 1.7 });
    expect(job.result!.filename).toBe("clip-trim.mp4");
    expect(Math.abs(meta.format.duration! - 1.2)).toBeLessThan(0.06);
  });

  it("merge gives the sum of durations", async () => {
    const webm = await uploadFixture(account, "clip.webm");
    const { meta } = await result("merge", { uploadIds: [clip.uploadId, webm.uploadId] });
    expect(Math.abs(meta.format.duration! - (clip.durationSeconds + webm.durationSeconds))).toBeLessThan(0.15);
    expect(meta.format.trackInfo.some((t) => t.video)).toBe(true);
  });

  it("watermark and subtitles draw on the frames and keep the duration; clean-audio keeps the tone", async () => {
    const logo = await uploadFixture(account, "logo.png");
    const source = await fixtureFrame();
    const srt = "1\n00:00:00,000 --> 00:00:02,000\nBonjour à tous\n";
    for (const [tool, body, region] of [
      [
        "watermark",
        { uploadId: clip.uploadId, watermarkUploadId: logo.uploadId, type: "flottant", interval: 3 },
        "anywhere",
      ],
      ["watermark", { uploadId: clip.uploadId, watermarkText: "© Démo" }, "anywhere"],
      ["subtitles", { uploadId: clip.uploadId, srtContent: srt, style: "impact", karaokeMode: "couleur" }, "bottom"],
    ] as const) {
      const { meta, contentType, bytes } = await result(tool, body);
      expect(contentType).toBe("video/mp4");
      expect(Math.abs(meta.format.duration! - clip.durationSeconds)).toBeLessThan(0.1);
      const changed = changedPixels(source, await frameAt(bytes, 1));
      // A mark or a caption changes a visible share of the frame; encoding noise alone does not.
      expect(changed.total, `${tool}: changed pixels`).toBeGreaterThan(FRAME_PIXELS * 0.005);
      if (region === "bottom") expect(changed.bottom).toBeGreaterThan(changed.total * 0.8);
    }
    const cleaned = await result("clean-audio", { uploadId: clip.uploadId });
    expect(Math.abs(cleaned.meta.format.duration! - clip.durationSeconds)).toBeLessThan(0.1);
    const wav = await runFfmpegWasm({
      args: ["-i", "in.mp4", "-vn", "-ac", "1", "-c:a", "pcm_s16le", "out.wav"],
      inputs: { "in.mp4": cleaned.bytes },
      outputs: ["out.wav"],
    });
    const pcm = parseWav(wav.outputs["out.wav"]!);
    expect(Math.abs(toneFrequency(pcm.samples, pcm.channels, pcm.sampleRate) - 440)).toBeLessThan(5);
  });

  it("convert to mov by stream copy", async () => {
    const { bytes, job, contentType } = await result("convert", { uploadId: clip.uploadId, format: "mov" });
    expect(job.result!.filename).toBe("clip.mov");
    expect(contentType).toBe("video/quicktime");
    // music-metadata gives no duration for QuickTime; the project's probe reads the movie header.
    await env.MEDIA.put("test/converted.mov", bytes);
    const probe = await probeR2Object(env.MEDIA, "test/converted.mov", bytes.byteLength);
    expect(probe).toMatchObject({ container: "mov", videoCodec: "h264", audioCodec: "aac" });
    expect(Math.abs(probe.durationMs / 1000 - clip.durationSeconds)).toBeLessThan(0.1);
  });

  it("a phone video turned a quarter stays upright: merge takes its shown size, convert to mkv re-encodes it", async () => {
    const rotated = await uploadFixture(account, "clip-rotated.mp4");
    const fixture = new Uint8Array(await (await fetch(`${env.FIXTURE_BASE_URL}/clip-rotated.mp4`)).arrayBuffer());
    // ffmpeg turns the frames when it decodes: the picture a player shows, 240 x 320 from frames stored 320 x 240.
    const shown = await frameAt(fixture, 1);
    expect(shown.byteLength).toBe(240 * 320 * 3);

    const merged = await result("merge", { uploadIds: [rotated.uploadId, clip.uploadId] });
    await env.MEDIA.put("test/merged-rotated.mp4", merged.bytes);
    const mergedProbe = await probeR2Object(env.MEDIA, "test/merged-rotated.mp4", merged.bytes.byteLength);
    expect(mergedProbe).toMatchObject({ width: 240, height: 320 });
    expect(mergedProbe.rotation).toBeUndefined();
    // The first segment is the turned picture itself, not a squeezed copy between black bars.
    expect(meanDifference(shown, await frameAt(merged.bytes, 1))).toBeLessThan(12);

    const converted = await result("convert", { uploadId: rotated.uploadId, format: "mkv" });
    const frame = await frameAt(converted.bytes, 1);
    expect(frame.byteLength).toBe(240 * 320 * 3);
    expect(meanDifference(shown, frame)).toBeLessThan(12);
  });

  it("extract-audio keeps the file's timeline: a track starting 0.5 s after the picture is padded, not pulled forward", async () => {
    const late = await uploadFixture(account, "late-audio.mp4");
    const { bytes } = await result("extract-audio", { uploadId: late.uploadId, format: "wav" });
    const pcm = parseWav(bytes);
    expect(Math.abs(pcm.durationSeconds - late.durationSeconds)).toBeLessThan(0.05);
    // The tone (lavfi's sine: peak 1/8 of full scale) begins where it began against the picture.
    const first = pcm.samples.findIndex((sample) => Math.abs(sample) > 1000);
    expect(Math.abs(first / pcm.channels / pcm.sampleRate - 0.5)).toBeLessThan(0.03);
  });

  it("trim keeps a 24-bit WAV 24-bit (extensible WAV: the format is in its sub-format)", async () => {
    const wav = await uploadFixture(account, "tone-s24.wav");
    const { bytes, contentType } = await result("trim", { uploadId: wav.uploadId, start: 0.25, end: 0.75 });
    expect(contentType).toBe("audio/wav");
    await env.MEDIA.put("test/trimmed-s24.wav", bytes);
    const probe = await probeR2Object(env.MEDIA, "test/trimmed-s24.wav", bytes.byteLength);
    expect(probe.audioCodec).toBe("pcm_s24le");
    expect(Math.abs(probe.durationMs - 500)).toBeLessThanOrEqual(5);
  });

  it("a command this engine cannot run fails clearly without a backend, refunded", async () => {
    const before = await balanceOf(account);
    const response = await callTool(account, "convert", { uploadId: clip.uploadId, format: "webm" });
    const { jobId } = (await response.json()) as { jobId: string };
    const job = await waitForJob(account, jobId);
    expect(job.status).toBe("failed");
    expect(job.error).toMatch(/libopus|backend/);
    expect(await balanceOf(account)).toBe(before);
  });
});
