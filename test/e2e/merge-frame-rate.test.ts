/**
 * merge through the public API with inputs of different frame rates: the result takes the
 * first input's probed rate (not an assumed 30 fps), lasts the sum of its inputs, and each
 * segment's sound stays on its picture. Every input carries one marker, a white picture and a
 * 1 kHz beep over the same 0.13 s, found again in the result by native ffmpeg (mean luma per
 * frame, sample levels). `main` sends merge (an x264 re-encode) to the native backend; the same
 * check on ffmpeg.wasm is in test/media/frame-rate.test.ts. An input whose audio track starts
 * after its picture keeps its beep on its flash too, in a merge and in a convert to AVI.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { download, generate, newClient, runTool, upload, type Client } from "./client";

const scratch = mkdtempSync(path.join(tmpdir(), "e2e-merge-rate-"));

/** lavfi inputs of a black clip with its marker at `at` seconds, silence elsewhere. */
function markedClip(rate: string, duration: number, at: number): string[] {
  const end = at + 0.13;
  return [
    "-f",
    "lavfi",
    "-i",
    `color=c=black:size=160x120:rate=${rate}:duration=${duration},drawbox=x=0:y=0:w=iw:h=ih:color=white:t=fill:enable='between(t,${at},${end})'`,
    "-f",
    "lavfi",
    "-i",
    `aevalsrc='if(between(t,${at},${end}),0.5*sin(2*PI*1000*t),0)':s=48000:d=${duration}`,
  ];
}

/** The same, with the audio track starting `late` seconds after the picture (as phones and editors write them). */
function lateAudioClip(rate: string, duration: number, at: number, late: number): string[] {
  const picture = markedClip(rate, duration, at).slice(0, 4);
  const end = at + 0.13;
  return [
    ...picture,
    "-itsoffset",
    String(late),
    "-f",
    "lavfi",
    "-i",
    `aevalsrc='if(between(t+${late},${at},${end}),0.5*sin(2*PI*1000*t),0)':s=48000:d=${duration - late}`,
  ];
}

const H264_AAC = ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac"];
const VP8_OPUS = ["-c:v", "libvpx", "-b:v", "200k", "-c:a", "libopus"];

interface Streams {
  format: { duration: string };
  streams: { codec_type: string; r_frame_rate: string; avg_frame_rate: string; start_time?: string }[];
}

function probe(file: string): Streams & { video: Streams["streams"][number]; audio: Streams["streams"][number] } {
  const probed = JSON.parse(
    execFileSync("ffprobe", ["-v", "error", "-show_format", "-show_streams", "-of", "json", file], {
      encoding: "utf8",
    }),
  ) as Streams;
  return {
    ...probed,
    video: probed.streams.find((s) => s.codec_type === "video")!,
    audio: probed.streams.find((s) => s.codec_type === "audio")!,
  };
}

/** Start time of each run of white frames (mean luma over 128; a gap over 0.1 s starts a new run). */
function flashStarts(file: string): number[] {
  const log = path.join(scratch, `${path.basename(file)}.yavg.txt`);
  execFileSync("ffmpeg", [
    "-v",
    "error",
    "-i",
    file,
    "-an",
    "-vf",
    `signalstats,metadata=mode=print:key=lavfi.signalstats.YAVG:file=${log}`,
    "-f",
    "null",
    "-",
  ]);
  const white: number[] = [];
  let time = Number.NaN;
  for (const line of readFileSync(log, "utf8").split("\n")) {
    const frame = /pts_time:(\S+)/.exec(line);
    if (frame) time = Number(frame[1]);
    const luma = /YAVG=(\S+)/.exec(line);
    if (luma && Number(luma[1]) > 128) white.push(time);
  }
  return white.filter((t, i) => i === 0 || t - white[i - 1]! > 0.1);
}

