/**
 * convert, trim, merge, watermark and clean-audio: each builder's command runs on ffmpeg.wasm
 * over probed fixtures, and the tests check what the output contains (streams, codecs and
 * durations through ffprobe compiled in the same wasm, decoded pixels and samples), not just
 * that ffmpeg exited with 0. All ffmpeg-running tests of these tools live in this one file:
 * each file that loads the 32 MB wasm pays 15-20 s.
 */
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runFfmpegWasm } from "../../src/media-worker/ffmpeg-wasm";
import { loadFont } from "../../src/media-worker/font-data";
import { probeR2Object } from "../../src/media/probe";
import { buildCleanAudioCommand, cleanAudioFilter } from "../../src/media/commands/clean-audio";
import { runCommandOnWasm } from "../../src/media-worker/wasm-command";
import type { MediaCommand, MediaInput } from "../../src/media/commands/command";
import { buildConvertCommand, type ConvertFormat } from "../../src/media/commands/convert";
import { seconds, wasmHeapEstimate } from "../../src/media/commands/encoders";
import { buildMergeCommand, frameRateOf } from "../../src/media/commands/merge";
import { buildTrimCommand } from "../../src/media/commands/trim";
import { buildWatermarkCommand, WATERMARK_FONT, WATERMARK_TEXT_FILE } from "../../src/media/commands/watermark";
import type { ProbeResult } from "../../src/media/types";
import { createFfmpegCore } from "../../wasm/ffmpeg-core";
import { parseWav, toneFrequency } from "../helpers/audio-checks";

const MiB = 1024 * 1024;

// Pay the wasm transfer (15-20 s) under the hook timeout rather than in the first test.
beforeAll(() => createFfmpegCore());

// ---------------------------------------------------------------------------------------------
// Helpers

interface Source {
  input: MediaInput;
  bytes: Uint8Array;
}

