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
  /** H.264 profile_idc of the first video track (its avcC), when it is H.264. */
  h264Profile?: number;
  /** Clockwise quarter turns players apply to the first video track (its tkhd matrix): 90, 180 or 270; absent for none. */
  rotation?: Rotation;
  /** Channels of the first audio track: AAC's decoder configuration when present, else the sample entry's count. */
  audioChannels?: number;
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
    if (box.type !== "trak") continue;
    const track = await readTrack(source, box, label);
    if (track?.handler === "vide" && video === undefined) {
      video = await readVideoTrack(source, track, label);
      const rotation = await readRotation(source, box, label);
      if (rotation !== undefined) video.rotation = rotation;
    }
    if (track?.handler === "soun" && header.audioChannels === undefined)
      header.audioChannels = await readAudioChannels(source, track, label);
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
async function readBox(
  source: IRandomAccessTokenizer,
  start: number,
  end: number,
  label: string,
  tolerateJunk = false,
): Promise<Box> {
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

type VideoTrack = Pick<MovieHeader, "width" | "height" | "frameRate" | "rotation" | "h264Profile">;

export type Rotation = 90 | 180 | 270;

/**
 * The rotation a phone recording asks for in its track header's matrix (ISO 14496-12 8.3.2):
 * [a b u / c d v / x y w] with a, b, c, d in 16.16 fixed point. Only whole quarter turns count,
 * as for ffmpeg's autorotate; a mirrored or skewed matrix is left alone.
 */
async function readRotation(source: IRandomAccessTokenizer, trak: Box, label: string): Promise<Rotation | undefined> {
  const tkhd = await child(source, trak, "tkhd", label);
  if (!tkhd) return undefined;
  const bytes = await payload(source, tkhd, 88);
  const matrixAt = bytes[0] === 1 ? 52 : 40;
  if (bytes.length < matrixAt + 20) return undefined;
  const fixed = (at: number) => (u32be(bytes, at) | 0) / 65536;
  const [a, b, c, d] = [fixed(matrixAt), fixed(matrixAt + 4), fixed(matrixAt + 12), fixed(matrixAt + 16)];
  const quarterTurns = new Map<string, Rotation>([
    ["0,1,-1,0", 90],
    ["-1,0,0,-1", 180],
    ["0,-1,1,0", 270],
  ]);
  return quarterTurns.get(
    [a, b, c, d]
      .map((v) => Math.round(v))
      .join(",")
      .replaceAll("-0", "0"),
  );
}

interface Track {
  /** The media handler: "vide", "soun", ... */
  handler: string;
  mdia: Box;
  stbl?: Box;
}

async function readTrack(source: IRandomAccessTokenizer, trak: Box, label: string): Promise<Track | undefined> {
  const mdia = await child(source, trak, "mdia", label);
  const hdlr = mdia && (await child(source, mdia, "hdlr", label));
  if (!mdia || !hdlr) return undefined;
  const minf = await child(source, mdia, "minf", label);
  const stbl = minf && (await child(source, minf, "stbl", label));
  return { handler: fourCC(await payload(source, hdlr, 12), 8), mdia, stbl };
}

/**
 * Size and frame rate of a video track. music-metadata reports the size of video tracks only
 * when it recognises their handler, which it does not for QuickTime files (the data handler
 * 'hdlr' in 'minf' overrides the media handler), and never their rate.
 */
async function readVideoTrack(
  source: IRandomAccessTokenizer,
  { mdia, stbl }: Track,
  label: string,
): Promise<VideoTrack> {
  const track: VideoTrack = {};
  const mdhd = await child(source, mdia, "mdhd", label);
  const stsd = stbl && (await child(source, stbl, "stsd", label));
  const stts = stbl && (await child(source, stbl, "stts", label));
  if (mdhd && stts) {
    // The whole moov is in the tokenizer's cache: reading the sample-duration table costs no get.
    const frameRate = parseFrameRate(await payload(source, mdhd, 24), await payload(source, stts, stts.size));
    if (frameRate !== undefined) track.frameRate = frameRate;
  }
  if (!stsd) return track;
  // Full box header and entry count, then a VisualSampleEntry with width and height at bytes 32-35.
  const entry = await payload(source, stsd, 8 + MAX_VIDEO_ENTRY_BYTES);
  if (entry.length < 8 + 36) return track;
  const width = u16be(entry, 8 + 32);
  const height = u16be(entry, 8 + 34);
  // An H.264 entry's avcC: configurationVersion, then AVCProfileIndication.
  const avcC =
    fourCC(entry, 12) === "avc1" || fourCC(entry, 12) === "avc3" ? findBytes(entry.subarray(8 + 86), "avcC") : -1;
  if (avcC >= 0 && entry.length > 8 + 86 + avcC + 5) track.h264Profile = entry[8 + 86 + avcC + 5]!;
  return width > 0 && height > 0 ? { ...track, width, height } : track;
}

/** Bounds the video sample entry searched for its 'avcC' box (it follows the 86-byte entry fields). */
const MAX_VIDEO_ENTRY_BYTES = 512;

/** Bounds the sample entry searched for an 'esds' box (QuickTime nests it in a 'wave' box). */
const MAX_SOUND_ENTRY_BYTES = 4096;

/**
 * The first audio track's channel count. MP4 writers leave the sample entry's count at its
 * template value 2 for AAC, so the AudioSpecificConfig in 'esds' is read first, as ffprobe does.
 */
async function readAudioChannels(
  source: IRandomAccessTokenizer,
  { stbl }: Track,
  label: string,
): Promise<number | undefined> {
  const stsd = stbl && (await child(source, stbl, "stsd", label));
  if (!stsd) return undefined;
  const table = await payload(source, stsd, 8 + MAX_SOUND_ENTRY_BYTES);
  if (table.length < 8 + 26) return undefined;
  const entry = table.subarray(8, 8 + Math.min(u32be(table, 8), table.length - 8));
  const esds = findBytes(entry, "esds");
  const fromConfig = esds < 0 ? undefined : aacChannels(entry.subarray(esds + 4));
  if (fromConfig !== undefined) return fromConfig;
  // SoundDescription version 2 moves the count elsewhere; versions 0 and 1 hold it at byte 24.
  const version = u16be(entry, 16);
  const count = u16be(entry, 24);
  return version < 2 && count > 0 ? count : undefined;
}

function findBytes(bytes: Uint8Array, text: string): number {
  outer: for (let i = 0; i + text.length <= bytes.length; i++) {
    for (let j = 0; j < text.length; j++) if (bytes[i + j] !== text.charCodeAt(j)) continue outer;
    return i;
  }
  return -1;
}

/**
 * Channels from an 'esds' payload: ES_Descriptor, DecoderConfigDescriptor, then the
 * AudioSpecificConfig's channelConfiguration (ISO 14496-1 and 14496-3). Undefined when the
 * configuration is absent or defers to a program config element (0).
 */
function aacChannels(esds: Uint8Array): number | undefined {
  let at = 4; // version and flags
  const descriptor = (): { tag: number; end: number } | undefined => {
    if (at >= esds.length) return undefined;
    const tag = esds[at++];
    let size = 0;
    for (let k = 0; k < 4 && at < esds.length; k++) {
      const byte = esds[at++];
      size = (size << 7) | (byte & 0x7f);
      if (!(byte & 0x80)) break;
    }
    return { tag, end: at + size };
  };
  const es = descriptor();
  if (es?.tag !== 0x03) return undefined;
  const flags = esds[at + 2];
  at += 3;
  if (flags & 0x80) at += 2; // dependsOn_ES_ID
  if (flags & 0x40) at += 1 + (esds[at] ?? 0); // URL
  if (flags & 0x20) at += 2; // OCR_ES_Id
  const config = descriptor();
  if (config?.tag !== 0x04) return undefined;
  at += 13; // object type, stream type, buffer size, max and average bitrate
  const specific = descriptor();
  if (specific?.tag !== 0x05 || specific.end > esds.length) return undefined;
  const bits = new BitReader(esds.subarray(at, specific.end));
  if (bits.read(5) === 31) bits.read(6); // escaped audio object type
  if (bits.read(4) === 15) bits.read(24); // explicit sampling frequency
  const channelConfiguration = bits.read(4);
  if (channelConfiguration === undefined || channelConfiguration === 0) return undefined;
  return channelConfiguration === 7 ? 8 : channelConfiguration <= 6 ? channelConfiguration : undefined;
}

class BitReader {
  private position = 0;
  constructor(private readonly bytes: Uint8Array) {}

  /** The next `count` bits, most significant first; undefined past the end. */
  read(count: number): number | undefined {
    let value = 0;
    for (let i = 0; i < count; i++, this.position++) {
      const byte = this.bytes[this.position >> 3];
      if (byte === undefined) return undefined;
      value = value * 2 + ((byte >> (7 - (this.position & 7))) & 1);
    }
    return value;
  }
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

async function child(
  source: IRandomAccessTokenizer,
  parent: Box,
  type: string,
  label: string,
): Promise<Box | undefined> {
  for await (const box of children(source, parent, label)) {
    if (box.type === type) return box;
  }
  return undefined;
}

function payload(source: IRandomAccessTokenizer, box: Box, length: number): Promise<Uint8Array> {
  return readAt(source, box.start + box.headerLength, Math.min(length, box.size - box.headerLength));
}
