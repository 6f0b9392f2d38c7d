/**
 * trim: the segment [start, end) of a video or audio file, in the source's container, cut on the
 * exact frame and audio sample (re-encoded, both streams from 0 in sync); a source under 24 fps, or
 * a cut shorter than one frame, keeps the picture on screen at `start` on a grid of at least 24 fps.
 * Why not a stream copy, and the slideshow cases: docs/decisions/0007-frame-accurate-trim.md.
 */
import type { TrimInput } from "../../tools/trim";
import type { ProbeResult } from "../types";
import { type MediaCommand, type MediaInput, resultName, streamedInput } from "./command";
import { convertTargets } from "./convert";
import {
  type AudioEncoder,
  audioEncoderArgs,
  AVI_TIMING,
  EVEN_SIZE_FILTER,
  isAudioOnly,
  seconds,
  streamMaps,
  videoEncoderArgs,
  type VideoEncoder,
  wasmHeapEstimate,
} from "./encoders";

/** How a result is written in the source's container: muxer, encoders, muxer options. */
export interface ContainerFamily {
  extension: string;
  muxer: string;
  video: VideoEncoder;
  audio: AudioEncoder;
  extraArgs: readonly string[];
}

const FASTSTART = ["-movflags", "+faststart"] as const;

/**
 * Every container the probe accepts (src/media/types.ts), written back as itself: video
 * containers with their usual codecs (MP4 family H.264/AAC, WebM VP8/Opus, AVI MPEG-4/MP3,
 * MKV H.264/AAC), audio files with their own codec (MP3 stays MP3, WAV stays 16-bit PCM...).
 */
const families: Record<string, ContainerFamily> = {
  mp4: { extension: "mp4", muxer: "mp4", video: "x264", audio: "aac", extraArgs: FASTSTART },
  m4v: { extension: "m4v", muxer: "mp4", video: "x264", audio: "aac", extraArgs: FASTSTART },
  mov: { extension: "mov", muxer: "mov", video: "x264", audio: "aac", extraArgs: FASTSTART },
  m4a: { extension: "m4a", muxer: "ipod", video: "x264", audio: "aac", extraArgs: FASTSTART },
  webm: { extension: "webm", muxer: "webm", video: "vp8", audio: "opus", extraArgs: [] },
  mkv: { extension: "mkv", muxer: "matroska", video: "x264", audio: "aac", extraArgs: [] },
  avi: { extension: "avi", muxer: "avi", video: "mpeg4", audio: "mp3", extraArgs: AVI_TIMING },
  mp3: { extension: "mp3", muxer: "mp3", video: "x264", audio: "mp3", extraArgs: [] },
  aac: { extension: "aac", muxer: "adts", video: "x264", audio: "aac", extraArgs: [] },
  wav: { extension: "wav", muxer: "wav", video: "x264", audio: "pcm", extraArgs: ["-rf64", "auto"] },
  ogg: { extension: "ogg", muxer: "ogg", video: "x264", audio: "opus", extraArgs: [] },
  flac: { extension: "flac", muxer: "flac", video: "x264", audio: "flac", extraArgs: [] },
};

/** The family a probed file is written back as; Ogg keeps Vorbis when the source is Vorbis. */
export function containerFamily(probe: ProbeResult): ContainerFamily {
  const family = families[probe.container] ?? families.mp4!;
  if (probe.container === "ogg" && probe.audioCodec === "vorbis") return { ...family, audio: "vorbis" };
  return family;
}

/** The content type of a result written in the source's container. */
export function familyContentType(probe: ProbeResult): string {
  if (probe.mimeType) return probe.mimeType;
  const target = convertTargets[probe.container as keyof typeof convertTargets];
  if (target) return isAudioOnly(probe) ? target.audioContentType : target.videoContentType;
  return "application/octet-stream";
}

/** WAV keeps the source's sample format (24-bit stays 24-bit); other families use their encoder. */
const WAV_PCM = /^pcm_(u8|s16le|s24le|s32le|f32le|f64le)$/;

export function familyAudioArgs(family: ContainerFamily, probe: ProbeResult): string[] {
  if (family.audio === "pcm" && probe.audioCodec !== undefined && WAV_PCM.test(probe.audioCodec)) {
    return ["-c:a", probe.audioCodec];
  }
  const lossless = probe.audioCodec === undefined ? undefined : losslessEncoder(family, probe.audioCodec);
  return lossless ? ["-c:a", lossless] : audioEncoderArgs(family.audio);
}

/**
 * Lossless sound stays lossless in a container that holds a lossless codec: ALAC in the MP4
 * family (FLAC there is experimental in ffmpeg 5.1), MOV's and AVI's PCM as it is, Matroska any
 * of FLAC, ALAC and PCM as it is. WebM, MP3 and ADTS have none; WAV and FLAC files keep theirs.
 */