async function fixture(name: string): Promise<Uint8Array> {
  const response = await fetch(`${env.FIXTURE_BASE_URL}/${name}`);
  if (!response.ok) throw new Error(`fixture ${name}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

let stored = 0;
/** Stores the bytes in R2 and probes them as an upload would be: the MediaInput the job builder gets. */
async function source(bytes: Uint8Array, filename: string, index = 0): Promise<Source> {
  const key = `tools-light/${stored++}-${filename}`;
  await env.MEDIA.put(key, bytes);
  const probe = await probeR2Object(env.MEDIA, key, bytes.byteLength);
  return { input: { name: `in${index}.${probe.container}`, filename, sizeBytes: bytes.byteLength, probe }, bytes };
}

async function fixtureSource(name: string, index = 0): Promise<Source> {
  return source(await fixture(name), name, index);
}

interface Measured {
  tool: string;
  ms: number;
  peakMiB: number;
  estimateMiB: number;
}
const measurements: Measured[] = [];

/** Runs a command as the in-Worker engine does: inputs, generated files and shipped fonts side by side. */
async function execute(tool: string, command: MediaCommand, sources: Source[]) {
  const inputs: Record<string, Uint8Array> = { ...command.files };
  for (const s of sources) inputs[s.input.name] = s.bytes.slice();
  for (const font of command.fonts) inputs[`fonts/${font}`] = await loadFont(env.FONTS, font);
  const started = performance.now();
  const run = await runCommandOnWasm(command, inputs);
  measurements.push({
    tool,
    ms: performance.now() - started,
    peakMiB: run.peakWasmBytes / MiB,
    estimateMiB: command.wasmHeapBytes / MiB,
  });
  // The builder's estimate is what routing trusts: it must never be below what the run took.
  expect(run.peakWasmBytes).toBeLessThanOrEqual(command.wasmHeapBytes);
  return { ...run, bytes: run.outputs[command.outputName]! };
}

afterAll(() => {
  // Run time and peak heap of each command against the builder's estimate (read in the test log).
  console.log(
    measurements
      .map(
        (m) =>
          `${m.tool}: ${Math.round(m.ms)} ms, peak ${m.peakMiB.toFixed(1)} MiB, estimate ${m.estimateMiB.toFixed(1)} MiB`,
      )
      .join("\n"),
  );
});

/** Runs lavfi sources into a file (test media generated in ffmpeg.wasm itself). */
async function generate(name: string, args: string[]): Promise<Uint8Array> {
  const run = await runFfmpegWasm({ args: ["-hide_banner", ...args, name], inputs: {}, outputs: [name] });
  return run.outputs[name]!;
}

interface ProbedStream {
  codec_type: string;
  codec_name: string;
  codec_tag_string?: string;
  width?: number;
  height?: number;
  sample_rate?: string;
  channels?: number;
  duration?: string;
  nb_read_packets?: string;
  r_frame_rate?: string;
}
interface Probed {
  streams: ProbedStream[];
  format: { format_name: string; duration?: string };
}

/** ffprobe (the one built into the same wasm core) over a file: streams, packet counts, durations. */
async function ffprobe(
  bytes: Uint8Array,
): Promise<Probed & { video?: ProbedStream; audio?: ProbedStream; duration: number }> {
  const core = await createFfmpegCore();
  const out: string[] = [];
  core.setLogger((entry) => {
    if (entry.type === "stdout") out.push(entry.message);
  });
  core.FS.writeFile("media", bytes.slice());
  const probe = core as unknown as { ffprobe(...args: string[]): number };
  probe.ffprobe("-v", "error", "-show_format", "-show_streams", "-count_packets", "-of", "json", "media");
  const probed = JSON.parse(out.join("\n")) as Probed;
  return {
    ...probed,
    video: probed.streams.find((s) => s.codec_type === "video"),
    audio: probed.streams.find((s) => s.codec_type === "audio"),
    duration: Number(probed.format.duration),
  };
}

/** Seconds of a stream: its own duration when the container states one (MP4, AVI), else the file's (Matroska). */
const streamSeconds = (probed: Awaited<ReturnType<typeof ffprobe>>, stream: ProbedStream | undefined) =>
  stream?.duration !== undefined ? Number(stream.duration) : probed.duration;

interface Frame {
  width: number;
  height: number;
  rgb: Uint8Array;
}

/** One decoded frame at `time` seconds, as packed RGB. */
async function frameAt(
  bytes: Uint8Array,
  extension: string,
  time: number,
  width: number,
  height: number,
): Promise<Frame> {
  const name = `media.${extension}`;
  const run = await runFfmpegWasm({
    args: [
      "-hide_banner",
      "-ss",
      seconds(time),
      "-i",
      name,
      "-frames:v",
      "1",
      "-f",
      "rawvideo",
      "-pix_fmt",
      "rgb24",
      "frame.rgb",
    ],
    inputs: { [name]: bytes.slice() },
    outputs: ["frame.rgb"],
  });
  const rgb = run.outputs["frame.rgb"]!;
  expect(rgb.byteLength).toBe(width * height * 3);
  return { width, height, rgb };
}

const pixel = (f: Frame, x: number, y: number): [number, number, number] => {
  const i = (Math.round(y) * f.width + Math.round(x)) * 3;
  return [f.rgb[i]!, f.rgb[i + 1]!, f.rgb[i + 2]!];
};

/** Mean of |a - b| over the RGB values of a rectangle. */
function regionDifference(a: Frame, b: Frame, x0: number, y0: number, x1: number, y1: number): number {
  let sum = 0;
  let count = 0;
  for (let y = y0; y < y1; y++) {
    for (let x = x0; x < x1; x++) {
      const i = (y * a.width + x) * 3;
      for (let c = 0; c < 3; c++) sum += Math.abs(a.rgb[i + c]! - b.rgb[i + c]!);
      count += 3;
    }
  }
  return sum / count;
}

const isRed = ([r, g, b]: [number, number, number]) => r > 170 && g < 90 && b < 90;

/** Bounding box and count of the pixels matching a predicate. */
function blob(f: Frame, match: (p: [number, number, number], x: number, y: number) => boolean) {
  let count = 0;
  let [x0, y0, x1, y1] = [Infinity, Infinity, -Infinity, -Infinity];
  for (let y = 0; y < f.height; y++) {
    for (let x = 0; x < f.width; x++) {
      if (!match(pixel(f, x, y), x, y)) continue;
      count++;
      x0 = Math.min(x0, x);
      y0 = Math.min(y0, y);
      x1 = Math.max(x1, x);
      y1 = Math.max(y1, y);
    }
  }
  return { count, x0, y0, x1, y1, width: x1 - x0 + 1, height: y1 - y0 + 1 };
}

/** The first audio stream decoded to 16-bit PCM WAV. */
async function decodeAudio(bytes: Uint8Array, extension: string) {
  const name = `media.${extension}`;
  const run = await runFfmpegWasm({
    args: ["-hide_banner", "-i", name, "-map", "0:a:0", "-c:a", "pcm_s16le", "-f", "wav", "audio.wav"],
    inputs: { [name]: bytes.slice() },
    outputs: ["audio.wav"],
  });
  return parseWav(run.outputs["audio.wav"]!);
}

/** RMS of the first channel between two times, in 16-bit units. */
function rms(wav: ReturnType<typeof parseWav>, from: number, to: number): number {
  const start = Math.floor(from * wav.sampleRate);
  const end = Math.floor(to * wav.sampleRate);
  let sum = 0;
  for (let i = start; i < end; i++) sum += wav.samples[i * wav.channels]! ** 2;
  return Math.sqrt(sum / (end - start));
}

/** MD5 of every packet of the first video stream, read as a stream copy. */
async function videoPacketsHash(bytes: Uint8Array, extension: string): Promise<string> {
  const name = `media.${extension}`;
  const run = await runFfmpegWasm({
    args: ["-hide_banner", "-i", name, "-map", "0:v:0", "-c", "copy", "-f", "streamhash", "-hash", "md5", "hash.txt"],
    inputs: { [name]: bytes.slice() },
    outputs: ["hash.txt"],
  });
  return new TextDecoder().decode(run.outputs["hash.txt"]).trim();
}

const stubProbe = (over: Partial<ProbeResult>): ProbeResult => ({
  kind: "video",
  container: "mp4",
  mimeType: "video/mp4",
  durationMs: 2000,
  videoCodec: "h264",
  audioCodec: "aac",
  hasAudio: true,
  hasVideo: true,
  width: 320,
  height: 240,
  ...over,
});
const stubInput = (over: Partial<ProbeResult>, name = "in0.mp4", filename = "clip.mp4"): MediaInput => ({
  name,
  filename,
  sizeBytes: 1000,
  probe: stubProbe(over),
});

// ---------------------------------------------------------------------------------------------
// convert

describe("buildConvertCommand (argv)", () => {
  it("copies streams the target holds and re-encodes the others", () => {
    const joined = (format: ConvertFormat, over: Partial<ProbeResult>) =>
      buildConvertCommand({ format }, [stubInput(over)]).args.join(" ");
    expect(joined("mkv", {})).toContain("-c:v copy -c:a copy");
    expect(joined("mp4", { container: "mkv" })).toContain("-c:v copy -c:a copy -movflags +faststart -f mp4 out.mp4");
    expect(joined("mp4", { videoCodec: "vp8", audioCodec: "opus" })).toMatch(/-c:v libx264 .*-c:a aac/);
    expect(joined("mp4", { videoCodec: "h264", audioCodec: "opus" })).toMatch(/-c:v copy -c:a aac/);
    expect(joined("webm", { videoCodec: "vp9", audioCodec: "opus" })).toContain("-c:v copy -c:a copy");
    expect(joined("webm", {})).toMatch(/-c:v libvpx .*-c:a libopus/);
    expect(joined("avi", {})).toMatch(/-c:v mpeg4 -vtag XVID .*-c:a libmp3lame -b:a 192k/);
    expect(joined("mkv", { videoCodec: "mpeg4", audioCodec: "mp3", container: "avi" })).toContain(
      "-c:v copy -bsf:v mpeg4_unpack_bframes -c:a copy",
    );
  });

  it("re-encodes High 10, 4:2:2 and 4:4:4 H.264 for MP4 and MOV (browsers play 8-bit 4:2:0 only), copies it into MKV", () => {
    const joined = (format: ConvertFormat, h264Profile: number) =>
      buildConvertCommand({ format }, [stubInput({ videoCodec: "h264", h264Profile })]).args.join(" ");
    for (const profile of [110, 122, 244]) {
      expect(joined("mp4", profile)).toMatch(/-c:v libx264 .*-pix_fmt yuv420p/);
      expect(joined("mov", profile)).toMatch(/-c:v libx264/);
      expect(joined("mkv", profile)).toContain("-c:v copy");
    }
    for (const profile of [66, 77, 100]) expect(joined("mp4", profile)).toContain("-c:v copy");
  });

  it("never encodes VP9 and keeps x264 within the low-memory settings", () => {
    for (const format of ["mp4", "webm", "mov", "avi", "mkv"] as const) {
      const args = buildConvertCommand({ format }, [stubInput({ videoCodec: "hevc", audioCodec: "ac3" })]).args;
      expect(args.join(" ")).not.toMatch(/libvpx-vp9|libx265/);
      if (args.includes("libx264")) expect(args.join(" ")).toContain("-preset veryfast -tune zerolatency");
    }
  });

  it("keeps audio-only inputs audio-only, with audio content types", () => {
    const audio = {
      kind: "audio" as const,
      container: "mp3",
      videoCodec: undefined,
      audioCodec: "mp3",
      hasVideo: false,
      width: undefined,
      height: undefined,
    };
    const mp4 = buildConvertCommand({ format: "mp4" }, [stubInput(audio, "in0.mp3", "tone.mp3")]);
    expect(mp4.args.join(" ")).toContain("-map 0:a:0 -c:a aac");
    expect(mp4.args).not.toContain("-c:v");
    expect(mp4).toMatchObject({ contentType: "audio/mp4", resultFilename: "tone.mp4", wasmHeapBytes: 32 * MiB });
    expect(buildConvertCommand({ format: "webm" }, [stubInput(audio)]).contentType).toBe("audio/webm");
    expect(buildConvertCommand({ format: "mkv" }, [stubInput(audio)]).args.join(" ")).toContain("-c:a copy");
  });

  it("reports content types, names and heap per path", () => {
    const types = Object.fromEntries(
      (["mp4", "webm", "mov", "avi", "mkv"] as const).map((format) => [
        format,
        buildConvertCommand({ format }, [stubInput({})]).contentType,
      ]),
    );
    expect(types).toEqual({
      mp4: "video/mp4",
      webm: "video/webm",
      mov: "video/quicktime",
      avi: "video/x-msvideo",
      mkv: "video/matroska",
    });
    const heap = (format: ConvertFormat, over: Partial<ProbeResult> = {}) =>
      buildConvertCommand({ format }, [stubInput(over)]).wasmHeapBytes;
    expect(heap("mkv")).toBe(32 * MiB);
    expect(heap("mp4", { videoCodec: "vp8", width: 1280, height: 720 })).toBe(55 * MiB);
    expect(heap("webm", { width: 1280, height: 720 })).toBe(67 * MiB);
    expect(heap("mp4", { videoCodec: "vp8", width: 1920, height: 1080 })).toBeGreaterThan(79 * MiB);
    expect(buildConvertCommand({ format: "webm" }, [stubInput({})]).wasmCapable).toBe(true);
    expect(buildConvertCommand({ format: "mov" }, [stubInput({}, "in0.mp4", "Vidéo été.mp4")]).resultFilename).toBe(
      "Video_ete.mov",
    );
  });
});

describe("convert on ffmpeg.wasm", () => {
  it.each([
    // [source, format, video codec, audio codec, muxer name ffprobe reports, copies]
    ["clip.mp4", "mkv", "h264", "aac", "matroska", true],
    ["clip.mp4", "mov", "h264", "aac", "mov", true],
    ["clip.mkv", "mp4", "h264", "aac", "mov", true],
    ["clip.webm", "mp4", "h264", "aac", "mov", false],
    ["clip.mp4", "webm", "vp8", "opus", "matroska", false],
    ["clip.mp4", "avi", "mpeg4", "mp3", "avi", false],
  ] as const)("%s -> %s: %s + %s", async (name, format, videoCodec, audioCodec, muxer, copies) => {
    const src = await fixtureSource(name);
    const command = buildConvertCommand({ format }, [src.input]);
    const run = await execute(`convert ${name} -> ${format}`, command, [src]);
    if (copies) {
      expect(run.log).toMatch(/Stream #0:0 -> #0:0 \(copy\)/);
      expect(run.log).toMatch(/Stream #0:1 -> #0:1 \(copy\)/);
    } else {
      expect(run.log).not.toMatch(/\(copy\)/);
    }
    const out = await ffprobe(run.bytes);
    expect(out.format.format_name).toContain(muxer);
    expect(out.streams).toHaveLength(2);
    expect(out.video).toMatchObject({ codec_name: videoCodec, width: 320, height: 240 });
    expect(out.audio?.codec_name).toBe(audioCodec);
    const expected = src.input.probe.durationMs / 1000;
    expect(Math.abs(streamSeconds(out, out.video) - expected)).toBeLessThan(0.1);
    expect(Math.abs(streamSeconds(out, out.audio) - expected)).toBeLessThan(0.1);
    if (format === "avi") expect(out.video?.codec_tag_string).toBe("XVID");
    if (format === "mp4") {
      // +faststart: the index precedes the media data.
      const text = new TextDecoder("latin1").decode(run.bytes);
      expect(text.indexOf("moov")).toBeLessThan(text.indexOf("mdat"));
    }
  });

  it.each([
    ["mp4", "aac", "audio/mp4"],
    ["webm", "opus", "audio/webm"],
  ] as const)("tone.mp3 -> %s stays audio-only (%s)", async (format, codec, contentType) => {
    const src = await fixtureSource("tone.mp3");
    expect(src.input.probe.kind).toBe("audio");
    const command = buildConvertCommand({ format }, [src.input]);
    expect(command.contentType).toBe(contentType);
    const run = await execute(`convert tone.mp3 -> ${format}`, command, [src]);
    const out = await ffprobe(run.bytes);
    expect(out.streams.map((s) => s.codec_type)).toEqual(["audio"]);
    expect(out.audio?.codec_name).toBe(codec);
    expect(Math.abs(streamSeconds(out, out.audio) - src.input.probe.durationMs / 1000)).toBeLessThan(0.1);
    const wav = await decodeAudio(run.bytes, format);
    expect(toneFrequency(wav.samples, wav.channels, wav.sampleRate)).toBeCloseTo(440, -1);
  });
});

// ---------------------------------------------------------------------------------------------
// trim

describe("buildTrimCommand (argv)", () => {
  it("seeks on the input, bounds the output and names the result", () => {
    const command = buildTrimCommand({ start: 1.25, end: 3.5 }, [stubInput({})]);
    expect(command.args.join(" ")).toContain("-ss 1.25 -i in0.mp4 -t 2.25");
    expect(command).toMatchObject({ resultFilename: "clip-trim.mp4", contentType: "video/mp4", outputName: "out.mp4" });
    expect(buildTrimCommand({ start: 0, end: 1 / 3 }, [stubInput({})]).args).toContain("0.333333");
  });

  it("writes the source's container back with its family's codecs", () => {
    const family = (over: Partial<ProbeResult>) =>
      buildTrimCommand({ start: 0, end: 1 }, [stubInput(over)]).args.join(" ");
    expect(family({ container: "webm", mimeType: "video/webm" })).toMatch(/libvpx .*libopus .*-f webm out.webm/);
    expect(family({ container: "avi" })).toMatch(/mpeg4 .*libmp3lame .*-f avi out.avi/);
    const audio = { kind: "audio" as const, hasVideo: false, videoCodec: undefined };
    expect(family({ ...audio, container: "mp3", audioCodec: "mp3" })).toMatch(
      /-map 0:a:0 -c:a libmp3lame .*-f mp3 out.mp3$/,
    );
    expect(family({ ...audio, container: "wav", audioCodec: "pcm_s24le" })).toContain("-c:a pcm_s24le");
    expect(family({ ...audio, container: "ogg", audioCodec: "vorbis" })).toContain("libvorbis");
    expect(family({ ...audio, container: "flac", audioCodec: "flac" })).toContain("-c:a flac");
  });

  it("refuses an empty or reversed segment", () => {
    expect(() => buildTrimCommand({ start: 2, end: 2 }, [stubInput({})])).toThrow(RangeError);
  });
});

describe("trim on ffmpeg.wasm", () => {
  it.each([
    ["ALAC in M4A", ["-c:a", "alac"], "lossless.m4a", "alac"],
    ["FLAC in Matroska", ["-c:a", "flac"], "lossless.mkv", "flac"],
    ["PCM in MOV", ["-c:a", "pcm_s16le"], "lossless.mov", "pcm_s16le"],
  ])("keeps %s lossless, as trim and clean-audio write it back", async (_label, codec, name, expected) => {
    const bytes = await generate(name, ["-f", "lavfi", "-i", "sine=f=440:d=3:r=48000", ...codec]);
    const src = await source(bytes, name);
    expect(src.input.probe.audioCodec).toBe(expected);
    for (const [tool, command] of [
      ["trim", buildTrimCommand({ start: 0.5, end: 2 }, [src.input])],
      ["clean-audio", buildCleanAudioCommand({}, [src.input])],
    ] as const) {
      const run = await execute(`${tool} ${name}`, command, [src]);
      const out = await ffprobe(run.bytes);
      expect(out.audio?.codec_name, tool).toBe(expected);
      expect(Math.abs(streamSeconds(out, out.audio) - (tool === "trim" ? 1.5 : 3))).toBeLessThan(0.05);
    }
  });

  it("cuts clip.mp4 from 0.52 to 1.72 s on the exact frame, audio included", async () => {
    const src = await fixtureSource("clip.mp4");
    const command = buildTrimCommand({ start: 0.52, end: 1.72 }, [src.input]);
    expect(command.resultFilename).toBe("clip-trim.mp4");
    const run = await execute("trim clip.mp4 0.52-1.72", command, [src]);
    const out = await ffprobe(run.bytes);
    expect(out.video?.codec_name).toBe("h264");
    expect(Math.abs(streamSeconds(out, out.video) - 1.2)).toBeLessThanOrEqual(0.04);
    expect(Number(out.video?.nb_read_packets)).toBe(30);
    expect(out.audio?.codec_name).toBe("aac");
    expect(Math.abs(streamSeconds(out, out.audio) - 1.2)).toBeLessThanOrEqual(0.04);
    const wav = await decodeAudio(run.bytes, "mp4");
    expect(Math.abs(wav.durationSeconds - 1.2)).toBeLessThan(0.03);
    expect(toneFrequency(wav.samples, wav.channels, wav.sampleRate)).toBeCloseTo(440, -1);

    // testsrc2 prints the time (ms digits) and the frame number top left: the first frame of
    // the cut is the source's frame 13 (0.52 s), not its neighbours 12 (0.48 s) or 14 (0.56 s).
    const first = await frameAt(run.bytes, "mp4", 0, 320, 240);
    const differences = await Promise.all(
      [0.48, 0.52, 0.56].map(async (t) =>
        regionDifference(first, await frameAt(src.bytes, "mp4", t, 320, 240), 70, 0, 102, 38),
      ),
    );
    expect(differences[1]).toBeLessThan(differences[0]! / 2);
    expect(differences[1]).toBeLessThan(differences[2]! / 2);
  });

  it("cuts an MP3 to the sample and keeps it MP3", async () => {
    const src = await fixtureSource("tone.mp3");
    const command = buildTrimCommand({ start: 0.5, end: 2 }, [src.input]);
    expect(command).toMatchObject({ resultFilename: "tone-trim.mp3", contentType: "audio/mpeg" });
    const run = await execute("trim tone.mp3 0.5-2", command, [src]);
    const out = await ffprobe(run.bytes);
    expect(out.streams.map((s) => s.codec_name)).toEqual(["mp3"]);
    // Decoded with the LAME gapless header: exactly 1.5 s.
    const wav = await decodeAudio(run.bytes, "mp3");
    expect(Math.abs(wav.durationSeconds - 1.5)).toBeLessThan(0.001);
    expect(toneFrequency(wav.samples, wav.channels, wav.sampleRate)).toBeCloseTo(440, -1);
  });

  it("cuts a WAV to the sample in its own PCM format", async () => {
    const src = await fixtureSource("tone.wav");
    const run = await execute("trim tone.wav 0.2-1", buildTrimCommand({ start: 0.2, end: 1 }, [src.input]), [src]);
    const wav = parseWav(run.bytes);
    expect(wav).toMatchObject({ audioFormat: 1, sampleRate: 16000, bitsPerSample: 16 });
    expect(wav.dataBytes / 2).toBe(0.8 * 16000);
  });
});

// ---------------------------------------------------------------------------------------------
// merge

describe("buildMergeCommand (argv)", () => {
  it("normalises every input to the first one and joins them with the concat filter", () => {
    const command = buildMergeCommand({}, [
      stubInput({ width: 640, height: 360 }),
      stubInput({ width: 320, height: 240, hasAudio: false, audioCodec: undefined, durationMs: 1500 }, "in1.webm"),
    ]);
    const graph = command.args[command.args.indexOf("-filter_complex") + 1]!;
    expect(graph).toContain(
      "[1:V:0]scale=640:360:force_original_aspect_ratio=decrease:force_divisible_by=2,pad=640:360:(ow-iw)/2:(oh-ih)/2",
    );
    expect(graph).toContain("setsar=1,fps=30:start_time=0,format=yuv420p");
    expect(graph).toContain("anullsrc=r=48000:cl=stereo,atrim=duration=1.5");
    expect(graph).toMatch(/\[v0\]\[a0\]\[v1\]\[a1\]concat=n=2:v=1:a=1\[v\]\[a\]$/);
    expect(command).toMatchObject({
      outputName: "out.mp4",
      contentType: "video/mp4",
      resultFilename: "clip-merge.mp4",
    });
  });

  it("uses the first input's frame rate once the probe reports one", () => {
    const first = stubInput({ width: 320, height: 240 });
    first.probe.frameRate = 25;
    const graph = buildMergeCommand({}, [first, stubInput({})]).args.join(" ");
    expect(graph).toContain("fps=25:start_time=0,");
    expect(frameRateOf({ ...first.probe, frameRate: 29.97 } as ProbeResult)).toBe("30000/1001");
    expect(frameRateOf(stubProbe({}))).toBe("30");
  });

  it("has no audio when no input has any", () => {
    const silent = { hasAudio: false, audioCodec: undefined };
    const command = buildMergeCommand({}, [stubInput(silent), stubInput(silent)]);
    expect(command.args.join(" ")).toContain("concat=n=2:v=1:a=0[v] -map [v] -c:v libx264");
    expect(command.args).not.toContain("-c:a");
  });
});

describe("merge on ffmpeg.wasm", () => {
  let silent: Uint8Array;
  beforeAll(async () => {
    // A different size and rate, without audio.
    silent = await generate("silent.mp4", [
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=160x120:rate=30:duration=1.5",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-pix_fmt",
      "yuv420p",
    ]);
  });

  it("joins clip.mp4 + clip.webm + a silent 160x120 clip: sum of durations, first size, audio throughout", async () => {
    const sources = [
      await fixtureSource("clip.mp4", 0),
      await fixtureSource("clip.webm", 1),
      await source(silent, "silent.mp4", 2),
    ];
    expect(sources[2]!.input.probe.hasAudio).toBe(false);
    const command = buildMergeCommand(
      { uploadIds: ["a", "b", "c"] },
      sources.map((s) => s.input),
    );
    const run = await execute("merge mp4+webm+silent", command, sources);
    const out = await ffprobe(run.bytes);
    const sum = sources.reduce((total, s) => total + s.input.probe.durationMs / 1000, 0);
    expect(out.video).toMatchObject({ codec_name: "h264", width: 320, height: 240 });
    expect(Math.abs(streamSeconds(out, out.video) - sum)).toBeLessThan(0.1);
    expect(out.audio).toMatchObject({ codec_name: "aac", sample_rate: "48000", channels: 2 });
    expect(Math.abs(streamSeconds(out, out.audio) - sum)).toBeLessThan(0.1);

    // The tone of the first two inputs, then the silence of the third, in place.
    const wav = await decodeAudio(run.bytes, "mp4");
    expect(rms(wav, 0.2, 2.3)).toBeGreaterThan(1000);
    expect(rms(wav, 2.7, 4.3)).toBeGreaterThan(1000);
    expect(rms(wav, 4.7, 5.9)).toBeLessThan(10);
    // The small clip is scaled to the full height (4:3 into 4:3): no black bars.
    const last = await frameAt(run.bytes, "mp4", 5.5, 320, 240);
    const [r, g, b] = pixel(last, 160, 4);
    expect(r + g + b).toBeGreaterThan(60);
  });

  it("has no audio stream when no input has audio", async () => {
    const sources = [await source(silent, "silent.mp4", 0), await source(silent, "silent.mp4", 1)];
    const run = await execute(
      "merge silent+silent",
      buildMergeCommand(
        {},
        sources.map((s) => s.input),
      ),
      sources,
    );
    const out = await ffprobe(run.bytes);
    expect(out.streams.map((s) => s.codec_type)).toEqual(["video"]);
    expect(Math.abs(streamSeconds(out, out.video) - 3)).toBeLessThan(0.1);
  });
});

// ---------------------------------------------------------------------------------------------
// watermark

const markDefaults = { type: "fixe", opacity: 80, interval: 5 } as const;

describe("buildWatermarkCommand (argv)", () => {
  it("keeps the user's text out of the arguments: mark.txt, textfile=, no expansion", () => {
    const text = "Ça: 'x' %{pts} [0:v];drawtext=text=y,\\";
    const command = buildWatermarkCommand({ ...markDefaults, watermarkText: text }, [stubInput({})]);
    expect(command.args.join(" ")).not.toContain("%{pts}");
    expect(command.args.join(" ")).not.toContain("Ça");
    // Verbatim, apart from the line break that wraps it to a legible size.
    expect(new TextDecoder().decode(command.files[WATERMARK_TEXT_FILE]).replace(/\n/g, " ")).toBe(text);
    expect(command.fonts).toEqual([WATERMARK_FONT]);
    expect(command.args.join(" ")).toContain(
      `fontfile=fonts/${WATERMARK_FONT}:textfile=${WATERMARK_TEXT_FILE}:expansion=none`,
    );
  });

  it("draws Arabic, Hebrew, Thai and CJK with their Noto face (Latin merged in), anything else with Inter's merged face", () => {
    const fontOf = (watermarkText: string) =>
      buildWatermarkCommand({ ...markDefaults, watermarkText }, [stubInput({})]);
    expect(fontOf("© مرحبا 2026").fonts).toEqual(["NotoSansArabic-Regular.merged.ttf"]);
    expect(fontOf("© مرحبا 2026").args.join(" ")).toContain(
      `fontfile=fonts/NotoSansArabic-Regular.merged.ttf:textfile=${WATERMARK_TEXT_FILE}`,
    );
    expect(fontOf("Logo שלום").fonts).toEqual(["NotoSansHebrew-Regular.merged.ttf"]);
    expect(fontOf("สวัสดี").fonts).toEqual(["NotoSansThai-Regular.merged.ttf"]);
    expect(fontOf("東京へようこそ").fonts).toEqual(["NotoSansJP-Regular.ttf"]);
    expect(fontOf("© 你好").fonts).toEqual(["NotoSansSC-Regular.ttf"]);
    expect(fontOf("안녕 Logo").fonts).toEqual(["NotoSansKR-Regular.ttf"]);
    expect(fontOf("Démo 🔥").fonts).toEqual(["Inter-Regular.emoji.ttf"]);
    // Devanagari needs shaping drawtext does not do: no face of its own.
    for (const text of ["Démo Ł Ж", "नमस्ते"]) expect(fontOf(text).fonts, text).toEqual([WATERMARK_FONT]);
  });

  it("maps opacity to alpha, uses the image when both are given, and copies MP4-ready audio", () => {
    const image = stubInput(
      { kind: "image", container: "png", hasVideo: false, hasAudio: false, durationMs: 0 },
      "in1.png",
      "logo.png",
    );
    const command = buildWatermarkCommand(
      { ...markDefaults, opacity: 35, watermarkUploadId: "u", watermarkText: "ignored" },
      [stubInput({}), image],
    );
    expect(command.args.join(" ")).toContain("-i in0.mp4 -i in1.png");
    expect(command.args.join(" ")).toContain("colorchannelmixer=aa=0.35");
    expect(command.args.join(" ")).toContain("-c:a copy");
    expect(command.files).toEqual({});
    expect(command.fonts).toEqual([]);
    const opus = buildWatermarkCommand({ ...markDefaults, watermarkText: "x" }, [
      stubInput({ container: "webm", audioCodec: "opus" }),
    ]);
    expect(opus.args.join(" ")).toContain("-c:a aac");
    expect(opus).toMatchObject({
      outputName: "out.mp4",
      contentType: "video/mp4",
      resultFilename: "clip-watermark.mp4",
    });
  });

  it("wraps a long text onto lines rather than shrinking it below legibility", () => {
    const words = Array.from({ length: 25 }, (_, i) => `mot${i}`).join(" ");
    const command = buildWatermarkCommand({ ...markDefaults, type: "flottant", watermarkText: words }, [stubInput({})]);
    const laid = new TextDecoder().decode(command.files[WATERMARK_TEXT_FILE]);
    expect(laid.split("\n").length).toBeGreaterThan(1);
    expect(laid.replace(/\n/g, " ")).toBe(words);
    expect(Number(/fontsize=(\d+)/.exec(command.args.join(" "))![1])).toBeGreaterThan(10);
  });

  it("wraps a long text in a small frame's tiles too, where every layout reaches the 8 px floor", () => {
    const frame = { width: 320, height: 180 };
    for (const text of ["Lorem ipsum dolor sit amet ".repeat(8).trim(), "A".repeat(200)]) {
      const command = buildWatermarkCommand({ ...markDefaults, type: "fixe", watermarkText: text }, [stubInput(frame)]);
      const lines = new TextDecoder().decode(command.files[WATERMARK_TEXT_FILE]).split("\n");
      const size = Number(/fontsize=(\d+)/.exec(command.args.join(" "))![1]);
      expect(lines.length, text).toBeGreaterThan(1);
      // At 0.6 em a character, the longest line fits the frame (one line used to be 3 frames wide).
      expect(Math.max(...lines.map((l) => [...l].length)) * size * 0.6, text).toBeLessThanOrEqual(frame.width);
      expect(lines.join("").replace(/ /g, ""), text).toBe(text.replace(/ /g, ""));
    }
  });

  it("moves a floating mark every `interval` seconds", () => {
    const command = buildWatermarkCommand({ ...markDefaults, type: "flottant", interval: 8, watermarkText: "x" }, [
      stubInput({}),
    ]);
    expect(command.args.join(" ")).toContain("floor(t/8)");
    expect(command.args.join(" ").match(/drawtext=/g)).toHaveLength(1);
  });
});

describe("watermark on ffmpeg.wasm", () => {
  let clip: Source;
  let logo: Source;
  let gray: Source;
  let clipFrame: Frame;
  beforeAll(async () => {
    clip = await fixtureSource("clip.mp4", 0);
    logo = await fixtureSource("logo.png", 1);
    // 7 s of flat gray: where a mark is is unambiguous.
    gray = await source(
      await generate("gray.mp4", [
        "-f",
        "lavfi",
        "-i",
        "color=c=gray:size=160x120:rate=25:duration=7",
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        "-pix_fmt",
        "yuv420p",
      ]),
      "gray.mp4",
    );
    clipFrame = await frameAt(clip.bytes, "mp4", 1, 320, 240);
  });

  it("fixe image: the red logo over every cell of a 4x3 grid, the picture between them, audio copied", async () => {
    const command = buildWatermarkCommand({ ...markDefaults, watermarkUploadId: "logo" }, [clip.input, logo.input]);
    const run = await execute("watermark image fixe", command, [clip, logo]);
    expect(run.log).toMatch(/Stream #0:1 -> #0:1 \(copy\)/);
    const out = await ffprobe(run.bytes);
    expect(out.video).toMatchObject({ codec_name: "h264", width: 320, height: 240 });
    expect(out.audio?.codec_name).toBe("aac");
    expect(out.audio?.nb_read_packets).toBe((await ffprobe(clip.bytes)).audio?.nb_read_packets);

    const frame = await frameAt(run.bytes, "mp4", 1, 320, 240);
    // Cells of 80x80, marks of 40x40 centred in each: 80 % red over the picture.
    for (let row = 0; row < 3; row++) {
      for (let column = 0; column < 4; column++) {
        const [x, y] = [40 + column * 80, 40 + row * 80];
        const [sr, sg, sb] = pixel(clipFrame, x, y);
        const [r, g, b] = pixel(frame, x, y);
        expect(Math.abs(r - (0.8 * 255 + 0.2 * sr))).toBeLessThan(40);
        expect(Math.abs(g - 0.2 * sg)).toBeLessThan(40);
        expect(Math.abs(b - 0.2 * sb)).toBeLessThan(40);
        // Between marks (cell corners) the picture is untouched.
        const corner = [column * 80 + 6, row * 80 + 6] as const;
        expect(regionDifference(frame, clipFrame, corner[0], corner[1], corner[0] + 8, corner[1] + 8)).toBeLessThan(12);
      }
    }
  });

  it("flottant image: one mark, still within an interval, elsewhere in the next", async () => {
    const command = buildWatermarkCommand(
      { ...markDefaults, type: "flottant", opacity: 100, interval: 3, watermarkUploadId: "logo" },
      [gray.input, logo.input],
    );
    const run = await execute("watermark image flottant", command, [gray, logo]);
    const out = await ffprobe(run.bytes);
    expect(Math.abs(streamSeconds(out, out.video) - 7)).toBeLessThan(0.1);
    const marks = await Promise.all(
      [0.5, 2.5, 3.5, 6.5].map(async (t) => blob(await frameAt(run.bytes, "mp4", t, 160, 120), isRed)),
    );
    for (const mark of marks) {
      // One square mark of 24x24 (the 64x64 logo fit into a fifth of 160x120): one blob, full.
      expect(mark.width).toBeGreaterThanOrEqual(22);
      expect(mark.width).toBeLessThanOrEqual(26);
      expect(mark.height).toBeLessThanOrEqual(26);
      expect(mark.count).toBeGreaterThan(0.75 * mark.width * mark.height);
    }
    const [a, b, c, d] = marks.map((m) => [m.x0, m.y0]);
    expect(b).toEqual(a);
    expect(c).not.toEqual(a);
    expect(d).not.toEqual(c);
  });

  it("fixe text: the text drawn in every row of the grid with the shipped font", async () => {
    const text = "Ça coûte 5 € %{pts}";
    const command = buildWatermarkCommand({ ...markDefaults, watermarkText: text }, [clip.input]);
    const run = await execute("watermark text fixe", command, [clip]);
    const frame = await frameAt(run.bytes, "mp4", 1, 320, 240);
    // Rows centred at y = 40, 120, 200: text there, the picture unchanged halfway between.
    for (const y of [40, 120, 200])
      expect(regionDifference(frame, clipFrame, 20, y - 6, 300, y + 6)).toBeGreaterThan(15);
    for (const y of [80, 160]) expect(regionDifference(frame, clipFrame, 120, y - 3, 300, y + 3)).toBeLessThan(8);
  });

  it("text in Polish, Cyrillic, Greek and Vietnamese: every letter drawn, none as the missing-glyph box", async () => {
    const drawText = async (text: string) => {
      const command = buildWatermarkCommand({ ...markDefaults, opacity: 100, watermarkText: text }, [gray.input]);
      expect(command.fonts).toEqual([WATERMARK_FONT]);
      return frameAt((await execute("watermark text scripts", command, [gray])).bytes, "mp4", 1, 160, 120);
    };
    // U+E000 is in no font: drawtext draws the box a missing glyph gets.
    const boxes = await drawText("\uE000\uE000\uE000\uE000");
    const grey = await frameAt(gray.bytes, "mp4", 1, 160, 120);
    expect(regionDifference(boxes, grey, 0, 0, 160, 120)).toBeGreaterThan(1);
    for (const letters of ["ŁŁŁŁ", "ЖЖЖЖ", "ΩΩΩΩ", "ệệệệ"]) {
      expect(regionDifference(await drawText(letters), boxes, 0, 0, 160, 120), letters).toBeGreaterThan(1);
    }
  });

  it("text in Arabic, Hebrew, Thai and Japanese: drawn with the script's face, Arabic letters joined", async () => {
    const drawText = async (text: string, font: string) => {
      const command = buildWatermarkCommand({ ...markDefaults, opacity: 100, watermarkText: text }, [gray.input]);
      expect(command.fonts, text).toEqual([font]);
      return frameAt((await execute("watermark text scripts", command, [gray])).bytes, "mp4", 1, 160, 120);
    };
    const boxes = await drawText("\uE000\uE000\uE000\uE000", WATERMARK_FONT);
    const arabic = await drawText("ببببب", "NotoSansArabic-Regular.merged.ttf");
    expect(regionDifference(arabic, boxes, 0, 0, 160, 120)).toBeGreaterThan(1);
    // The same letters kept apart by zero-width non-joiners take their isolated forms.
    expect(
      regionDifference(
        arabic,
        await drawText("ب\u200Cب\u200Cب\u200Cب\u200Cب", "NotoSansArabic-Regular.merged.ttf"),
        0,
        0,
        160,
        120,
      ),
    ).toBeGreaterThan(1);
    expect(
      regionDifference(await drawText("שלום", "NotoSansHebrew-Regular.merged.ttf"), boxes, 0, 0, 160, 120),
    ).toBeGreaterThan(1);
    expect(
      regionDifference(await drawText("สวัสดี", "NotoSansThai-Regular.merged.ttf"), boxes, 0, 0, 160, 120),
    ).toBeGreaterThan(1);
    expect(
      regionDifference(await drawText("日本語です", "NotoSansJP-Regular.ttf"), boxes, 0, 0, 160, 120),
    ).toBeGreaterThan(1);
    // Emoji past U+FFFF, beside Latin and Cyrillic in the same face.
    const emoji = await drawText("🔥😀👍", "Inter-Regular.emoji.ttf");
    expect(regionDifference(emoji, boxes, 0, 0, 160, 120)).toBeGreaterThan(1);
    expect(
      regionDifference(
        await drawText("Ж🔥", "Inter-Regular.emoji.ttf"),
        await drawText("Ж\uE000", WATERMARK_FONT),
        0,
        0,
        160,
        120,
      ),
    ).toBeGreaterThan(0.3);
  });

  it("flottant text: drawn at a new place in the next interval", async () => {
    const command = buildWatermarkCommand(
      { ...markDefaults, type: "flottant", opacity: 100, interval: 3, watermarkText: "© Démo" },
      [gray.input],
    );
    const run = await execute("watermark text flottant", command, [gray]);
    const notGray = ([r, g, b]: [number, number, number]) =>
      Math.abs(r - 128) + Math.abs(g - 128) + Math.abs(b - 128) > 60;
    const [a, b, c] = await Promise.all(
      [0.5, 2.5, 3.5].map(async (t) => blob(await frameAt(run.bytes, "mp4", t, 160, 120), notGray)),
    );
    expect(a!.count).toBeGreaterThan(30);
    expect(Math.abs(a!.x0 - b!.x0) + Math.abs(a!.y0 - b!.y0)).toBeLessThanOrEqual(2);
    expect(Math.abs(a!.x0 - c!.x0) + Math.abs(a!.y0 - c!.y0)).toBeGreaterThan(10);
  });
});

// ---------------------------------------------------------------------------------------------
// clean-audio

describe("buildCleanAudioCommand (argv)", () => {
  it("denoises, band-limits and levels the audio; copies the video", () => {
    const command = buildCleanAudioCommand({}, [stubInput({ audioChannels: 2 })]);
    const CLEAN_AUDIO_FILTER = cleanAudioFilter(2);
    // RNNoise's pass first: the sound as raw stereo floats at 48 kHz, which the graph reads as input 1.
    expect(command.denoise).toEqual({
      args: [
        "-hide_banner",
        "-y",
        "-i",
        "in0.mp4",
        "-map",
        "0:a:0",
        "-af",
        "aformat=sample_rates=48000",
        "-ac",
        "2",
        "-c:a",
        "pcm_f32le",
        "-f",
        "f32le",
        "denoised.f32",
      ],
      writes: "denoised.f32",
      channels: 2,
    });
    expect(command.args.join(" ")).toContain(
      `-i in0.mp4 -f f32le -ar 48000 -ac 2 -i denoised.f32 -map 0:V:0 -c:v copy -filter_complex ${CLEAN_AUDIO_FILTER}[cleaned] -map [cleaned] -c:a aac`,
    );
    expect(CLEAN_AUDIO_FILTER).toMatch(
      /\[1:a:0\]highpass=f=80,lowpass=f=12000,.*dynaudnorm=.*afftdn=.*afftdn=.*agate=.*alimiter=/,
    );
    // Beyond two channels (or not known) ffmpeg 5.1's alimiter mixes channels up: a linked compressor instead.
    for (const channels of [6, undefined]) {
      const graph = buildCleanAudioCommand({}, [stubInput({ audioChannels: channels })]).args.join(" ");
      expect(graph).toContain("acompressor=threshold=0.84:ratio=20");
      expect(graph).not.toContain("alimiter");
    }
    // ffmpeg.wasm normalises in two runs: the graph measured (audio alone, no encoder), then with one gain.
    const loudnorm = "loudnorm=I=-16:TP=-1.5:LRA=11";
    expect(command.wasmLoudness?.measureArgs.join(" ")).toBe(
      `-hide_banner -y -i in0.mp4 -f f32le -ar 48000 -ac 2 -i denoised.f32 -filter_complex ${CLEAN_AUDIO_FILTER},${loudnorm}[cleaned] -map [cleaned] -f null -`,
    );
    expect(command.wasmLoudness?.args.join(" ")).toContain(
      `-map 0:V:0 -c:v copy -filter_complex ${CLEAN_AUDIO_FILTER},${loudnorm}[cleaned] -map [cleaned] -c:a aac`,
    );
    // The measuring run's meter took 38.4 MiB of wasm heap on stereo, 95.8 on 5.1 (the graph alone 32 and 80);
    // the denoised raw samples count twice (the isolate's copy and a core's).
    const rawBytes = (channels: number, ms: number) => 2 * Math.ceil((ms / 1000) * 48_000) * 4 * channels;
    const durationMs = stubInput({}).probe.durationMs;
    expect(command).toMatchObject({
      resultFilename: "clip-clean.mp4",
      contentType: "video/mp4",
      wasmHeapBytes: 40 * MiB + rawBytes(2, durationMs),
    });
    const surround = stubInput({});
    surround.probe.audioChannels = 6;
    expect(buildCleanAudioCommand({}, [surround]).wasmHeapBytes).toBe(104 * MiB + rawBytes(6, durationMs));
  });

  it.each([
    ["mp3", "mp3", "libmp3lame", "audio/mpeg"],
    ["wav", "pcm_s16le", "pcm_s16le", "audio/wav"],
    ["m4a", "aac", "aac", "audio/mp4"],
    ["ogg", "opus", "libopus", "audio/ogg"],
    ["flac", "flac", "flac", "audio/flac"],
  ])("keeps an audio-only %s in its family", (container, audioCodec, encoder, mimeType) => {
    const audio = { kind: "audio" as const, hasVideo: false, videoCodec: undefined, container, audioCodec, mimeType };
    const command = buildCleanAudioCommand({}, [stubInput(audio, `in0.${container}`, `voice.${container}`)]);
    expect(command.args).not.toContain("-c:v");
    expect(command.args).toContain(encoder);
    expect(command).toMatchObject({ resultFilename: `voice-clean.${container}`, contentType: mimeType });
  });
});

describe("clean-audio on ffmpeg.wasm", () => {
  it("lowers the noise floor of a noisy recording by more than 15 dB relative to the signal", async () => {
    // A 440 Hz tone with a 0.8 s pause every 2 s, under white noise 22 dB below it.
    const noisy = await generate("noisy.wav", [
      "-f",
      "lavfi",
      "-i",
      "aevalsrc='0.3*sin(2*PI*440*t)*lt(mod(t,2),1.2)':s=48000:d=4",
      "-f",
      "lavfi",
      "-i",
      "anoisesrc=a=0.03:c=white:r=48000:d=4:seed=7",
      "-filter_complex",
      "[0][1]amix=inputs=2:normalize=0",
      "-c:a",
      "pcm_s16le",
    ]);
    const src = await source(noisy, "noisy.wav");
    const command = buildCleanAudioCommand({}, [src.input]);
    expect(command.resultFilename).toBe("noisy-clean.wav");
    const run = await execute("clean-audio wav", command, [src]);

    const before = parseWav(noisy);
    const after = parseWav(run.bytes);
    expect(after).toMatchObject({ sampleRate: 48000, channels: 1, bitsPerSample: 16 });
    expect(Math.abs(after.durationSeconds - 4)).toBeLessThan(0.05);
    const snr = (wav: typeof before) => 20 * Math.log10(rms(wav, 2.2, 3.0) / Math.max(1, rms(wav, 3.35, 3.9)));
    expect(snr(before)).toBeLessThan(25);
    expect(snr(after)).toBeGreaterThan(snr(before) + 15);
    expect(toneFrequency(after.samples.subarray(Math.floor(2.2 * 48000), 3 * 48000), 1, 48000)).toBeCloseTo(440, -1);
    // Levelled: the tone ends up loud but with headroom (peak ceiling 0.84 = -1.5 dBFS).
    const peak = after.samples.reduce((max, s) => Math.max(max, Math.abs(s)), 0);
    expect(peak).toBeLessThanOrEqual(Math.ceil(0.84 * 32768) + 200);
    expect(rms(after, 2.2, 3.0)).toBeGreaterThan(3000);
  });

  it("copies the video of clip.mp4 packet for packet and cleans its audio", async () => {
    const src = await fixtureSource("clip.mp4");
    const command = buildCleanAudioCommand({}, [src.input]);
    expect(command.resultFilename).toBe("clip-clean.mp4");
    const run = await execute("clean-audio mp4", command, [src]);
    expect(run.log).toMatch(/Stream #0:0 -> #0:0 \(copy\)/);
    expect(await videoPacketsHash(run.bytes, "mp4")).toBe(await videoPacketsHash(src.bytes, "mp4"));
    const [before, out] = [await ffprobe(src.bytes), await ffprobe(run.bytes)];
    expect(out.video?.nb_read_packets).toBe(before.video?.nb_read_packets);
    expect(out.audio).toMatchObject({ codec_name: "aac", sample_rate: "48000" });
    expect(Math.abs(streamSeconds(out, out.audio) - 2.5)).toBeLessThan(0.1);
  });
});

it("heap estimates grow with the frame size", () => {
  expect(wasmHeapEstimate(undefined)).toBe(32 * MiB);
  expect(wasmHeapEstimate("x264", 320, 240)).toBe(55 * MiB);
  expect(wasmHeapEstimate("x264", 1920, 1080)).toBeGreaterThan(wasmHeapEstimate("x264", 1280, 720));
});

describe("heap estimates hold at 720p (the routing's calibration size)", () => {
  // The in-Worker engine takes a job when the builder's estimate fits the isolate; these are the
  // heaviest 720p settings a Worker may run, measured against what ffmpeg.wasm really peaks at.
  it("x264 re-encode (trim) and drawtext (text watermark) of a 720p second stay under their estimates", async () => {
    const src = await fixtureSource("clip720.mp4");
    expect(src.input.probe).toMatchObject({ width: 1280, height: 720 });
    const trimmed = await execute("trim 720p 0.2-0.8", buildTrimCommand({ start: 0.2, end: 0.8 }, [src.input]), [src]);
    const marked = await execute(
      "watermark text 720p",
      buildWatermarkCommand({ ...markDefaults, watermarkText: "720p" }, [src.input]),
      [src],
    );
    for (const run of [trimmed, marked]) {
      expect(run.bytes.byteLength).toBeGreaterThan(10_000);
      // A re-encode at 720p needs clearly more than the 32 MiB base heap: the guard is not vacuous.
      expect(run.peakWasmBytes).toBeGreaterThan(40 * MiB);
    }
  });
});
