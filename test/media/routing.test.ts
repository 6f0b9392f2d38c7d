import { describe, expect, it } from "vitest";
import type { Env } from "../../src/env";
import {
  CALIBRATION,
  chooseEngine as chooseWithConfig,
  predictSeconds,
  workloadOf,
} from "../../src/media-worker/routing";
import { routingConfig } from "../../src/media-worker/job-stages";
import { progressiveInputs, type MediaCommand, type MediaInput } from "../../src/media/commands/command";
import { buildCleanAudioCommand } from "../../src/media/commands/clean-audio";
import { buildConvertCommand } from "../../src/media/commands/convert";
import { buildExtractAudioCommand } from "../../src/media/commands/extract-audio";
import { buildSubtitlesCommand } from "../../src/media/commands/subtitles";
import { buildTrimCommand } from "../../src/media/commands/trim";
import { tools } from "../../src/tools";

const MiB = 1024 * 1024;
const env = (vars: Partial<Env> = {}) => vars as Env;
/** Through the Worker's settings, as the job runner reads them. */
const chooseEngine = (
  settings: Env,
  ...rest: Parameters<typeof chooseWithConfig> extends [unknown, ...infer R] ? R : never
) => chooseWithConfig(routingConfig(settings), ...rest);
const input = (sizeBytes: number, seconds: number, width = 1280, height = 720): MediaInput => ({
  name: "in0.mp4",
  filename: "a.mp4",
  sizeBytes,
  probe: {
    kind: "video",
    container: "mp4",
    mimeType: "video/mp4",
    durationMs: seconds * 1000,
    hasAudio: true,
    hasVideo: true,
    width,
    height,
    videoCodec: "h264",
    audioCodec: "aac",
  },
});
const reencode = (heap = 55 * MiB): MediaCommand => ({
  args: ["-i", "in0.mp4", "-c:v", "libx264", "-preset", "veryfast", "-c:a", "aac", "out.mp4"],
  files: {},
  fonts: [],
  outputName: "out.mp4",
  resultFilename: "r.mp4",
  contentType: "video/mp4",
  wasmCapable: true,
  wasmHeapBytes: heap,
});
const copy = (): MediaCommand => ({ ...reencode(32 * MiB), args: ["-i", "in0.mp4", "-c", "copy", "out.mkv"] });
const id = "upl_x";