/** Start time of each beep: samples over a third of the peak after at least 0.1 s below it. */
function beepStarts(file: string, audioStart: number): number[] {
  const rate = 48_000;
  const raw = execFileSync(
    "ffmpeg",
    [
      "-v",
      "error",
      "-i",
      file,
      "-map",
      "0:a:0",
      "-ac",
      "1",
      "-ar",
      String(rate),
      "-f",
      "s16le",
      "-c:a",
      "pcm_s16le",
      "-",
    ],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  const samples = new Int16Array(raw.buffer, raw.byteOffset, raw.byteLength / 2);
  const peak = samples.reduce((max, s) => Math.max(max, Math.abs(s)), 0);
  const starts: number[] = [];
  let last = -Infinity;
  samples.forEach((s, i) => {
    if (Math.abs(s) <= peak / 3) return;
    if (i - last > rate / 10) starts.push(audioStart + i / rate);
    last = i;
  });
  return starts;
}

/** Merges the uploads and checks rate, duration and the markers; returns the measured offsets. */
async function mergeAndCheck(
  client: Client,
  first: { uploadId: string; durationSeconds: number },
  second: { uploadId: string; durationSeconds: number },
  secondMarkerAt: number,
) {
  const file = await download(client, await runTool(client, "merge", { uploadIds: [first.uploadId, second.uploadId] }));
  const out = probe(file);
  expect(out.video.r_frame_rate).toBe("25/1");
  expect(out.video.avg_frame_rate).toBe("25/1");
  const sum = first.durationSeconds + second.durationSeconds;
  expect(Math.abs(Number(out.format.duration) - sum)).toBeLessThanOrEqual(0.1);

  const flashes = flashStarts(file);
  const beeps = beepStarts(file, Number(out.audio.start_time ?? 0));
  expect(flashes).toHaveLength(2);
  expect(beeps).toHaveLength(2);
  // The second marker sits where the second input starts (after the first), within a frame or an AAC frame of padding.
  expect(flashes[1]! - first.durationSeconds - secondMarkerAt).toBeGreaterThan(-0.04);
  expect(flashes[1]! - first.durationSeconds - secondMarkerAt).toBeLessThan(0.08);
  const offsets = beeps.map((beep, i) => beep - flashes[i]!);
  for (const offset of offsets) expect(Math.abs(offset)).toBeLessThanOrEqual(0.04);
  return { duration: Number(out.format.duration), sum, flashes, beeps, offsets };
}

const report = (label: string, m: Awaited<ReturnType<typeof mergeAndCheck>>) =>
  console.log(
    `${label}: 25 fps out, ${m.duration.toFixed(3)} s for ${m.sum.toFixed(3)} s of inputs; flashes ${m.flashes.join(", ")} s, ` +
      `beeps ${m.beeps.map((b) => b.toFixed(4)).join(", ")} s, audio - video ${m.offsets.map((o) => `${(o * 1000).toFixed(1)} ms`).join(", ")}`,
  );

describe("merge of a 25 fps input then a 30 fps input", () => {
  let client: Client;
  beforeAll(async () => {
    client = await newClient(inject("e2eMainUrl"));
  });

  it("MP4 at 25 fps + WebM at 30 fps: 25 fps out, sum of durations, each beep on its flash", async () => {
    const first = await upload(client, generate("rate25.mp4", [...markedClip("25", 2.2, 1), ...H264_AAC]));
    const second = await upload(client, generate("rate30.webm", [...markedClip("30", 2, 1.1), ...VP8_OPUS]));
    report("mp4 25 + webm 30", await mergeAndCheck(client, first, second, 1.1));
  });

  it("a recorder WebM at 25 fps (no duration in its headers, probed by the backend) + MP4 at 30 fps", async () => {
    // Written to a pipe as MediaRecorder does: no Duration, no Cues; the backend's full read times it.
    const recorded = execFileSync(
      "ffmpeg",
      ["-v", "error", ...markedClip("25", 2.2, 1), ...VP8_OPUS, "-f", "webm", "pipe:1"],
      { maxBuffer: 64 * 1024 * 1024 },
    );
    const recorder = path.join(scratch, "recorder25.webm");
    writeFileSync(recorder, recorded);
    const first = await upload(client, recorder);
    const second = await upload(client, generate("rate30.mp4", [...markedClip("30", 2, 0.7), ...H264_AAC]));
    report("recorder webm 25 + mp4 30", await mergeAndCheck(client, first, second, 0.7));
  });

  it("keeps each beep on its flash when an input's audio track starts after its picture, first or second", async () => {
    const late = generate("late-audio.mp4", [...lateAudioClip("25", 2.5, 1, 0.48), ...H264_AAC]);
    expect(Number(probe(late).audio.start_time)).toBeCloseTo(0.48, 1);
    const lateUpload = await upload(client, late);
    const plain = await upload(client, generate("rate25-plain.mp4", [...markedClip("25", 2, 1), ...H264_AAC]));
    report("mp4 + mp4 whose audio starts 0.48 s late", await mergeAndCheck(client, plain, lateUpload, 1));
    report("mp4 whose audio starts 0.48 s late + mp4", await mergeAndCheck(client, lateUpload, plain, 1));
  });

  it("lasts the sum of many AAC inputs, the decoder's padding of each cut away", async () => {
    const clip = await upload(client, generate("rate25-many.mp4", [...markedClip("25", 2.2, 1), ...H264_AAC]));
    const file = await download(client, await runTool(client, "merge", { uploadIds: Array(12).fill(clip.uploadId) }));
    const out = probe(file);
    const sum = 12 * clip.durationSeconds;
    // Each AAC input decodes about 20 ms longer than it lasts: 0.25 s over 12 inputs if kept.
    expect(Math.abs(Number(out.format.duration) - sum)).toBeLessThanOrEqual(0.05);
    const flashes = flashStarts(file);
    expect(flashes).toHaveLength(12);
    expect(flashes[11]! - 11 * clip.durationSeconds - 1).toBeLessThan(0.05);
  });
});

describe("convert to AVI, whose tracks all start at zero", () => {
  it("pads an audio track that starts after the picture instead of pulling it forward", async () => {
    const client = await newClient(inject("e2eMainUrl"));
    const late = await upload(
      client,
      generate("late-audio-avi.mp4", [...lateAudioClip("25", 2.5, 1, 0.48), ...H264_AAC]),
    );
    const file = await download(client, await runTool(client, "convert", { uploadId: late.uploadId, format: "avi" }));
    const out = probe(file);
    const [flash] = flashStarts(file);
    const [beep] = beepStarts(file, Number(out.audio.start_time ?? 0));
    console.log(`avi from late audio: flash ${flash} s, beep ${beep?.toFixed(4)} s`);
    // Within a frame: the MP3 encoder's delay and AVI's frame grid, not the 0.48 s start.
    expect(Math.abs(beep! - flash!)).toBeLessThanOrEqual(0.04);
  });
});
