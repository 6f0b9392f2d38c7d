import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type MediaKind, probeR2Object, UnsupportedMediaError } from "../../src/media/probe";
import { recordingBucket, totalBytes, virtualBucket } from "./buckets";
import { headersOnlyPng } from "../helpers/images";

interface FfprobeReport {
  format: { duration?: string };
  streams: {
    codec_type: string;
    codec_name: string;
    width?: number;
    height?: number;
    avg_frame_rate?: string;
    channels?: number;
    side_data_list?: { side_data_type?: string; rotation?: number }[];
    profile?: string;
  }[];
}

async function download(path: string): Promise<Uint8Array> {
  const response = await fetch(`${env.FIXTURE_BASE_URL}/${path}`);
  if (!response.ok) throw new Error(`fixture ${path}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

async function ffprobeReport(name: string): Promise<FfprobeReport> {
  return JSON.parse(new TextDecoder().decode(await download(`${name}.ffprobe.json`))) as FfprobeReport;
}

/** Stores the bytes in the MEDIA bucket and probes them through a bucket that records every read. */
async function probeBytes(bytes: Uint8Array, key: string) {
  await env.MEDIA.put(key, bytes);
  const { bucket, reads } = recordingBucket(env.MEDIA);
  const result = await probeR2Object(bucket, key, bytes.byteLength);
  return { result, reads };
}

interface Case {
  name: string;
  kind: MediaKind;
  container: string;
  mimeType: string;
  /** Only where ffprobe's format duration is an estimate rather than what the file holds. */
  durationMs?: number;
}

const cases: Case[] = [
  { name: "clip.mp4", kind: "video", container: "mp4", mimeType: "video/mp4" },
  { name: "clip-rotated.mp4", kind: "video", container: "mp4", mimeType: "video/mp4" },
  { name: "clip-10bit.mp4", kind: "video", container: "mp4", mimeType: "video/mp4" },
  { name: "clip-moov-end.mov", kind: "video", container: "mov", mimeType: "video/quicktime" },
  { name: "clip.webm", kind: "video", container: "webm", mimeType: "video/webm" },
  { name: "clip.mkv", kind: "video", container: "mkv", mimeType: "video/matroska" },
  { name: "clip.avi", kind: "video", container: "avi", mimeType: "video/x-msvideo" },
  { name: "tone-audio-only.mp4", kind: "audio", container: "mp4", mimeType: "audio/mp4" },
  { name: "tone-audio-only.webm", kind: "audio", container: "webm", mimeType: "audio/webm" },
  { name: "tone.mp3", kind: "audio", container: "mp3", mimeType: "audio/mpeg" },
  { name: "long-61s.mp3", kind: "audio", container: "mp3", mimeType: "audio/mpeg" },
  // ffprobe estimates 2.884 s from the first frame's bitrate; counting the frames gives the 3.03 s
  // the file holds (116 frames of 1152 samples at 44.1 kHz, like the CBR tone.mp3).
  { name: "tone-vbr-noxing.mp3", kind: "audio", container: "mp3", mimeType: "audio/mpeg", durationMs: 3030 },
  { name: "tone.wav", kind: "audio", container: "wav", mimeType: "audio/wav" },
  { name: "tone-s24.wav", kind: "audio", container: "wav", mimeType: "audio/wav" },
  { name: "tone-f32-6ch.wav", kind: "audio", container: "wav", mimeType: "audio/wav" },
  { name: "tone.m4a", kind: "audio", container: "m4a", mimeType: "audio/mp4" },
  { name: "tone.aac", kind: "audio", container: "aac", mimeType: "audio/aac" },
  { name: "tone.ogg", kind: "audio", container: "ogg", mimeType: "audio/ogg" },
  { name: "tone.flac", kind: "audio", container: "flac", mimeType: "audio/flac" },
  { name: "surround.m4a", kind: "audio", container: "m4a", mimeType: "audio/mp4" },
  { name: "logo.png", kind: "image", container: "png", mimeType: "image/png" },
  { name: "logo.jpg", kind: "image", container: "jpeg", mimeType: "image/jpeg" },
  { name: "logo.webp", kind: "image", container: "webp", mimeType: "image/webp" },
  { name: "banner.jpg", kind: "image", container: "jpeg", mimeType: "image/jpeg" },
  { name: "banner-lossless.webp", kind: "image", container: "webp", mimeType: "image/webp" },
  { name: "banner-alpha.webp", kind: "image", container: "webp", mimeType: "image/webp" },
];

describe("probeR2Object", () => {
  it.each(cases)("probes $name", async ({ name, kind, container, mimeType, durationMs }) => {
    const [bytes, reference] = await Promise.all([download(name), ffprobeReport(name)]);
    const { result, reads } = await probeBytes(bytes, `probe/${name}`);

    expect(result).toMatchObject({ kind, container, mimeType });
    expect(reads.length).toBeGreaterThan(0);
    if (kind === "image") {
      const picture = reference.streams[0]!;
      expect(result).toMatchObject({
        durationMs: 0,
        hasAudio: false,
        hasVideo: false,
        width: picture.width,
        height: picture.height,
      });
      return;
    }
    expect(Number.isInteger(result.durationMs)).toBe(true);
    const expectedMs = durationMs ?? Number(reference.format.duration) * 1000;
    expect(Math.abs(result.durationMs - expectedMs)).toBeLessThanOrEqual(50);

    const video = reference.streams.find((stream) => stream.codec_type === "video");
    const audio = reference.streams.find((stream) => stream.codec_type === "audio");
    expect(result.hasVideo).toBe(video !== undefined);
    expect(result.hasAudio).toBe(audio !== undefined);
    expect(result.videoCodec).toBe(video?.codec_name);
    expect(result.audioCodec).toBe(audio?.codec_name);
    // The picture as shown: a quarter turn (ffprobe's counter-clockwise degrees) swaps the stored size.
    const turn = video?.side_data_list?.find((data) => data.side_data_type === "Display Matrix")?.rotation ?? 0;
    const quarterTurned = Math.abs(turn) % 180 === 90;
    expect(result.width).toBe(quarterTurned ? video?.height : video?.width);
    expect(result.height).toBe(quarterTurned ? video?.width : video?.height);
    expect(result.rotation).toBe(turn === 0 ? undefined : ((-turn % 360) + 360) % 360);
    // H.264's profile from the avcC, as ffprobe names it (High, High 10...).
    const profiles: Record<string, number> = {
      "Constrained Baseline": 66,
      Baseline: 66,
      Main: 77,
      High: 100,
      "High 10": 110,
      "High 4:2:2": 122,
      "High 4:4:4 Predictive": 244,
    };
    if (video?.codec_name === "h264" && container !== "mkv" && container !== "avi")
      expect(result.h264Profile, name).toBe(profiles[video.profile!]);
    // The channel count, where the container's headers state it (AVI's and raw ADTS's reader do not).
    if (audio && !["clip.avi", "tone.aac"].includes(name)) expect(result.audioChannels).toBe(audio.channels);
    if (video) {
      // Every video fixture is 25 fps; test/media/frame-rate.test.ts covers 30 and 29.97.
      const [num, den] = video.avg_frame_rate!.split("/").map(Number);
      expect(result.frameRate).toBeCloseTo(num! / den!, 3);
    } else {
      expect(result.frameRate).toBeUndefined();
    }
  });

  it("reads only the head, the tail and the moov of a file whose moov is at the end", async () => {
    const bytes = await download("clip-moov-end.mov");
    const { result, reads } = await probeBytes(bytes, "probe/moov-end.mov");

    expect(result.durationMs).toBe(3000);
    expect(reads.length).toBeLessThanOrEqual(4);
    expect(totalBytes(reads)).toBeLessThan(16 * 1024);
    expect(totalBytes(reads)).toBeLessThan(bytes.byteLength / 10);
  });

  it("probes a 5 GB MOV with a 64-bit mdat and the moov at the end by reading a few KB", async () => {
    const { ftyp, moov } = topLevelBoxes(await download("clip-moov-end.mov"));
    const size = 5_000_000_000;
    const mdatHeader = new Uint8Array(16);
    const header = new DataView(mdatHeader.buffer);
    header.setUint32(0, 1);
    mdatHeader.set(new TextEncoder().encode("mdat"), 4);
    header.setBigUint64(8, BigInt(size - ftyp.length - moov.length));
    const { bucket, reads } = virtualBucket(
      size,
      composite(size, [
        { start: 0, bytes: ftyp },
        { start: ftyp.length, bytes: mdatHeader },
        { start: size - moov.length, bytes: moov },
      ]),
    );

    const result = await probeR2Object(bucket, "huge.mov", size);

    expect(result).toMatchObject({
      kind: "video",
      container: "mov",
      durationMs: 3000,
      videoCodec: "h264",
      audioCodec: "aac",
    });
    expect(totalBytes(reads)).toBeLessThan(16 * 1024);
  });

  it("stops an ADTS frame scan at the read limit instead of reading a long file", async () => {
    const frames = await download("tone.aac");
    const size = 40 * 1024 * 1024;
    // Repeating a whole ADTS file yields a valid, longer ADTS stream.
    const { bucket, reads } = virtualBucket(size, (offset, length) => {
      const out = new Uint8Array(length);
      for (let i = 0; i < length; i++) out[i] = frames[(offset + i) % frames.length];
      return out;
    });

    await expect(probeR2Object(bucket, "long.aac", size)).rejects.toThrow(/cannot be probed cheaply/);
    expect(totalBytes(reads)).toBeLessThanOrEqual(16 * 1024 * 1024);
  });

  it("reports a missing object as a storage error, not as unsupported media", async () => {
    const probe = probeR2Object(env.MEDIA, "probe/missing", 1234);
    await expect(probe).rejects.toThrow(/disappeared/);
    await expect(probe).rejects.not.toBeInstanceOf(UnsupportedMediaError);
  });

  describe("refuses", () => {
    const refuses = async (bytes: Uint8Array, key: string, message: RegExp) => {
      const probe = probeBytes(bytes, key);
      await expect(probe).rejects.toBeInstanceOf(UnsupportedMediaError);
      await expect(probe).rejects.toThrow(message);
    };

    it("a text file", async () => {
      await refuses(await download("text.txt"), "probe/text.txt", /not a recognised audio, video or image file/);
    });

    it("a truncated MP4 (the first 30% of clip.mp4)", async () => {
      const bytes = await download("clip.mp4");
      await refuses(bytes.slice(0, Math.floor(bytes.byteLength * 0.3)), "probe/truncated.mp4", /truncated/);
    });

    it("an MP4 whose moov at the end was cut off", async () => {
      const bytes = await download("clip-moov-end.mov");
      await refuses(bytes.slice(0, Math.floor(bytes.byteLength * 0.5)), "probe/cut.mov", /truncated|no movie header/);
    });

    it("a truncated WebM", async () => {
      const bytes = await download("clip.webm");
      await refuses(bytes.slice(0, Math.floor(bytes.byteLength * 0.5)), "probe/truncated.webm", /truncated/);
    });

    it("a truncated AVI", async () => {
      const bytes = await download("clip.avi");
      await refuses(bytes.slice(0, Math.floor(bytes.byteLength * 0.5)), "probe/truncated.avi", /truncated/);
    });

    it.each([
      ["logo.png", "png"],
      ["logo.jpg", "jpg"],
      ["logo.webp", "webp"],
    ])("a truncated image (%s cut in half)", async (name, extension) => {
      const bytes = await download(name);
      await refuses(
        bytes.slice(0, bytes.byteLength >> 1),
        `probe/truncated.${extension}`,
        /image is truncated or corrupt/,
      );
    });

    it.each([
      [60_000, 60_000, /60000x60000 pixels: images may be at most 16384 pixels a side and 50 megapixels/],
      [20_000, 100, /20000x100 pixels/],
      [8_000, 8_000, /8000x8000 pixels/],
    ])("a PNG declaring a picture too large to decode (%ix%i)", async (width, height, message) => {
      await refuses(headersOnlyPng(width, height), "probe/huge.png", message);
    });

    it("random bytes", async () => {
      await refuses(pseudoRandomBytes(64 * 1024, 42), "probe/random.bin", /not a recognised/);
    });

    it("an empty file", async () => {
      await expect(probeR2Object(env.MEDIA, "probe/empty", 0)).rejects.toThrow(UnsupportedMediaError);
    });
  });
});

/** The ftyp and moov boxes of a small MP4 (32-bit box sizes). */
function topLevelBoxes(file: Uint8Array): Record<string, Uint8Array> {
  const boxes: Record<string, Uint8Array> = {};
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  for (let position = 0; position + 8 <= file.length; ) {
    const size = view.getUint32(position);
    boxes[new TextDecoder().decode(file.subarray(position + 4, position + 8))] = file.subarray(
      position,
      position + size,
    );
    position += size;
  }
  return boxes;
}

/** Bytes of a virtual object made of pieces at fixed offsets, zeros elsewhere. */
function composite(size: number, pieces: { start: number; bytes: Uint8Array }[]) {
  return (offset: number, length: number): Uint8Array => {
    const out = new Uint8Array(Math.min(length, size - offset));
    for (const { start, bytes } of pieces) {
      const from = Math.max(start, offset);
      const to = Math.min(start + bytes.length, offset + out.length);
      if (from < to) out.set(bytes.subarray(from - start, to - start), from - offset);
    }
    return out;
  };
}

/** Deterministic noise (xorshift32), so a stray magic number cannot make the test flaky. */
function pseudoRandomBytes(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length);
  let state = seed;
  for (let i = 0; i < length; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    out[i] = state & 0xff;
  }
  return out;
}
