import type { IRandomAccessTokenizer } from "strtok3";
import { fourCC, i32le, readAt, u16le, u32le } from "../bytes";
import { codecFromAviFourCC, codecFromWaveFormatTag, waveFormatTag } from "../codecs";
import { type StreamSummary, UnsupportedMediaError } from "../types";

/** The header list is a few KB (OpenDML files reserve index space in it); more is not an AVI we accept. */
const MAX_HEADER_LIST_BYTES = 1 << 20;
/** Chunks that may precede LIST 'hdrl' (JUNK padding, mostly). */
const MAX_CHUNKS_BEFORE_HEADER = 8;

interface Chunk {
  id: string;
  /** For LIST and RIFF chunks. */
  listType?: string;
  body: Uint8Array;
}

interface AviHeader {
  microSecPerFrame: number;
  /** Frames of the whole file (OpenDML dmlh when present). */
  totalFrames: number;
  width?: number;
  height?: number;
  streams: AviStream[];
}

interface AviStream {
  type: string;
  scale: number;
  rate: number;
  length: number;
  format: Uint8Array;
}

/**
 * music-metadata has no AVI parser. Everything needed is in RIFF 'AVI ' -> LIST 'hdrl': the main
 * header 'avih' and one LIST 'strl' per stream with its header 'strh' (type, time base, length)
 * and format 'strf' (BITMAPINFOHEADER or WAVEFORMATEX).
 */
export async function readAvi(source: IRandomAccessTokenizer, label: string): Promise<StreamSummary> {
  const size = source.fileInfo.size;
  const riffSize = u32le(await readAt(source, 0, 12), 4);
  if (riffSize + 8 > size) {
    throw new UnsupportedMediaError(
      `The ${label} file is truncated: it needs ${riffSize + 8} bytes but has only ${size}.`,
    );
  }
  const header = parseHeaderList(await readHeaderList(source, label));
  const video = header.streams.find((stream) => stream.type === "vids");
  const audio = header.streams.find((stream) => stream.type === "auds");
  return {
    durationSeconds: duration(header),
    hasVideo: video !== undefined,
    hasAudio: audio !== undefined,
    videoCodec: video && video.format.length >= 20 ? codecFromAviFourCC(fourCC(video.format, 16)) : undefined,
    audioCodec:
      audio && audio.format.length >= 16
        ? codecFromWaveFormatTag(waveFormatTag(audio.format), u16le(audio.format, 14))
        : undefined,
    width: video && video.format.length >= 12 ? Math.abs(i32le(video.format, 4)) : header.width,
    height: video && video.format.length >= 12 ? Math.abs(i32le(video.format, 8)) : header.height,
    frameRate: video && frameRate(video, header),
  };
}

/** The video stream's rate / scale (frames per second, what ffprobe reports); avih's frame period when strh lacks them. */
function frameRate(video: AviStream, header: AviHeader): number | undefined {
  if (video.scale > 0 && video.rate > 0) return video.rate / video.scale;
  return header.microSecPerFrame > 0 ? 1e6 / header.microSecPerFrame : undefined;
}

async function readHeaderList(source: IRandomAccessTokenizer, label: string): Promise<Uint8Array> {
  let position = 12;
  for (let count = 0; count < MAX_CHUNKS_BEFORE_HEADER && position + 12 <= source.fileInfo.size; count++) {
    const chunk = await readAt(source, position, 12);
    const chunkSize = u32le(chunk, 4);
    if (fourCC(chunk, 0) === "LIST" && fourCC(chunk, 8) === "hdrl") {
      if (chunkSize < 4 || chunkSize > MAX_HEADER_LIST_BYTES) break;
      const body = await readAt(source, position + 12, chunkSize - 4);
      if (body.length < chunkSize - 4) break;
      return body;
    }
    position += 8 + chunkSize + (chunkSize & 1);
  }
  throw new UnsupportedMediaError(`The ${label} file is corrupt: its header list ('hdrl') is missing or damaged.`);
}

function parseHeaderList(hdrl: Uint8Array): AviHeader {
  const header: AviHeader = { microSecPerFrame: 0, totalFrames: 0, streams: [] };
  for (const chunk of chunks(hdrl)) {
    if (chunk.id === "avih" && chunk.body.length >= 40) {
      header.microSecPerFrame = u32le(chunk.body, 0);
      header.totalFrames = u32le(chunk.body, 16);
      header.width = u32le(chunk.body, 32) || undefined;
      header.height = u32le(chunk.body, 36) || undefined;
    } else if (chunk.listType === "strl") {
      const stream = parseStreamList(chunk.body);
      if (stream) header.streams.push(stream);
    } else if (chunk.listType === "odml") {
      // OpenDML (files over 1 GB): avih counts only the frames of the first RIFF, dmlh all of them.
      const dmlh = [...chunks(chunk.body)].find((child) => child.id === "dmlh");
      if (dmlh && dmlh.body.length >= 4) header.totalFrames = Math.max(header.totalFrames, u32le(dmlh.body, 0));
    }
  }
  return header;
}

function parseStreamList(strl: Uint8Array): AviStream | undefined {
  const children = [...chunks(strl)];
  const strh = children.find((child) => child.id === "strh")?.body;
  const strf = children.find((child) => child.id === "strf")?.body;
  if (!strh || strh.length < 36) return undefined;
  return {
    type: fourCC(strh, 0),
    scale: u32le(strh, 20),
    rate: u32le(strh, 24),
    length: u32le(strh, 32),
    format: strf ?? new Uint8Array(),
  };
}

/** Like ffprobe: the longest stream, each from its strh length and time base; avih when streams lack them. */
function duration(header: AviHeader): number | undefined {
  const streamDurations = header.streams
    .filter((stream) => stream.scale > 0 && stream.rate > 0)
    .map((stream) => {
      const frames = stream.type === "vids" ? Math.max(stream.length, header.totalFrames) : stream.length;
      return (frames * stream.scale) / stream.rate;
    });
  const longest = Math.max(0, ...streamDurations);
  if (longest > 0) return longest;
  return header.totalFrames > 0 && header.microSecPerFrame > 0
    ? (header.totalFrames * header.microSecPerFrame) / 1e6
    : undefined;
}

/** RIFF chunks of a buffer; bodies are padded to an even length. */
function* chunks(bytes: Uint8Array): Generator<Chunk> {
  let position = 0;
  while (position + 8 <= bytes.length) {
    const id = fourCC(bytes, position);
    const size = u32le(bytes, position + 4);
    const body = bytes.subarray(position + 8, Math.min(bytes.length, position + 8 + size));
    yield id === "LIST" && body.length >= 4 ? { id, listType: fourCC(body, 0), body: body.subarray(4) } : { id, body };
    position += 8 + size + (size & 1);
  }
}
