/**
 * Frame rates: the header probe reads them from files of 25, 30 and 29.97 fps in every video
 * container it accepts (checked against ffprobe's view of the same bytes), and merge takes the
 * first input's rate while keeping each segment's sound on its picture. The media are made
 * and measured by ffmpeg.wasm itself, which is also the engine that runs the merge here.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { runFfmpegWasm } from "../../src/media-worker/ffmpeg-wasm";
import { probeR2Object } from "../../src/media/probe";
import type { MediaInput } from "../../src/media/commands/command";
import type { ProbeResult } from "../../src/media/types";
import { buildConvertCommand } from "../../src/media/commands/convert";
import { buildMergeCommand, frameRateOf } from "../../src/media/commands/merge";
import { buildTrimCommand } from "../../src/media/commands/trim";
import { createFfmpegCore } from "../../wasm/ffmpeg-core";
import { parseWav } from "../helpers/audio-checks";
import { recordingBucket } from "./buckets";

// Pay the wasm transfer (15-20 s) under the hook timeout rather than in the first test.
beforeAll(() => createFfmpegCore());

/** Runs lavfi sources into a file with ffmpeg.wasm. */
async function generate(name: string, args: string[]): Promise<Uint8Array> {
  const run = await runFfmpegWasm({ args: ["-hide_banner", ...args, name], inputs: {}, outputs: [name] });
  return run.outputs[name]!;
}

let stored = 0;
/** Stores the bytes in R2 and probes them as an upload is probed; also returns how many gets it took. */
async function probe(bytes: Uint8Array, filename: string) {
  const key = `frame-rate/${stored++}-${filename}`;
  await env.MEDIA.put(key, bytes);
  const { bucket, reads } = recordingBucket(env.MEDIA);
  return { result: await probeR2Object(bucket, key, bytes.byteLength), reads };
}

interface ProbedStream {
  codec_type: string;
  nb_frames?: string;
  nb_read_frames?: string;
  r_frame_rate?: string;
  avg_frame_rate?: string;
  start_time?: string;
  duration?: string;
}

/** ffprobe (the one built into the same wasm core) over a file. */
async function ffprobe(bytes: Uint8Array, countFrames = false) {
  const core = await createFfmpegCore();
  const out: string[] = [];
  core.setLogger((entry) => {
    if (entry.type === "stdout") out.push(entry.message);
  });
  core.FS.writeFile("media", bytes.slice());
  (core as unknown as { ffprobe(...args: string[]): number }).ffprobe(
    "-v",
    "error",
    ...(countFrames ? ["-count_frames"] : []),
    "-show_format",
    "-show_streams",
    "-of",
    "json",
    "media",
  );
  const probed = JSON.parse(out.join("\n")) as { streams: ProbedStream[]; format: { duration?: string } };
  return {
    ...probed,
    video: probed.streams.find((s) => s.codec_type === "video"),
    audio: probed.streams.find((s) => s.codec_type === "audio"),
  };
}

/** "30000/1001" -> 29.97002997... */
function fraction(value: string | undefined): number {
  const [num, den] = (value ?? "").split("/").map(Number);
  return num! / den!;
}

// ---------------------------------------------------------------------------------------------
// The header probe

const rates = [
  { arg: "25", expected: 25 },
  { arg: "30", expected: 30 },
  { arg: "30000/1001", expected: 29.97 },
];

