/**
 * convert: one video or audio file into MP4, WebM, MOV, AVI or MKV.
 *
 * Streams the target container can hold are copied as they are (`-c copy`: no quality loss,
 * as fast as reading the file); only the others are re-encoded. Audio-only inputs stay
 * audio-only in the chosen container. The encoder settings are the ones every video tool
 * shares (encoders.ts).
 */
import type { ConvertInput } from "../../tools/convert";
import { type MediaCommand, type MediaInput, resultName } from "./command";
import {
  type AudioEncoder,
  audioEncoderArgs,
  AVI_TIMING,
  EVEN_SIZE_FILTER,
  isAudioOnly,
  streamMaps,
  type VideoEncoder,
  videoEncoderArgs,
  wasmHeapEstimate,
} from "./encoders";

export type ConvertFormat = ConvertInput["format"];

interface ContainerTarget {
  extension: string;
  /** ffmpeg muxer, named explicitly so the output name never decides the format. */
  muxer: string;
  videoContentType: string;
  audioContentType: string;
  /** Source codecs (ffprobe names) this container holds well enough to copy. */
  copyVideo: readonly string[];
  copyAudio: readonly string[];
  /**
   * The muxer has no per-stream start time (AVI): an audio track that starts after the picture
   * would be pulled forward, so a re-encoded one is padded with silence from the start.
   */
  startsTracksAtZero?: boolean;
  /** Meant to play in browsers: only what they decode is copied into it. */
  forBrowsers: boolean;
  /** The muxer writes a video's display rotation, so a turned phone video may be copied (else it is re-encoded upright). */
  keepsRotation: boolean;
  video: VideoEncoder;
  audio: AudioEncoder;
  extraArgs: readonly string[];
}

/** Index at the start, so the file plays while it downloads. */
const FASTSTART = ["-movflags", "+faststart"] as const;

export const convertTargets: Record<ConvertFormat, ContainerTarget> = {
  mp4: {
    extension: "mp4",
    muxer: "mp4",
    videoContentType: "video/mp4",
    audioContentType: "audio/mp4",
    copyVideo: ["h264"],
    copyAudio: ["aac"],
    forBrowsers: true,
    keepsRotation: true,
    video: "x264",
    audio: "aac",
    extraArgs: FASTSTART,
  },
  mov: {
    extension: "mov",
    muxer: "mov",
    videoContentType: "video/quicktime",
    // QuickTime has no registered audio type; players identify .mov by the video one.
    audioContentType: "video/quicktime",
    copyVideo: ["h264"],
    copyAudio: ["aac"],
    forBrowsers: true,
    keepsRotation: true,
    video: "x264",
    audio: "aac",
    extraArgs: FASTSTART,
  },
  webm: {
    extension: "webm",
    muxer: "webm",
    videoContentType: "video/webm",
    audioContentType: "audio/webm",
    copyVideo: ["vp8", "vp9", "av1"],
    copyAudio: ["opus", "vorbis"],
    forBrowsers: true,
    keepsRotation: false,
    video: "vp8",
    audio: "opus",
    extraArgs: [],
  },
  avi: {
    extension: "avi",
    muxer: "avi",
    videoContentType: "video/x-msvideo",
    audioContentType: "video/x-msvideo",
    copyVideo: ["mpeg4"],
    copyAudio: ["mp3"],
    startsTracksAtZero: true,
    forBrowsers: false,
    keepsRotation: false,
    video: "mpeg4",
    audio: "mp3",
    extraArgs: AVI_TIMING,
  },
  // ffmpeg 5.1's Matroska muxer drops the display matrix: a copied phone video would play sideways.
  mkv: {
    extension: "mkv",
    muxer: "matroska",
    videoContentType: "video/matroska",
    audioContentType: "audio/matroska",
    // Matroska maps nearly every codec; these are the ones players commonly decode.
    copyVideo: ["h264", "hevc", "vp8", "vp9", "av1", "mpeg4", "mpeg2video", "theora"],
    copyAudio: [
      "aac",
      "mp3",
      "opus",
      "vorbis",
      "flac",
      "ac3",
      "eac3",
      "alac",
      "pcm_s16le",
      "pcm_s24le",
      "pcm_f32le",
      "mp2",
    ],
    forBrowsers: false,
    keepsRotation: false,
    video: "x264",
    audio: "aac",
    extraArgs: [],
  },
};

/** `reencodeVideo`: never copy the video (a test-mode result gets a mark drawn on it). */
export function buildConvertCommand(
  params: Pick<ConvertInput, "format">,
  inputs: MediaInput[],
  options: { reencodeVideo?: boolean } = {},
): MediaCommand {
  const input = inputs[0];
  if (input === undefined) throw new TypeError("convert takes one input");
  const target = convertTargets[params.format];
  const { probe } = input;
  const audioOnly = isAudioOnly(probe);

  const copyVideo =
    !audioOnly &&
    !options.reencodeVideo &&
    probe.videoCodec !== undefined &&
    target.copyVideo.includes(probe.videoCodec) &&
    // High 10, 4:2:2 and 4:4:4 H.264 (profile_idc above High's 100) would not play in browsers.
    !(target.forBrowsers && probe.videoCodec === "h264" && (probe.h264Profile ?? 0) > 100) &&
    (probe.rotation === undefined || target.keepsRotation);
  const copyAudio = probe.audioCodec !== undefined && target.copyAudio.includes(probe.audioCodec);

  const videoArgs: string[] = [];
  if (!audioOnly) {
    if (copyVideo) {
      videoArgs.push("-c:v", "copy");
      // DivX-style "packed B-frames" in AVI are not valid MPEG-4 outside AVI.
      if (probe.videoCodec === "mpeg4") videoArgs.push("-bsf:v", "mpeg4_unpack_bframes");
    } else {
      videoArgs.push("-vf", EVEN_SIZE_FILTER, ...videoEncoderArgs(target.video, probe.width, probe.height));
    }
  }
  const padStart = !audioOnly && target.startsTracksAtZero ? ["-af", "aresample=first_pts=0"] : [];
  const audioArgs = probe.hasAudio
    ? copyAudio
      ? ["-c:a", "copy"]
      : [...padStart, ...audioEncoderArgs(target.audio)]
    : [];

  const outputName = `out.${target.extension}`;
  const encoder = audioOnly || copyVideo ? undefined : target.video;
  return {
    args: [
      "-hide_banner",
      "-y",
      "-i",
      input.name,
      ...streamMaps(probe),
      ...videoArgs,
      ...audioArgs,
      ...target.extraArgs,
      "-f",
      target.muxer,
      outputName,
    ],
    files: {},
    fonts: [],
    outputName,
    resultFilename: resultName(input.filename, target.extension),
    contentType: audioOnly ? target.audioContentType : target.videoContentType,
    wasmCapable: true,
    wasmHeapBytes: wasmHeapEstimate(encoder, probe.width, probe.height),
  };
}