function losslessEncoder(family: ContainerFamily, codec: string): string | undefined {
  const pcm = codec.startsWith("pcm_");
  if (!pcm && codec !== "alac" && codec !== "flac") return undefined;
  switch (family.muxer) {
    case "mp4":
    case "ipod":
      return "alac";
    case "mov":
      return pcm ? codec : "alac";
    case "matroska":
      return codec;
    case "avi":
      return pcm ? codec : undefined;
    default:
      return undefined;
  }
}

/** What a trim reads before `start`: from the keyframe before it (a few seconds on phone video). */
const SEEK_LEAD_SECONDS = 5;

/**
 * The backend reads the input over HTTP from the keyframe before `start` to `end`, instead of
 * downloading all of it first; the share it reads is what routing counts as transferred.
 */
function trimStreaming(input: MediaInput, start: number, end: number): MediaCommand["backendStreaming"] {
  const duration = input.probe.durationMs / 1000;
  const readFraction =
    duration > 0
      ? Math.min(1, Math.max(0, Math.min(end, duration) - Math.max(0, start - SEEK_LEAD_SECONDS)) / duration)
      : 1;
  return streamedInput(input, readFraction);
}

/** Below this rate a trim lays the source on a grid of a multiple of its rate (1 fps on 24 fps). */
const MIN_GRID_RATE = 24;
/** Seconds under which a cut of a source of unknown rate is laid on the grid. */
const UNKNOWN_RATE_GRID_SPAN = 1;

/**
 * The `fps` filter that keeps the picture on screen at `start`, when ffmpeg's accurate seek would
 * lose it: for a slow source, for a cut shorter than one frame at any rate (5.999-6 s of a 25 fps
 * clip came back audio-only: no frame begins inside it), and for a cut under a second of a source
 * whose rate is unknown. Undefined: ffmpeg's seek is kept.
 */
function pictureGrid(probe: ProbeResult, span: number): string | undefined {
  if (isAudioOnly(probe)) return undefined;
  const rate = probe.frameRate !== undefined && probe.frameRate > 0 ? probe.frameRate : undefined;
  const slow = rate !== undefined && rate < MIN_GRID_RATE;
  // A container that does not state its rate (MediaRecorder's WebM) may be as slow as a slideshow:
  // cuts under a second are laid on the grid rather than risk losing the picture.
  const pictureMayBeLost = rate === undefined ? span < UNKNOWN_RATE_GRID_SPAN : span < 1 / rate;
  if (!slow && !pictureMayBeLost) return undefined;
  // A multiple of the source's rate of at least 24 fps (the rate itself from 24 fps up); round=up:
  // a cut shorter than one grid step still gets the picture on screen at its start.
  const gridRate = rate === undefined ? MIN_GRID_RATE : rate * Math.ceil(MIN_GRID_RATE / rate);
  return `fps=${seconds(gridRate)}:start_time=0:round=up`;
}

export function buildTrimCommand(params: Pick<TrimInput, "start" | "end">, inputs: MediaInput[]): MediaCommand {
  const input = inputs[0];
  if (input === undefined) throw new TypeError("trim takes one input");
  if (!(params.start >= 0 && params.end > params.start)) throw new RangeError("trim needs 0 <= start < end");
  const { probe } = input;
  const family = containerFamily(probe);
  const audioOnly = isAudioOnly(probe);

  const grid = pictureGrid(probe, params.end - params.start);
  const videoArgs = audioOnly
    ? []
    : [
        "-vf",
        grid ? `${grid},${EVEN_SIZE_FILTER}` : EVEN_SIZE_FILTER,
        ...videoEncoderArgs(family.video, probe.width, probe.height),
      ];
  const audioArgs = probe.hasAudio
    ? [...(grid ? ["-af", "atrim=start=0"] : []), ...familyAudioArgs(family, probe)]
    : [];
  const outputName = `out.${family.extension}`;
  return {
    args: [
      "-hide_banner",
      "-y",
      // Accurate seek by default (exact first frame and sample); a slow source or a sub-frame
      // cut keeps what precedes `start` (at negative times) for its grid and atrim above.
      ...(grid ? ["-noaccurate_seek"] : []),
      "-ss",
      seconds(params.start),
      "-i",
      input.name,
      "-t",
      seconds(params.end - params.start),
      ...streamMaps(probe),
      ...videoArgs,
      ...audioArgs,
      ...family.extraArgs,
      "-f",
      family.muxer,
      outputName,
    ],
    files: {},
    fonts: [],
    outputName,
    resultFilename: resultName(input.filename, family.extension, "-trim"),
    contentType: familyContentType(probe),
    wasmCapable: true,
    wasmHeapBytes: wasmHeapEstimate(audioOnly ? undefined : family.video, probe.width, probe.height),
    backendStreaming: trimStreaming(input, params.start, params.end),
  };
}
