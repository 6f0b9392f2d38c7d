import type { IRandomAccessTokenizer } from "strtok3";
import { fourCC, readAt, u16be, u32be, u64be } from "../bytes";
import { UnsupportedMediaError } from "../types";

interface Box {
  type: string;
  start: number;
  headerLength: number;
  size: number;
}

/** Bounds the boxes listed per container box; real files have a few dozen at most. */
const MAX_CHILD_BOXES = 512;

export interface MovieHeader {
  /** Presentation duration from mvhd; undefined when unset (fragmented files leave it 0). */
  durationSeconds?: number;
  /** Coded size of the first video track, from its sample description (what ffprobe reports). */
  width?: number;
  height?: number;
  /** Frames per second of the first video track, from its media time scale and sample durations. */
  frameRate?: number;
}

/** Reads the movie header of an MP4/MOV, after checking that its top-level boxes are complete. */
export async function readMovieHeader(source: IRandomAccessTokenizer, label: string): Promise<MovieHeader> {
  const moov = await findMoov(source, label);
  // One get for the whole movie box, sample tables included, rather than one per child box as the
  // parsers walk it; everything after this is served from the tokenizer's cache.
  await readAt(source, moov.start, moov.size);
  const header: MovieHeader = {};
  let video: VideoTrack | undefined;
  for await (const box of children(source, moov, label)) {
    if (box.type === "mvhd") header.durationSeconds = parseMvhd(await payload(source, box, 32));
    if (box.type === "trak" && video === undefined) video = await readVideoTrack(source, box, label);
  }
  return { ...header, ...video };
}

/**
 * Walks the top-level boxes: this reads one small header per box (music-metadata reads the same
 * ones, from the tokenizer's cache) and catches truncated uploads, whose media data box claims
 * more bytes than the file has, although a faststart moov at the front would still parse.
 */
async function findMoov(source: IRandomAccessTokenizer, label: string): Promise<Box> {
  const size = source.fileInfo.size;
  let moov: Box | undefined;
  let position = 0;
  while (size - position >= 8) {
    const box = await readBox(source, position, size, label, moov !== undefined);
    if (box.type === "") break;
    if (box.type === "moov") moov = box;
    position += box.size;
  }
  if (!moov) {
    throw new UnsupportedMediaError(
      `The ${label} file has no movie header ('moov' box): it is incomplete, for example a recording that was never finalised, or truncated.`,
    );
  }
  return moov;
}

/** Returns type "" for trailing junk after the movie header, which players ignore too. */
async function readBox(source: IRandomAccessTokenizer, start: number, end: number, label: string, tolerateJunk = false): Promise<Box> {
  const header = await readAt(source, start, Math.min(16, end - start));
  const type = fourCC(header, 4);
  const size32 = u32be(header, 0);
  const headerLength = size32 === 1 ? 16 : 8;
  const size = header.length < headerLength ? 0 : size32 === 1 ? u64be(header, 8) : size32 === 0 ? end - start : size32;
  if (!/^[\x20-\x7e]{4}$/.test(type) || size < headerLength) {
    if (tolerateJunk) return { type: "", start, headerLength, size: end - start };
    throw new UnsupportedMediaError(`The ${label} file is corrupt: no valid box at byte ${start}.`);
  }
  if (start + size > end) {
    throw new UnsupportedMediaError(
      `The ${label} file is truncated or corrupt: its '${type}' box at byte ${start} needs ${size} bytes but only ${end - start} remain.`,
    );
  }
  return { type, start, headerLength, size };
}

function parseMvhd(payload: Uint8Array): number | undefined {
  if (payload.length < 32) return undefined;
  const version = payload[0];
  const timescale = version === 1 ? u32be(payload, 20) : u32be(payload, 12);
  const duration = version === 1 ? u64be(payload, 24) : u32be(payload, 16);
  const unset = duration === 0 || duration === 0xffffffff || duration >= Number.MAX_SAFE_INTEGER;
  return timescale > 0 && !unset ? duration / timescale : undefined;
}

