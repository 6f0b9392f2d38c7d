import { tokenizer as rangeTokenizer } from "@tokenizer/range";
import type { IAudioMetadata } from "music-metadata";
import { createTokenizerView, type IRandomAccessTokenizer, type ITokenizer } from "strtok3";
import { readAt } from "./bytes";
import { readAvi } from "./containers/avi";
import { readMovieHeader } from "./containers/isobmff";
import { checkImage } from "./containers/image";
import { findFirstCluster } from "./containers/matroska";
import { readOgg } from "./containers/ogg";
import { readWavCodec } from "./containers/wav";
import { parseMetadata, summarizeMetadata } from "./metadata";
import { R2RangeClient, ReadLimitError, type ReadLimits } from "./r2-range-client";
import { type SniffedFormat, sniff } from "./sniff";
import { DurationUnknownError, type ProbeResult, type StreamSummary, UnsupportedMediaError } from "./types";

export { UnsupportedMediaError } from "./types";
export type { MediaKind, ProbeResult } from "./types";

/** file-type's sample size, and what music-metadata peeks at to choose a parser: one get serves both. */
const HEAD_BYTES = 4100;
/** Smallest get: a box or element header costs a round trip whatever its size, so take some bytes around it. */
const MIN_READ_BYTES = 4096;
/**
 * Well-formed files need a handful of gets and a few KB to a few MB (the sample tables in the moov
 * of a long MP4). The limits stop what would otherwise read a 5 GB object piecemeal: fragmented
 * MP4 with thousands of fragments, MP3/ADTS streams longer than ~15 minutes without a header.
 */
const READ_LIMITS: ReadLimits = { maxBytes: 16 * 1024 * 1024, maxRequests: 32, maxReadAhead: 4 * 1024 * 1024 };
/** Frame rates outside (0, MAX_FRAME_RATE] are header damage or timestamps, not a rate worth reporting. */
const MAX_FRAME_RATE = 1000;

/**
 * Identifies an uploaded object from its content and reads its duration and streams through
 * ranged gets, never the whole object. Throws UnsupportedMediaError for anything that is not an
 * accepted, intact media file; other errors are storage failures.
 */
export async function probeR2Object(bucket: R2Bucket, key: string, size: number): Promise<ProbeResult> {
  if (!Number.isSafeInteger(size) || size <= 0) throw new UnsupportedMediaError("The file is empty.");
  const client = new R2RangeClient(bucket, key, size, READ_LIMITS);
  let format: SniffedFormat | undefined;
  try {
    const source = await rangeTokenizer(client, { minimumChunkSize: MIN_READ_BYTES });
    const head = await readAt(source, 0, HEAD_BYTES);
    format = await sniff(head);
    const streams = await readStreams(format, source, head);
    // Some parsers turn read errors into warnings and return what they had; that result is not trustworthy.
    if (client.failure !== undefined) throw client.failure;
    return toResult(format, streams);
  } catch (error) {
    const cause = client.failure ?? error;
    if (cause instanceof UnsupportedMediaError) throw cause;
    const label = format?.label ?? "uploaded";
    if (cause instanceof ReadLimitError) {
      throw new DurationUnknownError(
        `The ${label} file cannot be probed cheaply: ${cause.message} to find its duration. ` +
          "Remux it into an MP4 with its index at the start (for example: ffmpeg -i input -c copy -movflags +faststart output.mp4) and upload it again.",
        format?.container ?? "bin",
        format?.mimeTypes ?? {},
      );
    }
    if (cause === client.failure) throw cause;
    const detail = cause instanceof Error ? cause.message : String(cause);
    throw new UnsupportedMediaError(
      `The ${label} file cannot be read; it is probably truncated or corrupt (${detail}).`,
    );
  }
}