/** One accepted video container each, with the codecs its users send. */
const containers = [
  { ext: "mp4", video: ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"], audio: ["-c:a", "aac"] },
  { ext: "mov", video: ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"], audio: ["-c:a", "aac"] },
  {
    ext: "m4v",
    video: ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-f", "mp4"],
    audio: ["-c:a", "aac"],
  },
  { ext: "webm", video: ["-c:v", "libvpx", "-b:v", "100k"], audio: ["-c:a", "libopus"] },
  { ext: "mkv", video: ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"], audio: ["-c:a", "aac"] },
  { ext: "avi", video: ["-c:v", "mpeg4"], audio: ["-c:a", "libmp3lame"] },
];

const matrix = containers.flatMap((container) =>
  rates.map((rate) => ({ ...container, ...rate, name: `${container.ext} at ${rate.arg} fps` })),
);

describe("probeR2Object frame rate", () => {
  it.each(matrix)("reads $name", async ({ ext, arg, expected, video, audio }) => {
    const bytes = await generate(`clip.${ext}`, [
      "-f",
      "lavfi",
      "-i",
      `testsrc2=size=64x48:rate=${arg}:duration=1`,
      "-f",
      "lavfi",
      "-i",
      "sine=frequency=440:duration=1",
      "-shortest",
      ...video,
      ...audio,
    ]);
    const [{ result }, reference] = await Promise.all([probe(bytes, `clip.${ext}`), ffprobe(bytes)]);

    expect(result).toMatchObject({ kind: "video", hasVideo: true, hasAudio: true, frameRate: expected });
    // What ffprobe reports for the same bytes, to the probe's three decimals.
    expect(result.frameRate).toBeCloseTo(fraction(reference.video!.avg_frame_rate), 3);
    expect(result.frameRate).toBeCloseTo(fraction(reference.video!.r_frame_rate), 3);
  });

  it("reads the video track of an MP4 whose audio track comes first", async () => {
    const bytes = await generate("audio-first.mp4", [
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=64x48:rate=30000/1001:duration=1",
      "-f",
      "lavfi",
      "-i",
      "sine=frequency=440:duration=1",
      "-map",
      "1:a",
      "-map",
      "0:v",
      "-shortest",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-pix_fmt",
      "yuv420p",
      "-c:a",
      "aac",
    ]);
    const reference = await ffprobe(bytes);
    expect(reference.streams.map((s) => s.codec_type)).toEqual(["audio", "video"]);
    const { result } = await probe(bytes, "audio-first.mp4");
    expect(result).toMatchObject({ frameRate: 29.97, width: 64, height: 48 });
    expect(frameRateOf(result)).toBe("30000/1001");
  });

  it("reports the average rate of a variable-rate MP4, as ffprobe does", async () => {
    // 25 fps with frames 10-14 dropped: 20 frames over 1 s.
    const bytes = await generate("vfr.mp4", [
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=64x48:rate=25:duration=1,select='not(between(n\\,10\\,14))'",
      "-vsync",
      "vfr",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-pix_fmt",
      "yuv420p",
    ]);
    const [{ result }, reference] = await Promise.all([probe(bytes, "vfr.mp4"), ffprobe(bytes)]);
    expect(result.frameRate).toBeCloseTo(fraction(reference.video!.avg_frame_rate), 3);
    expect(result.frameRate).toBeCloseTo(20, 0);
  });

  it("reads the rate of a moov at the end without more gets than before", async () => {
    const bytes = await generate("moov-end.mov", [
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=64x48:rate=30:duration=3",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-pix_fmt",
      "yuv420p",
    ]);
    const { result, reads } = await probe(bytes, "moov-end.mov");
    expect(result.frameRate).toBe(30);
    // Head, moov header and the moov itself: the sample tables come from the moov already read.
    expect(reads.length).toBeLessThanOrEqual(4);
  });

  it("reports no rate for audio", async () => {
    const bytes = await generate("tone.m4a", ["-f", "lavfi", "-i", "sine=frequency=440:duration=1", "-c:a", "aac"]);
    const { result } = await probe(bytes, "tone.m4a");
    expect(result.kind).toBe("audio");
    expect(result.frameRate).toBeUndefined();
  });
});

// ---------------------------------------------------------------------------------------------
// merge: the first input's rate, and sound on picture in every segment

/**
 * A black clip with one marker: a white picture and a 1 kHz beep over the same 0.13 s from
 * `at` seconds; silence elsewhere.
 */
function markedClipArgs(rate: string, duration: number, at: number, codecs: string[]): string[] {
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
    ...codecs,
  ];
}

/** Presentation times of the frames whose mean luma says white (the markers). */
async function whiteFrameTimes(bytes: Uint8Array): Promise<number[]> {
  const run = await runFfmpegWasm({
    args: [
      "-hide_banner",
      "-i",
      "media.mp4",
      "-an",
      "-vf",
      "signalstats,metadata=mode=print:key=lavfi.signalstats.YAVG:file=yavg.txt",
      "-f",
      "null",
      "-",
    ],
    inputs: { "media.mp4": bytes.slice() },
    outputs: ["yavg.txt"],
  });
  return whiteTimes(new TextDecoder().decode(run.outputs["yavg.txt"]));
}

/** Parses the metadata filter's "frame:N pts:P pts_time:T" / "lavfi.signalstats.YAVG=Y" pairs. */
function whiteTimes(log: string): number[] {
  const times: number[] = [];
  let time = Number.NaN;
  for (const line of log.split("\n")) {
    const frame = /pts_time:(\S+)/.exec(line);
    if (frame) time = Number(frame[1]);
    const luma = /YAVG=(\S+)/.exec(line);
    if (luma && Number(luma[1]) > 128) times.push(time);
  }
  return times;
}

/** Start times of the beeps: samples over a third of the peak, after at least 0.1 s below it. */
function beepOnsets(samples: Int16Array, channels: number, sampleRate: number, startSeconds: number): number[] {
  let peak = 0;
  for (let i = 0; i < samples.length; i += channels) peak = Math.max(peak, Math.abs(samples[i]!));
  const onsets: number[] = [];
  let last = -Infinity;
  for (let i = 0; i < samples.length / channels; i++) {
    if (Math.abs(samples[i * channels]!) <= peak / 3) continue;
    if (i - last > sampleRate / 10) onsets.push(startSeconds + i / sampleRate);
    last = i;
  }
  return onsets;
}

/** First time of each run of consecutive frames (gaps over 0.1 s start a new run). */
function runStarts(times: number[]): number[] {
  return times.filter((time, i) => i === 0 || time - times[i - 1]! > 0.1);
}

describe("variable frame rate kept through a re-encode on ffmpeg.wasm", () => {
  /** Trims `bytes` from `start` to `end` as the tool does and counts the frames of the result. */
  async function trimmedFrames(bytes: Uint8Array, filename: string, start: number, end: number) {
    const { result } = await probe(bytes, filename);
    const input: MediaInput = {
      name: `in0.${filename.split(".").pop()}`,
      filename,
      sizeBytes: bytes.byteLength,
      probe: result,
    };
    const command = buildTrimCommand({ start, end }, [input]);
    expect(command.args.join(" ")).toContain("-fps_mode:v vfr -enc_time_base:v -1");
    const run = await runFfmpegWasm({
      args: command.args,
      inputs: { [input.name]: bytes.slice() },
      outputs: [command.outputName],
    });
    // Decoded and counted: MKV headers carry no frame count.
    const out = await ffprobe(run.outputs[command.outputName]!, true);
    return { frames: Number(out.video!.nb_read_frames), duration: Number(out.format.duration), out };
  }

  it("trims a 24 fps then 60 fps MP4 (phone-like, 126 frames) keeping every frame at its time", async () => {
    const bytes = await generate("24-60.mp4", [
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=160x120:rate=24:duration=1.5",
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=160x120:rate=60:duration=1.5",
      "-filter_complex",
      "[0:v][1:v]concat=n=2:v=1:a=0",
      "-fps_mode",
      "vfr",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-pix_fmt",
      "yuv420p",
    ]);
    expect((await ffprobe(bytes)).video!.nb_frames).toBe("126");
    // The whole file: all 126 frames (a constant 24 fps dropped 54 of them, the 120 fps guess tripled them).
    const whole = await trimmedFrames(bytes, "24-60.mp4", 0, 3);
    expect(whole.frames).toBe(126);
    expect(whole.duration).toBeCloseTo(3, 1);
    // 1-2 s: 12 frames at 24 fps, then 30 at 60 fps.
    const middle = await trimmedFrames(bytes, "24-60.mp4", 1, 2);
    expect(Math.abs(middle.frames - 42)).toBeLessThanOrEqual(1);

    // The same frames remuxed into MKV, whose rate ffmpeg guesses at about 42 fps: the encoder's
    // clock at that guess dropped 25 frames; at the source's time base it keeps them.
    const mkv = await runFfmpegWasm({
      args: ["-hide_banner", "-i", "in.mp4", "-c", "copy", "24-60.mkv"],
      inputs: { "in.mp4": bytes.slice() },
      outputs: ["24-60.mkv"],
    });
    const fromMkv = await trimmedFrames(mkv.outputs["24-60.mkv"]!, "24-60.mkv", 0, 3);
    expect(fromMkv.frames).toBe(126);
  });

  it("keeps the 79 frames of a 24 + 25 + 30 fps MP4 with a 600 timescale (as phones and editors write)", async () => {
    const bytes = await generate("600.mp4", [
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=160x120:rate=24:duration=1",
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=160x120:rate=25:duration=1",
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=160x120:rate=30:duration=1",
      "-filter_complex",
      "[0:v][1:v][2:v]concat=n=3:v=1:a=0",
      "-fps_mode",
      "vfr",
      "-video_track_timescale",
      "600",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-pix_fmt",
      "yuv420p",
    ]);
    expect((await ffprobe(bytes)).video!.nb_frames).toBe("79");
    const whole = await trimmedFrames(bytes, "600.mp4", 0, 3);
    expect(whole.frames).toBe(79);
  });
});

describe("audio kept whole through re-encodes that keep the frame times", () => {
  /** Decoded audio of a file: seconds of samples, and the share of energy off a 440 Hz tone. */
  async function decodedAudio(bytes: Uint8Array, name: string) {
    const decoded = await runFfmpegWasm({
      args: ["-hide_banner", "-i", name, "-map", "0:a:0", "-ac", "1", "-c:a", "pcm_s16le", "-f", "wav", "audio.wav"],
      inputs: { [name]: bytes.slice() },
      outputs: ["audio.wav"],
    });
    const wav = parseWav(decoded.outputs["audio.wav"]!);
    // Goertzel at 440 Hz over the middle second against the total energy there.
    const start = Math.floor(wav.samples.length / 2 - wav.sampleRate / 2);
    let total = 0;
    let s1 = 0;
    let s2 = 0;
    const k = 2 * Math.cos((2 * Math.PI * 440) / wav.sampleRate);
    for (let i = start; i < start + wav.sampleRate; i++) {
      const x = wav.samples[i]! / 32768;
      total += x * x;
      const s0 = x + k * s1 - s2;
      s2 = s1;
      s1 = s0;
    }
    const tone = (s1 * s1 + s2 * s2 - k * s1 * s2) / (wav.sampleRate / 2);
    return {
      seconds: wav.samples.length / wav.channels / wav.sampleRate,
      offToneDb: 10 * Math.log10(Math.max(1e-12, 1 - tone / total)),
    };
  }

  async function run(command: { args: string[]; outputName: string }, name: string, bytes: Uint8Array) {
    expect(command.args.join(" ")).toContain("-enc_time_base:v -1");
    const done = await runFfmpegWasm({
      args: command.args,
      inputs: { [name]: bytes.slice() },
      outputs: [command.outputName],
    });
    return done.outputs[command.outputName]!;
  }

  // Before the option was limited to video, the audio encoder took the source's 1/1000 time base:
  // a 2 s trim of an MKV kept 1.0 s of sound, of a WebM 0.02 s (960-sample Opus packets marked to
  // discard 940), and a 44.1 kHz MP4 made WebM crackled (78 samples dropped from every packet).
  for (const source of [
    {
      name: "in0.mkv",
      codecs: ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac"],
      rate: 44_100,
    },
    { name: "in0.webm", codecs: ["-c:v", "libvpx", "-b:v", "200k", "-c:a", "libopus"], rate: 48_000 },
  ]) {
    it(`trims 1-3 s of a ${source.name.split(".")[1]!.toUpperCase()} keeping 2 s of clean sound`, async () => {
      const bytes = await generate(source.name, [
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=160x120:rate=25:duration=5",
        "-f",
        "lavfi",
        "-i",
        `sine=frequency=440:sample_rate=${source.rate}:duration=5`,
        ...source.codecs,
      ]);
      const { result } = await probe(bytes, source.name);
      const input: MediaInput = {
        name: source.name,
        filename: source.name,
        sizeBytes: bytes.byteLength,
        probe: result,
      };
      const command = buildTrimCommand({ start: 1, end: 3 }, [input]);
      const audio = await decodedAudio(await run(command, source.name, bytes), command.outputName);
      expect(audio.seconds).toBeGreaterThan(1.95);
      expect(audio.seconds).toBeLessThan(2.1);
      expect(audio.offToneDb).toBeLessThan(-25);
    });
  }

  it("converts an MP4 with 44.1 kHz AAC (phone sound) to WebM with all its sound and no crackle", async () => {
    const bytes = await generate("in0.mp4", [
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=160x120:rate=25:duration=5",
      "-f",
      "lavfi",
      "-i",
      "sine=frequency=440:sample_rate=44100:duration=5",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-pix_fmt",
      "yuv420p",
      "-c:a",
      "aac",
    ]);
    const { result } = await probe(bytes, "in0.mp4");
    const command = buildConvertCommand({ format: "webm" }, [
      { name: "in0.mp4", filename: "phone.mp4", sizeBytes: bytes.byteLength, probe: result },
    ]);
    const audio = await decodedAudio(await run(command, "in0.mp4", bytes), command.outputName);
    expect(audio.seconds).toBeGreaterThan(4.95);
    expect(audio.offToneDb).toBeLessThan(-25);
  });
});

describe("merge across frame rates on ffmpeg.wasm", () => {
  it("a 25 fps MP4 then a 30 fps WebM: 25 fps out, sum of durations, each beep on its flash", async () => {
    const first = await generate(
      "first-25.mp4",
      markedClipArgs("25", 2.2, 1, ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac"]),
    );
    const second = await generate(
      "second-30.webm",
      markedClipArgs("30", 2, 1.1, ["-c:v", "libvpx", "-b:v", "200k", "-c:a", "libopus"]),
    );
    const probes = [(await probe(first, "first-25.mp4")).result, (await probe(second, "second-30.webm")).result];
    expect(probes.map((p) => p.frameRate)).toEqual([25, 30]);
    const inputs: MediaInput[] = probes.map((p, i) => ({
      name: `in${i}.${p.container}`,
      filename: `clip${i}.${p.container}`,
      sizeBytes: 0,
      probe: p,
    }));

    const command = buildMergeCommand({}, inputs);
    expect(command.args.join(" ")).toContain("fps=25:start_time=0,");
    const run = await runFfmpegWasm({
      args: command.args,
      inputs: { "in0.mp4": first.slice(), "in1.webm": second.slice() },
      outputs: [command.outputName],
    });
    const out = run.outputs[command.outputName]!;

    const probed = await ffprobe(out);
    expect(probed.video).toMatchObject({ r_frame_rate: "25/1", avg_frame_rate: "25/1" });
    const sum = probes.reduce((total, p) => total + p.durationMs / 1000, 0);
    expect(Math.abs(Number(probed.format.duration) - sum)).toBeLessThanOrEqual(0.1);

    const flashes = runStarts(await whiteFrameTimes(out));
    const decoded = await runFfmpegWasm({
      args: [
        "-hide_banner",
        "-i",
        "media.mp4",
        "-map",
        "0:a:0",
        "-ac",
        "1",
        "-c:a",
        "pcm_s16le",
        "-f",
        "wav",
        "audio.wav",
      ],
      inputs: { "media.mp4": out.slice() },
      outputs: ["audio.wav"],
    });
    const wav = parseWav(decoded.outputs["audio.wav"]!);
    const beeps = beepOnsets(wav.samples, wav.channels, wav.sampleRate, Number(probed.audio!.start_time ?? 0));
    expect(flashes).toHaveLength(2);
    expect(beeps).toHaveLength(2);
    // The second segment starts where the first ends (2.2 s, plus at most one AAC frame of padding).
    expect(flashes[1]! - 2.2 - 1.1).toBeGreaterThan(-0.04);
    expect(flashes[1]! - 2.2 - 1.1).toBeLessThan(0.08);
    const offsets = beeps.map((beep, i) => beep - flashes[i]!);
    console.log(
      `merge 25+30 fps on ffmpeg.wasm: flashes at ${flashes.join(", ")} s, beeps at ${beeps.map((b) => b.toFixed(4)).join(", ")} s, audio - video ${offsets.map((o) => `${(o * 1000).toFixed(1)} ms`).join(", ")}`,
    );
    for (const offset of offsets) expect(Math.abs(offset)).toBeLessThanOrEqual(0.04);
  });
});

describe("the picture on screen at a cut, and AVI frame times, on ffmpeg.wasm", () => {
  /** 6 s at 1 fps (a slideshow or screen recording) whose frame n is a flat grey of level 30 + 30 n, with a tone. */
  async function slideshow(): Promise<MediaInput & { bytes: Uint8Array }> {
    const bytes = await generate("slides.mp4", [
      "-f",
      "lavfi",
      "-i",
      "color=c=black:s=64x48:r=1:d=6,format=yuv420p,geq=lum='30+30*N':cb=128:cr=128",
      "-f",
      "lavfi",
      "-i",
      "sine=f=440:d=6",
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
    const { result } = await probe(bytes, "slides.mp4");
    return { name: "in0.mp4", filename: "slides.mp4", sizeBytes: bytes.byteLength, probe: result, bytes };
  }

  /** Each decoded frame's time and mean luma. */
  async function frames(bytes: Uint8Array, name: string) {
    const core = await createFfmpegCore();
    const log: string[] = [];
    core.setLogger((entry) => log.push(entry.message));
    core.FS.writeFile(name, bytes.slice());
    core.exec(
      "-hide_banner",
      "-i",
      name,
      "-map",
      "0:v:0",
      "-vf",
      "signalstats,metadata=print:key=lavfi.signalstats.YAVG",
      "-f",
      "null",
      "-",
    );
    const times = log.flatMap((line) => [...line.matchAll(/pts_time:([\d.]+)/g)].map((m) => Number(m[1])));
    const lumas = log.flatMap((line) => [...line.matchAll(/YAVG=([\d.]+)/g)].map((m) => Number(m[1])));
    return times.map((time, i) => ({ time, level: Math.round((lumas[i]! - 30) / 30) }));
  }

  async function trimmed(input: MediaInput & { bytes: Uint8Array }, start: number, end: number) {
    const command = buildTrimCommand({ start, end }, [input]);
    const run = await runFfmpegWasm({
      args: command.args,
      inputs: { [input.name]: input.bytes.slice() },
      outputs: [command.outputName],
    });
    const out = run.outputs[command.outputName]!;
    return { out, probed: await ffprobe(out), shown: await frames(out, command.outputName) };
  }

  it("keeps the frame shown at start, even when no frame begins inside the cut", async () => {
    const input = await slideshow();
    // 2.5-2.9 s: frame 2 is on screen the whole time. ffmpeg's accurate seek dropped it: audio only.
    const inside = await trimmed(input, 2.5, 2.9);
    expect(inside.probed.video).toBeDefined();
    expect(new Set(inside.shown.map((f) => f.level))).toEqual(new Set([2]));
    expect(inside.shown[0]!.time).toBe(0);
    expect(Number(inside.probed.video!.duration)).toBeCloseTo(0.4, 1);
    expect(Number(inside.probed.audio!.duration)).toBeCloseTo(0.4, 1);
    // 0.5-3.5 s: frame 0 from 0 (it started late at 0.5 s), then 1, 2, 3 from 0.5, 1.5, 2.5 s
    // (laid on 24 fps, so each picture changes at its own time).
    const across = await trimmed(input, 0.5, 3.5);
    const changes = across.shown.filter((f, i) => i === 0 || f.level !== across.shown[i - 1]!.level);
    expect(changes.map((f) => f.level)).toEqual([0, 1, 2, 3]);
    changes.forEach((f, i) => expect(f.time).toBeCloseTo(i === 0 ? 0 : i - 0.5, 2));
    expect(Number(across.probed.format.duration)).toBeCloseTo(3, 1);
  });

  it("keeps the picture on screen at start in a cut shorter than one frame of a 25 fps video", async () => {
    // 6 s at 25 fps whose frame n has the luma 16 + n (frame n on screen from n / 25 s).
    const bytes = await generate("frames25.mp4", [
      "-f",
      "lavfi",
      "-i",
      "color=c=black:s=64x48:r=25:d=6,format=yuv420p,geq=lum='16+N':cb=128:cr=128",
      "-f",
      "lavfi",
      "-i",
      "sine=f=440:d=6",
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
    const { result } = await probe(bytes, "frames25.mp4");
    const input = { name: "in0.mp4", filename: "frames25.mp4", sizeBytes: bytes.byteLength, probe: result, bytes };
    const frameAt = async (start: number, end: number) => {
      const command = buildTrimCommand({ start, end }, [input]);
      const run = await runFfmpegWasm({
        args: command.args,
        inputs: { [input.name]: input.bytes.slice() },
        outputs: [command.outputName],
      });
      const out = run.outputs[command.outputName]!;
      const probed = await ffprobe(out);
      expect(probed.video, `${start}-${end}`).toBeDefined();
      const core = await createFfmpegCore();
      const log: string[] = [];
      core.setLogger((entry) => log.push(entry.message));
      core.FS.writeFile("cut.mp4", out.slice());
      core.exec(
        "-hide_banner",
        "-i",
        "cut.mp4",
        "-map",
        "0:v:0",
        "-vf",
        "signalstats,metadata=print:key=lavfi.signalstats.YAVG",
        "-f",
        "null",
        "-",
      );
      return log.flatMap((line) => [...line.matchAll(/YAVG=([\d.]+)/g)].map((m) => Math.round(Number(m[1]) - 16)));
    };
    // The last millisecond: frame 149 (from 5.96 s); 2.01-2.02 s: frame 50 (2.00-2.04 s).
    expect(new Set(await frameAt(5.999, 6))).toEqual(new Set([149]));
    expect(new Set(await frameAt(2.01, 2.02))).toEqual(new Set([50]));
    // A cut of whole frames keeps ffmpeg's accurate seek: frames 50 to 54.
    expect(await frameAt(2, 2.2)).toEqual([50, 51, 52, 53, 54]);
  });

  it("lays a cut on the grid only when a frame could be lost", () => {
    const grid = (probe: Partial<ProbeResult>, start: number, end: number) => {
      const video: ProbeResult = {
        kind: "video",
        container: "mp4",
        mimeType: "video/mp4",
        durationMs: 10_000,
        hasAudio: true,
        hasVideo: true,
        videoCodec: "h264",
        audioCodec: "aac",
        width: 64,
        height: 48,
        ...probe,
      };
      const args = buildTrimCommand({ start, end }, [
        { name: "in0.mp4", filename: "in.mp4", sizeBytes: 1, probe: video },
      ]).args;
      return {
        fps: args.find((arg) => arg.startsWith("fps="))?.split(",")[0],
        keepsEarlierFrames: args.includes("-noaccurate_seek"),
      };
    };
    expect(grid({ frameRate: 60 }, 5, 5.01)).toEqual({ fps: "fps=60:start_time=0:round=up", keepsEarlierFrames: true });
    expect(grid({ frameRate: 60 }, 5, 5.05)).toEqual({ fps: undefined, keepsEarlierFrames: false });
    expect(grid({ frameRate: undefined }, 5, 5.5).fps).toBe("fps=24:start_time=0:round=up");
    expect(grid({ frameRate: undefined }, 5, 6.5)).toEqual({ fps: undefined, keepsEarlierFrames: false });
    // Audio alone has no picture to keep.
    expect(
      grid(
        {
          kind: "audio",
          hasVideo: false,
          videoCodec: undefined,
          width: undefined,
          height: undefined,
          container: "mp3",
          frameRate: undefined,
        },
        5.999,
        6,
      ),
    ).toEqual({ fps: undefined, keepsEarlierFrames: false });
  });

  it("converts to AVI with each picture at its time and the source's duration", async () => {
    const input = await slideshow();
    const command = buildConvertCommand({ format: "avi" }, [input]);
    const run = await runFfmpegWasm({
      args: command.args,
      inputs: { [input.name]: input.bytes.slice() },
      outputs: [command.outputName],
    });
    const out = run.outputs[command.outputName]!;
    // The MP3 priming shifted every frame after the first by one: frame 1 at 2 s, 7 s in all.
    const shown = await frames(out, command.outputName);
    expect(shown.map((f) => f.level)).toEqual([0, 1, 2, 3, 4, 5]);
    shown.forEach((f, i) => expect(f.time).toBeCloseTo(i, 2));
    const probed = await ffprobe(out);
    expect(Number(probed.video!.duration)).toBeCloseTo(6, 1);
  });
});
