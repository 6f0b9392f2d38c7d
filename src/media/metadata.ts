import { type IAudioMetadata, type ITrackInfo, parseFromTokenizer, TrackType } from "music-metadata";
import type { ITokenizer } from "strtok3";
import { codecFromAudioFormatName, codecFromMatroskaId, codecFromMp4SampleEntry, isVideoCodec } from "./codecs";
import type { StreamSummary } from "./types";

/**
 * Parses the container with music-metadata. With a random-access tokenizer it seeks over media
 * data (mdat, clusters, ID3 covers) instead of reading it. `duration: true` only changes MPEG
 * audio: VBR MP3 without a Xing/Info header and raw ADTS are frame-scanned to their end, a scan
 * the read limits of the range client keep bounded.
 */
export function parseMetadata(source: ITokenizer): Promise<IAudioMetadata> {
  return parseFromTokenizer(source, { duration: true, skipCovers: true, mkvUseIndex: true });
}

interface Track {
  kind: "video" | "audio";
  codec?: string;
  info: ITrackInfo;
}

export function summarizeMetadata(metadata: IAudioMetadata): StreamSummary {
  const { format } = metadata;
  const tracks = format.trackInfo
    .map((info) => classify(info, format.bitsPerSample))
    .filter((track) => track !== undefined);
  const video = tracks.find((track) => track.kind === "video");
  const audio = tracks.find((track) => track.kind === "audio");
  const trackDurations = format.trackInfo.map((info) => info.duration ?? 0);
  return {
    durationSeconds: format.duration ?? (Math.max(0, ...trackDurations) || undefined),
    hasVideo: video !== undefined || format.hasVideo === true,
    hasAudio: audio !== undefined || format.hasAudio === true,
    videoCodec: video?.codec,
    audioCodec: audio?.codec,
    audioChannels: audio?.info.audio?.channels ?? format.numberOfChannels,
    width: video?.info.video?.pixelWidth,
    height: video?.info.video?.pixelHeight,
  };
}

function classify(info: ITrackInfo, bitsPerSample: number | undefined): Track | undefined {
  const codec = normalizeCodec(info, bitsPerSample);
  // music-metadata leaves `type` unset for QuickTime tracks (a data-handler 'hdlr' overrides the
  // media handler), so the codec decides when the container's track type is missing.
  if (info.type === TrackType.video) return { kind: "video", codec, info };
  if (info.type === TrackType.audio) return { kind: "audio", codec, info };
  if (info.type !== undefined) return undefined;
  if (codec !== undefined && knownCodec(info)) return { kind: isVideoCodec(codec) ? "video" : "audio", codec, info };
  if (info.video) return { kind: "video", codec, info };
  if (info.audio) return { kind: "audio", codec, info };
  return undefined;
}

function knownCodec(info: ITrackInfo): boolean {
  return (
    info.codecId !== undefined &&
    (codecFromMp4SampleEntry(info.codecId) ?? codecFromMatroskaId(info.codecId)) !== undefined
  );
}

function normalizeCodec(info: ITrackInfo, bitsPerSample: number | undefined): string | undefined {
  if (info.codecId !== undefined) {
    return (
      codecFromMp4SampleEntry(info.codecId) ?? codecFromMatroskaId(info.codecId) ?? info.codecId.trim().toLowerCase()
    );
  }
  return info.codecName === undefined
    ? undefined
    : codecFromAudioFormatName(info.codecName, info.audio?.bitDepth ?? bitsPerSample);
}