async function readStreams(
  format: SniffedFormat,
  source: IRandomAccessTokenizer,
  head: Uint8Array,
): Promise<StreamSummary> {
  switch (format.family) {
    case "image":
      return { hasAudio: false, hasVideo: false, ...(await checkImage(source, format.container, format.label)) };
    case "avi":
      return readAvi(source, format.label);
    case "ogg":
      return readOgg(source, head, format.label);
    case "isobmff": {
      const movie = await readMovieHeader(source, format.label);
      const streams = summarize(await parseMetadata(source));
      // mvhd holds the presentation length (edit lists applied) that players and ffprobe show;
      // music-metadata only reports the first audio track's, and nothing for video-only files.
      return {
        ...streams,
        durationSeconds: movie.durationSeconds ?? streams.durationSeconds,
        width: streams.width ?? movie.width,
        height: streams.height ?? movie.height,
        frameRate: movie.frameRate ?? streams.frameRate,
        audioChannels: movie.audioChannels ?? streams.audioChannels,
        ...(movie.rotation !== undefined ? { rotation: movie.rotation } : {}),
        ...(movie.h264Profile !== undefined ? { h264Profile: movie.h264Profile } : {}),
      };
    }
    case "wav": {
      // The sample format of extensible WAV (24-bit, float, multichannel) is in its sub-format.
      const streams = summarize(await parseMetadata(source));
      const audioCodec = await readWavCodec(source);
      return audioCodec ? { ...streams, audioCodec } : streams;
    }
    case "matroska": {
      const firstCluster = await findFirstCluster(source, format.label);
      return summarize(await parseMetadata(prefix(source, firstCluster, format)));
    }
    default:
      return summarize(await parseMetadata(source));
  }
}

/** The streams music-metadata found, with the first video track's frame rate (Matroska: 1e9 / DefaultDuration). */
function summarize(metadata: IAudioMetadata): StreamSummary {
  const streams = summarizeMetadata(metadata);
  const frameRate = metadata.format.trackInfo.find((track) => track.video !== undefined)?.video?.frameRate;
  return frameRate === undefined ? streams : { ...streams, frameRate };
}

/** The first `length` bytes of the object as a tokenizer of their own. */
function prefix(source: IRandomAccessTokenizer, length: number, format: SniffedFormat): ITokenizer {
  source.setPosition(0);
  const view = createTokenizerView(source, length);
  // Views carry no MIME type; without one music-metadata sniffs 4100 bytes, which may exceed the view.
  view.fileInfo.mimeType = format.mimeTypes.video;
  return view;
}

function toResult(format: SniffedFormat, streams: StreamSummary): ProbeResult {
  const { container, label, mimeTypes } = format;
  if (format.family === "image") {
    const size = streams.width && streams.height ? { width: streams.width, height: streams.height } : {};
    return {
      kind: "image",
      container,
      mimeType: mimeTypes.image ?? "application/octet-stream",
      durationMs: 0,
      hasAudio: false,
      hasVideo: false,
      ...size,
    };
  }
  if (!streams.hasAudio && !streams.hasVideo) {
    throw new UnsupportedMediaError(`The ${label} file contains neither an audio nor a video stream.`);
  }
  const seconds = streams.durationSeconds;
  const durationMs = seconds !== undefined && Number.isFinite(seconds) ? Math.round(seconds * 1000) : 0;
  if (durationMs <= 0) {
    throw new DurationUnknownError(
      `The duration of the ${label} file cannot be determined from its headers.`,
      container,
      mimeTypes,
    );
  }
  const kind = streams.hasVideo ? "video" : "audio";
  const result: ProbeResult = {
    kind,
    container,
    mimeType: mimeTypes[kind] ?? mimeTypes.audio ?? "application/octet-stream",
    durationMs,
    hasAudio: streams.hasAudio,
    hasVideo: streams.hasVideo,
  };
  if (streams.videoCodec) result.videoCodec = streams.videoCodec;
  if (streams.audioCodec) result.audioCodec = streams.audioCodec;
  if (streams.hasVideo && streams.width && streams.height) {
    const quarterTurned = streams.rotation === 90 || streams.rotation === 270;
    result.width = quarterTurned ? streams.height : streams.width;
    result.height = quarterTurned ? streams.width : streams.height;
  }
  if (streams.hasVideo && streams.rotation !== undefined) result.rotation = streams.rotation;
  if (streams.hasVideo && streams.videoCodec === "h264" && streams.h264Profile !== undefined)
    result.h264Profile = streams.h264Profile;
  if (
    streams.hasAudio &&
    streams.audioChannels !== undefined &&
    Number.isInteger(streams.audioChannels) &&
    streams.audioChannels > 0 &&
    streams.audioChannels <= 64
  ) {
    result.audioChannels = streams.audioChannels;
  }
  const rate = streams.frameRate;
  if (streams.hasVideo && rate !== undefined && Number.isFinite(rate) && rate > 0 && rate <= MAX_FRAME_RATE) {
    // Three decimals keep 29.97 and 23.976 recognisable without the noise of integer nanosecond durations (30.0000003).
    result.frameRate = Math.round(rate * 1000) / 1000;
  }
  return result;
}
