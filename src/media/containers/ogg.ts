import type { IRandomAccessTokenizer } from "strtok3";
import { fourCC, readAt, u16le, u32le } from "../bytes";
import { type StreamSummary, UnsupportedMediaError } from "../types";

const PAGE_HEADER_BYTES = 27;
/** Header, 255 lacing values of 255 bytes each. */
const MAX_PAGE_BYTES = PAGE_HEADER_BYTES + 255 + 255 * 255;
const FIRST_TAIL_WINDOW = 16 * 1024;

interface Page {
  serial: number;
  /** Absolute granule position; undefined when no packet ends on the page (-1). */
  granule: number | undefined;
  length: number;
  payloadStart: number;
}

interface OggCodec {
  codec: "opus" | "vorbis";
  sampleRate: number;
  /** Opus: samples at 48 kHz the decoder drops at the start; not part of the playback duration. */
  preSkip: number;
  channels: number;
}

/**
 * Reads the codec from the first page and the duration from the granule position of the last
 * page, as ffprobe does. music-metadata would instead read the file page by page up to its end to
 * reach that last page (or stop after 12 pages without a duration).
 */
export async function readOgg(source: IRandomAccessTokenizer, head: Uint8Array, label: string): Promise<StreamSummary> {
  const first = parsePage(head, 0);
  if (!first) throw new UnsupportedMediaError(`The ${label} file is corrupt: its first page is damaged.`);
  const codec = identifyCodec(head.subarray(first.payloadStart));
  if (!codec)
    throw new UnsupportedMediaError(`The Ogg file holds neither Opus nor Vorbis audio, which is not supported.`);
  const granule = await lastGranule(source, first.serial);
  if (granule === undefined) {
    throw new UnsupportedMediaError(
      `The duration of the ${label} file cannot be determined: no complete final page was found (truncated?).`,
    );
  }
  return {
    durationSeconds: (granule - codec.preSkip) / codec.sampleRate,
    hasAudio: true,
    hasVideo: false,
    audioCodec: codec.codec,
    audioChannels: codec.channels,
  };
}

function identifyCodec(packet: Uint8Array): OggCodec | undefined {
  const magic = String.fromCharCode(...packet.subarray(0, 8));
  // Channel count: OpusHead byte 9, the Vorbis identification header's byte 11.
  if (magic === "OpusHead" && packet.length >= 19)
    return { codec: "opus", sampleRate: 48_000, preSkip: u16le(packet, 10), channels: packet[9] };
  if (magic.startsWith("\x01vorbis") && packet.length >= 16)
    return { codec: "vorbis", sampleRate: u32le(packet, 12), preSkip: 0, channels: packet[11] };
  return undefined;
}

/** Searches the end of the file backwards for the last complete page of the stream. */
async function lastGranule(source: IRandomAccessTokenizer, serial: number): Promise<number | undefined> {
  const size = source.fileInfo.size;
  for (let window = Math.min(size, FIRST_TAIL_WINDOW); ; window = Math.min(size, window * 4)) {
    const tail = await readAt(source, size - window, window);
    for (let offset = tail.length - PAGE_HEADER_BYTES; offset >= 0; offset--) {
      const page = parsePage(tail, offset);
      if (page && page.serial === serial && page.granule !== undefined && offset + page.length <= tail.length)
        return page.granule;
    }
    if (window >= size || window > MAX_PAGE_BYTES) return undefined;
  }
}

function parsePage(bytes: Uint8Array, offset: number): Page | undefined {
  if (offset + PAGE_HEADER_BYTES > bytes.length || fourCC(bytes, offset) !== "OggS" || bytes[offset + 4] !== 0)
    return undefined;
  const segments = bytes[offset + 26];
  const payloadStart = offset + PAGE_HEADER_BYTES + segments;
  if (payloadStart > bytes.length) return undefined;
  let payloadLength = 0;
  for (let i = offset + PAGE_HEADER_BYTES; i < payloadStart; i++) payloadLength += bytes[i];
  const view = new DataView(bytes.buffer, bytes.byteOffset + offset);
  const granule = view.getBigInt64(6, true);
  return {
    serial: view.getUint32(14, true),
    granule: granule < 0n ? undefined : Number(granule),
    length: PAGE_HEADER_BYTES + segments + payloadLength,
    payloadStart,
  };
}