type VideoTrack = Pick<MovieHeader, "width" | "height" | "frameRate">;

/**
 * Size and frame rate of a video track; undefined for other tracks. music-metadata reports the
 * size of video tracks only when it recognises their handler, which it does not for QuickTime
 * files (the data handler 'hdlr' in 'minf' overrides the media handler), and never their rate.
 */
async function readVideoTrack(source: IRandomAccessTokenizer, trak: Box, label: string): Promise<VideoTrack | undefined> {
  const mdia = await child(source, trak, "mdia", label);
  const hdlr = mdia && (await child(source, mdia, "hdlr", label));
  if (!mdia || !hdlr || fourCC(await payload(source, hdlr, 12), 8) !== "vide") return undefined;
  const track: VideoTrack = {};
  const mdhd = await child(source, mdia, "mdhd", label);
  const minf = await child(source, mdia, "minf", label);
  const stbl = minf && (await child(source, minf, "stbl", label));
  const stsd = stbl && (await child(source, stbl, "stsd", label));
  const stts = stbl && (await child(source, stbl, "stts", label));
  if (mdhd && stts) {
    // The whole moov is in the tokenizer's cache: reading the sample-duration table costs no get.
    const frameRate = parseFrameRate(await payload(source, mdhd, 24), await payload(source, stts, stts.size));
    if (frameRate !== undefined) track.frameRate = frameRate;
  }
  if (!stsd) return track;
  // Full box header and entry count, then a VisualSampleEntry with width and height at bytes 32-35.
  const entry = await payload(source, stsd, 8 + 36);
  if (entry.length < 8 + 36) return track;
  const width = u16be(entry, 8 + 32);
  const height = u16be(entry, 8 + 34);
  return width > 0 && height > 0 ? { ...track, width, height } : track;
}

/**
 * Frames per second from the media time scale (mdhd) and the sample durations (stts), as
 * ffprobe derives them: when every sample but possibly the last has one duration, the rate is
 * time scale / that duration (r_frame_rate); otherwise samples / total duration (avg_frame_rate).
 */
function parseFrameRate(mdhd: Uint8Array, stts: Uint8Array): number | undefined {
  const version1 = mdhd[0] === 1;
  if (mdhd.length < (version1 ? 24 : 16) || stts.length < 8) return undefined;
  const timescale = version1 ? u32be(mdhd, 20) : u32be(mdhd, 12);
  const entries = Math.min(u32be(stts, 4), Math.floor((stts.length - 8) / 8));
  if (timescale === 0 || entries === 0) return undefined;
  const count = (i: number) => u32be(stts, 8 + i * 8);
  const delta = (i: number) => u32be(stts, 12 + i * 8);
  if ((entries === 1 || (entries === 2 && count(1) === 1)) && delta(0) > 0) return timescale / delta(0);
  let samples = 0;
  let ticks = 0;
  for (let i = 0; i < entries; i++) {
    samples += count(i);
    ticks += count(i) * delta(i);
  }
  return samples > 0 && ticks > 0 ? (samples * timescale) / ticks : undefined;
}

async function* children(source: IRandomAccessTokenizer, parent: Box, label: string): AsyncGenerator<Box> {
  const end = parent.start + parent.size;
  let position = parent.start + parent.headerLength;
  for (let count = 0; position + 8 <= end && count < MAX_CHILD_BOXES; count++) {
    const box = await readBox(source, position, end, label);
    yield box;
    position += box.size;
  }
}

async function child(source: IRandomAccessTokenizer, parent: Box, type: string, label: string): Promise<Box | undefined> {
  for await (const box of children(source, parent, label)) {
    if (box.type === type) return box;
  }
  return undefined;
}

function payload(source: IRandomAccessTokenizer, box: Box, length: number): Promise<Uint8Array> {
  return readAt(source, box.start + box.headerLength, Math.min(length, box.size - box.headerLength));
}