describe("the router's view of a command", () => {
  it("reads the work from the builders' arguments", () => {
    const clip = input(3_400_000, 10);
    const trim = buildTrimCommand(tools.trim.params.parse({ uploadId: id, start: 2, end: 7 }), [clip]);
    expect(workloadOf(trim, [clip])).toMatchObject({ kind: "x264", mediaSeconds: 5, draws: false });
    expect(workloadOf(trim, [clip]).megapixelSeconds).toBeCloseTo(0.9216 * 5, 3);
    const mkv = buildConvertCommand(tools.convert.params.parse({ uploadId: id, format: "mkv" }), [clip]);
    expect(workloadOf(mkv, [clip]).kind).toBe("copy");
    const mp3 = buildExtractAudioCommand(tools["extract-audio"].params.parse({ uploadId: id, format: "mp3" }), [clip]);
    expect(workloadOf(mp3, [clip]).kind).toBe("audio");
  });

  it("counts both ffmpeg.wasm runs of a loudness-normalised command (clean-audio)", () => {
    const speech = input(900_000, 10);
    const clean = buildCleanAudioCommand(tools["clean-audio"].params.parse({ uploadId: id }), [speech]);
    expect(clean.wasmLoudness).toBeDefined();
    const once = predictSeconds({ ...clean, wasmLoudness: undefined }, [speech]);
    expect(predictSeconds(clean, [speech]).wasmCpu).toBeCloseTo(2 * once.wasmCpu, 9);
    // RNNoise runs on the backend only: there whenever one is configured, even where the Worker would be faster.
    expect(chooseEngine(env(), clean, [speech], true)).toMatchObject({
      engine: "backend",
      reason: "RNNoise runs on the backend only",
    });
    expect(chooseEngine(env(), clean, [speech], false).engine).toBe("wasm");
    // Without its denoise pass the same command races: 1.06 s measured on ffmpeg.wasm against 0.81 s on the backend.
    expect(chooseEngine(env(), { ...clean, denoise: undefined }, [speech], true).reason).toMatch(/^faster: /);
  });

  it("counts what the backend reads of a trimmed input over HTTP, not the whole file", () => {
    const long = input(600 * MiB, 3600);
    const short = buildTrimCommand(tools.trim.params.parse({ uploadId: id, start: 1800, end: 1810 }), [long]);
    expect(short.backendStreaming).toEqual({ inputs: { "in0.mp4": "mov" }, readFraction: 15 / 3600 });
    const whole = buildTrimCommand(tools.trim.params.parse({ uploadId: id, start: 0, end: 3600 }), [long]);
    expect(whole.backendStreaming?.readFraction).toBe(1);
    // The same input in a container the backend cannot read over HTTP: downloaded whole first.
    const avi = { ...long, probe: { ...long.probe, container: "avi" } };
    const streamed = predictSeconds(short, [long]).backend;
    const downloaded = predictSeconds({ ...short, backendStreaming: undefined }, [avi]).backend;
    // 2 x 600 MiB at 100 MB/s no longer counted, and the 15/3600 read arrives while ffmpeg encodes: about 12.6 s less.
    expect(downloaded! - streamed!).toBeCloseTo(
      (600 * MiB * (2 - 15 / 3600)) / CALIBRATION.backend.transferBytesPerSecond,
      3,
    );
    // Containers without an index a range request can use are downloaded.
    expect(
      buildTrimCommand(tools.trim.params.parse({ uploadId: id, start: 1, end: 2 }), [{ ...avi, name: "in0.avi" }])
        .backendStreaming,
    ).toBeUndefined();
    const mkv = { ...long, name: "in0.mkv", probe: { ...long.probe, container: "mkv" } };
    expect(
      buildTrimCommand(tools.trim.params.parse({ uploadId: id, start: 1, end: 2 }), [mkv]).backendStreaming?.inputs,
    ).toEqual({ "in0.mkv": "matroska" });
  });

  it("streams the input of an audio extraction on the backend, overlapping its download with ffmpeg", () => {
    const film = input(61_000_000, 60, 1920, 1080);
    const mp3 = buildExtractAudioCommand(tools["extract-audio"].params.parse({ uploadId: id, format: "mp3" }), [film]);
    expect(mp3.backendStreaming).toEqual({ inputs: { "in0.mp4": "mov" }, readFraction: 1 });
    const transfer = 61_000_000 / CALIBRATION.backend.transferBytesPerSecond;
    const native = 60 * CALIBRATION.native.audioPerMediaSecond + 61_000_000 / CALIBRATION.native.copyBytesPerSecond;
    const fixed = CALIBRATION.backend.dispatchSeconds + CALIBRATION.native.startSeconds;
    expect(predictSeconds(mp3, [film]).backend).toBeCloseTo(fixed + Math.max(transfer, native) + transfer, 6);
    // A container without a usable index is downloaded first.
    const avi = { ...film, name: "in0.avi", probe: { ...film.probe, container: "avi" } };
    expect(buildExtractAudioCommand({ format: "wav" }, [avi]).backendStreaming).toBeUndefined();
    expect(predictSeconds({ ...mp3, backendStreaming: undefined }, [avi]).backend).toBeCloseTo(
      fixed + transfer + native + transfer,
      6,
    );
  });

  it("has the backend read every other MP4, MKV or MP3 input while it downloads, so the encode overlaps the download", () => {
    const film = input(61_000_000, 60, 1920, 1080);
    const webm = buildConvertCommand(tools.convert.params.parse({ uploadId: id, format: "webm" }), [film]);
    expect(progressiveInputs(webm, [film])).toEqual({ "in0.mp4": "mov" });
    const transfer = 61_000_000 / CALIBRATION.backend.transferBytesPerSecond;
    const native = workloadOf(webm, [film]).megapixelSeconds * CALIBRATION.native.perMegapixelSecond.vp8;
    const avi = { ...film, name: "in0.avi", probe: { ...film.probe, container: "avi" } };
    const aviWebm = buildConvertCommand(tools.convert.params.parse({ uploadId: id, format: "webm" }), [avi]);
    expect(progressiveInputs(aviWebm, [avi])).toEqual({});
    // The encode outlasts the download: the download's time is hidden, counted only for the AVI.
    expect(native).toBeGreaterThan(transfer);
    expect(predictSeconds(webm, [film]).backend).toBeCloseTo(
      CALIBRATION.backend.dispatchSeconds + CALIBRATION.native.startSeconds + native + transfer,
      6,
    );
    expect(predictSeconds(aviWebm, [avi]).backend - predictSeconds(webm, [film]).backend).toBeCloseTo(transfer, 6);
    // An input a command streams is not also read progressively; an image is downloaded.
    const trim = buildTrimCommand(tools.trim.params.parse({ uploadId: id, start: 1, end: 2 }), [film]);
    expect(progressiveInputs(trim, [film])).toEqual({});
    const logo = {
      ...film,
      name: "in1.png",
      sizeBytes: 20_000,
      probe: {
        kind: "image" as const,
        container: "png",
        mimeType: "image/png",
        durationMs: 0,
        hasAudio: false,
        hasVideo: false,
        width: 64,
        height: 64,
      },
    };
    expect(progressiveInputs(webm, [film, logo])).toEqual({ "in0.mp4": "mov" });
  });

  it("counts drawing filters", () => {
    const clip = input(3_400_000, 10);
    const params = tools.subtitles.params.parse({ uploadId: id, srtContent: "1\n00:00:00,000 --> 00:00:01,000\nHi\n" });
    const subtitles = buildSubtitlesCommand(params, [clip], "[Script Info]\n");
    expect(workloadOf(subtitles, [clip])).toMatchObject({ kind: "x264", draws: true });
  });
});

