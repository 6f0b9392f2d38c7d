import { env } from "cloudflare:workers";
import { parseBuffer } from "music-metadata";
import { beforeAll, describe, expect, it } from "vitest";
import { FfmpegError, runFfmpegWasm } from "../../src/media-worker/ffmpeg-wasm";
import { createFfmpegCore } from "../../wasm/ffmpeg-core";
import {
  extractAudioArgs,
  extractAudioContentType,
  extractAudioOutputName,
  type ExtractAudioFormat,
} from "../../src/media/commands/extract-audio";
import { firstMp3FrameOffset, mp3FrameHeader, parseAdts, parseWav, toneFrequency } from "../helpers/audio-checks";

const MiB = 1024 * 1024;

// The first core loads the 32 MB wasm, which the vitest pool transfers slowly (15-20 s, more
// on a busy CI runner): pay it under the hook timeout rather than inside the first test.
beforeAll(() => createFfmpegCore());

async function fixture(name: string): Promise<Uint8Array> {
  const response = await fetch(`${env.FIXTURE_BASE_URL}/${name}`);
  if (!response.ok) throw new Error(`fixture ${name}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

/** Runs extract-audio on one fixture; inputs are handed to MEMFS, so each run gets its own copy. */
async function extract(source: Uint8Array, sourceName: string, format: ExtractAudioFormat, sourceAudioCodec?: string) {
  const input = `input${sourceName.slice(sourceName.lastIndexOf("."))}`;
  const output = extractAudioOutputName(sourceName, format);
  const args = extractAudioArgs({ input, output, format, sourceAudioCodec });
  const result = await runFfmpegWasm({ args, inputs: { [input]: source.slice() }, outputs: [output] });
  return { ...result, bytes: result.outputs[output]!, output };
}

describe("extractAudioArgs", () => {
  it.each(["mp3", "wav", "aac"] as const)("always maps the first audio stream without video (%s)", (format) => {
    const args = extractAudioArgs({ input: "in.mp4", output: `out.${format}`, format });
    expect(args).toEqual(expect.arrayContaining(["-hide_banner", "-y", "-vn"]));
    expect(args.join(" ")).toContain("-i in.mp4 -map 0:a:0");
    expect(args.at(-1)).toBe(`out.${format}`);
  });

  it("picks an encoder and a muxer per format", () => {
    const joined = (format: ExtractAudioFormat, sourceAudioCodec?: string) =>
      extractAudioArgs({ input: "in", output: "out", format, sourceAudioCodec }).join(" ");
    expect(joined("mp3")).toContain("-c:a libmp3lame -q:a 2 -f mp3");
    expect(joined("wav")).toContain("-c:a pcm_s16le -rf64 auto -f wav");
    expect(joined("aac")).toContain("-c:a aac -b:a 192k -f adts");
    expect(joined("mp3", "aac")).toContain("libmp3lame");
  });

  it.each(["aac", "AAC", "MPEG-4/AAC", "MPEG-4/AAC+SBR", "mp4a"])("copies AAC sources to AAC (%s)", (codec) => {
    expect(
      extractAudioArgs({ input: "in", output: "out.aac", format: "aac", sourceAudioCodec: codec }).join(" "),
    ).toContain("-c:a copy -f adts");
  });

  it.each(["aac_latm", "mp3", "opus", ""])("re-encodes other sources to AAC (%s)", (codec) => {
    expect(extractAudioArgs({ input: "in", output: "out.aac", format: "aac", sourceAudioCodec: codec })).toContain(
      "192k",
    );
  });
});

describe("extractAudioOutputName", () => {
  it.each([
    ["clip.mp4", "mp3", "clip.mp3"],
    ["My Holiday.final.MOV", "wav", "My_Holiday.final.wav"],
    ["C:\\Users\\me\\Vidéo été.mkv", "aac", "Video_ete.aac"],
    ["../../etc/passwd", "mp3", "passwd.mp3"],
    ["-rf.mp4", "mp3", "rf.mp3"],
    [".mp4", "wav", "audio.wav"],
    ["日本語.mp4", "aac", "audio.aac"],
    ["", "mp3", "audio.mp3"],
  ] as const)("%s as %s -> %s", (source, format, expected) => {
    expect(extractAudioOutputName(source, format)).toBe(expected);
  });

  it("maps formats to content types", () => {
    expect(extractAudioContentType).toEqual({ mp3: "audio/mpeg", wav: "audio/wav", aac: "audio/aac" });
  });
});

describe("runFfmpegWasm: extract-audio from clip.mp4 (2.5 s, H.264 + AAC 440 Hz mono)", () => {
  let clip: Uint8Array;
  beforeAll(async () => {
    clip = await fixture("clip.mp4");
  });

  it("writes a 16-bit PCM WAV of the same tone and duration", async () => {
    const result = await extract(clip, "clip.mp4", "wav");
    expect(result.output).toBe("clip.wav");
    const wav = parseWav(result.bytes);
    expect(wav).toMatchObject({ audioFormat: 1, channels: 1, sampleRate: 44100, bitsPerSample: 16 });
    expect(Math.abs(wav.durationSeconds - 2.5)).toBeLessThan(0.05);
    expect(toneFrequency(wav.samples, wav.channels, wav.sampleRate)).toBeCloseTo(440, -1);
    expect(result.exitCode).toBe(0);
    expect(result.log).toContain("pcm_s16le");
    expect(result.peakWasmBytes).toBeGreaterThanOrEqual(16 * MiB);
    expect(result.peakWasmBytes).toBeLessThan(128 * MiB);
  });

  it("writes an MPEG-1 Layer III MP3 of the same duration", async () => {
    const result = await extract(clip, "clip.mp4", "mp3");
    const header = mp3FrameHeader(result.bytes, firstMp3FrameOffset(result.bytes));
    expect(header).toEqual({ sync: true, version: 0b11, layer: 0b01 });
    const { format } = await parseBuffer(result.bytes, { mimeType: "audio/mpeg" });
    expect(format).toMatchObject({
      container: "MPEG",
      codec: "MPEG 1 Layer 3",
      sampleRate: 44100,
      numberOfChannels: 1,
    });
    expect(Math.abs(format.duration! - 2.5)).toBeLessThan(0.05);
  });

  it("copies the AAC stream into ADTS without re-encoding when the source is AAC", async () => {
    const result = await extract(clip, "clip.mp4", "aac", "aac");
    expect(result.log).toMatch(/Stream #0:1 -> #0:0 \(copy\)/);
    const adts = parseAdts(result.bytes);
    expect(adts).toMatchObject({ profile: 2, sampleRate: 44100, channelConfig: 1 });
    expect(Math.abs(adts.durationSeconds - 2.5)).toBeLessThan(0.05);
    const { format } = await parseBuffer(result.bytes, { mimeType: "audio/aac" });
    expect(format.codec).toBe("AAC");
  });

  it("encodes AAC with the native encoder when the source codec is unknown", async () => {
    const result = await extract(clip, "clip.mp4", "aac");
    expect(result.log).toMatch(/-> #0:0 \(aac \(native\) -> aac \(native\)\)/);
    const adts = parseAdts(result.bytes);
    expect(adts).toMatchObject({ profile: 2, sampleRate: 44100, channelConfig: 1 });
    expect(Math.abs(adts.durationSeconds - 2.5)).toBeLessThan(0.05);
  });
});

describe("runFfmpegWasm: other containers", () => {
  it.each([
    ["clip.webm", 2],
    ["clip.mkv", 2],
    ["clip.avi", 2],
    ["tone.flac", 2],
  ])("extracts a WAV from %s", async (name, seconds) => {
    const result = await extract(await fixture(name), name, "wav");
    const wav = parseWav(result.bytes);
    expect(Math.abs(wav.durationSeconds - seconds)).toBeLessThan(0.06);
    expect(toneFrequency(wav.samples, wav.channels, wav.sampleRate)).toBeCloseTo(440, -1);
  });
});

describe("runFfmpegWasm: failures", () => {
  it("reports corrupt input as FfmpegError with ffmpeg's reason", async () => {
    const corrupt = (await fixture("clip.mp4")).slice();
    corrupt.fill(0x5a, 0, 4096);
    const error = await extract(corrupt, "clip.mp4", "mp3").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FfmpegError);
    const ffmpegError = error as FfmpegError;
    expect(ffmpegError.reason).toBe("exit-code");
    expect(ffmpegError.exitCode).not.toBe(0);
    expect(ffmpegError.message).toMatch(/^ffmpeg exited with code \d+: /);
    expect(ffmpegError.message).toContain("input.mp4: Invalid data found when processing input");
    expect(ffmpegError.peakWasmBytes).toBeGreaterThan(0);
  });

  it("says the input is damaged when its headers are whole but its audio and video data are not, without x264's settings", async () => {
    const damaged = (await fixture("clip.mp4")).slice();
    const mdat = new TextDecoder("latin1").decode(damaged).indexOf("mdat");
    expect(mdat).toBeGreaterThan(0);
    // Deterministic bytes over the media data, 2,000 bytes in: the index still describes the samples.
    let state = 1;
    for (let i = mdat + 2000; i < damaged.length; i++) damaged[i] = (state = (state * 1103515245 + 12345) >>> 0) >>> 24;
    const error = await runFfmpegWasm({
      args: [
        "-hide_banner",
        "-y",
        "-i",
        "in.mp4",
        "-map",
        "0:V:0",
        "-map",
        "0:a:0?",
        "-c:v",
        "libx264",
        "-preset",
        "veryfast",
        "-c:a",
        "aac",
        "out.mp4",
      ],
      inputs: { "in.mp4": damaged },
      outputs: ["out.mp4"],
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FfmpegError);
    expect((error as FfmpegError).message).toMatch(
      /^the input file looks damaged: its audio or video data could not be decoded \(\[(h264|aac)\] /,
    );
    expect((error as FfmpegError).message).not.toMatch(/cabac|264 - core|Qavg/);
  });

  it("reports an expected output that ffmpeg did not write", async () => {
    const error = await runFfmpegWasm({
      args: ["-hide_banner", "-i", "in.wav", "-c:a", "pcm_s16le", "other.wav"],
      inputs: { "in.wav": await fixture("tone.wav") },
      outputs: ["out.wav"],
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FfmpegError);
    expect(error).toMatchObject({
      reason: "missing-output",
      exitCode: 0,
      message: expect.stringMatching(/^ffmpeg produced no out.wav/),
    });
  });

  it("reads an input with an upload container's demuxer only: an MP3 hiding HLS after a long ID3 tag never opens the file it names", async () => {
    const frames = (await extract(await fixture("clip.mp4"), "clip.mp4", "mp3")).bytes;
    // An ID3 tag longer than the upload's sniff window, then what ffmpeg would read as a playlist.
    const tag = new Uint8Array(5000);
    const header = new Uint8Array([
      0x49,
      0x44,
      0x33,
      3,
      0,
      0,
      ...[21, 14, 7, 0].map((shift) => (tag.length >> shift) & 0x7f),
    ]);
    const playlist = new TextEncoder().encode(
      `#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:2.0,\nfile:/job/other.flac\n#EXT-X-ENDLIST\n${"\n".repeat(16)}`,
    );
    const concat = (...parts: Uint8Array[]) => {
      const out = new Uint8Array(parts.reduce((n, part) => n + part.length, 0));
      parts.reduce((at, part) => (out.set(part, at), at + part.length), 0);
      return out;
    };
    const other = await fixture("tone.flac");
    const run = (input: Uint8Array) =>
      runFfmpegWasm({
        args: ["-hide_banner", "-i", "in.mp3", "-c:a", "pcm_s16le", "out.wav"],
        inputs: { "in.mp3": input, "other.flac": other.slice() },
        outputs: ["out.wav"],
      });
    const refused = await run(concat(header, tag, playlist, frames)).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(FfmpegError);
    expect((refused as FfmpegError).message).toMatch(/not on whitelist/);
    // The same long tag before the MP3 alone: read as the MP3 it is.
    const wav = parseWav((await run(concat(header, tag, frames))).outputs["out.wav"]!);
    expect(Math.abs(wav.durationSeconds - 2.5)).toBeLessThan(0.1);
  });

  it("refuses file names that would leave the working directory", async () => {
    await expect(runFfmpegWasm({ args: [], inputs: { "../in.wav": new Uint8Array(1) }, outputs: [] })).rejects.toThrow(
      /plain file name/,
    );
    await expect(runFfmpegWasm({ args: [], inputs: {}, outputs: ["/dev/null"] })).rejects.toThrow(/plain file name/);
  });
});