describe("engine routing by predicted completion time", () => {
  it("keeps copies and audio jobs in the Worker: no dispatch or transfer to pay", () => {
    const decision = chooseEngine(env(), copy(), [input(20 * MiB, 60)], true);
    expect(decision.engine).toBe("wasm");
    expect(decision.wasmSeconds).toBeLessThan(decision.backendSeconds);
  });

  it("sends a re-encode to the backend when it is predicted to finish first", () => {
    const decision = chooseEngine(env(), reencode(), [input(3_400_000, 10)], true);
    expect(decision.engine).toBe("backend");
    expect(decision.reason).toMatch(/^faster: predicted wasm [\d.]+ s, backend [\d.]+ s$/);
    expect(decision.backendSeconds).toBeLessThan(decision.wasmSeconds);
  });

  it("runs what fits in the Worker when no backend is configured", () => {
    const small = [input(600_000, 4, 640, 360)];
    expect(chooseEngine(env(), reencode(), small, false)).toMatchObject({
      engine: "wasm",
      reason: "fits the in-Worker limits; no backend configured",
    });
  });

  it("never routes to wasm a job whose predicted CPU exceeds the limit, backend or not", () => {
    for (const backend of [true, false]) {
      const decision = chooseEngine(env(), reencode(), [input(5 * MiB, 30)], backend);
      expect(decision.engine).toBe("backend");
      expect(decision.reason).toMatch(/cpu .* > 20 s/);
      expect(decision.cpuSeconds).toBeCloseTo(0.9216 * 30 * CALIBRATION.wasm.perMegapixelSecond.x264, 5);
    }
  });

  it("sends inputs whose memory would not fit 128 MB to the backend", () => {
    const decision = chooseEngine(env(), copy(), [input(60 * MiB, 60)], true);
    expect(decision.engine).toBe("backend");
    expect(decision.reason).toMatch(/memory/);
  });

  it("sends settings ffmpeg.wasm cannot run to the backend", () => {
    expect(chooseEngine(env(), { ...copy(), wasmCapable: false }, [input(1 * MiB, 2)], true).engine).toBe("backend");
  });

  it("follows configured thresholds and the forcing switch", () => {
    const small = [input(1 * MiB, 2, 320, 240)];
    expect(chooseEngine(env({ WASM_MEMORY_BUDGET_BYTES: String(48 * MiB) }), reencode(), small, false).engine).toBe(
      "backend",
    );
    expect(chooseEngine(env({ WASM_MEMORY_BUDGET_BYTES: String(48 * MiB) }), copy(), small, true).engine).toBe("wasm");
    expect(chooseEngine(env({ WASM_MAX_CPU_SECONDS: "0.0001" }), copy(), small, true).engine).toBe("backend");
    expect(chooseEngine(env({ MEDIA_ENGINE: "backend" }), copy(), small, true).engine).toBe("backend");
    expect(chooseEngine(env({ MEDIA_ENGINE: "wasm" }), reencode(), [input(500 * MiB, 600)], true).engine).toBe("wasm");
  });
});
