export type MediaKind = "video" | "audio" | "image";

export interface ProbeResult {
  kind: MediaKind;
  /** mp4, mov, m4v, m4a, webm, mkv, avi, mp3, aac, wav, ogg, flac, png, jpeg, webp */
  container: string;
  mimeType: string;
  /** Integer milliseconds; 0 for images. */
  durationMs: number;
  /** Codec names as ffprobe spells them (h264, vp8, aac, opus, pcm_s16le, ...). */
  videoCodec?: string;
  audioCodec?: string;
  hasAudio: boolean;
  hasVideo: boolean;
  /** The picture as players show it: a phone video stored 1920x1080 and turned a quarter is 1080x1920. */
  width?: number;
  height?: number;
  /**
   * Clockwise turn players apply to the stored frames (MP4/MOV display matrix); ffmpeg applies it
   * when it decodes, so filters see width x height. A stream copy keeps it only where the target
   * container can carry it. Absent for none.
   */
  rotation?: 90 | 180 | 270;
  /**
   * H.264 profile_idc (66 Baseline, 77 Main, 100 High; 110 High 10, 122 High 4:2:2, 244 High
   * 4:4:4, which browsers do not play), when an MP4/MOV states it.
   */
  h264Profile?: number;
  /**
   * Frames per second of the first video stream, rounded to 3 decimals (29.97 for 30000/1001),
   * as the container states it: the rate of a constant-rate stream, the average of a variable
   * one. Absent for audio and images, and when the headers do not say.
   */
  frameRate?: number;
  /** Channels of the first audio stream (1 mono, 2 stereo, 6 for 5.1), when the headers say. */
  audioChannels?: number;
}

/** The content is not an accepted media file; the message is meant for the user (HTTP 400). */
export class UnsupportedMediaError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UnsupportedMediaError";
  }
}

/**
 * An accepted container whose duration the headers do not give within the read budget
 * (browser MediaRecorder WebM, fragmented MP4, long VBR MP3 without Xing): a full read by
 * native ffmpeg can still measure it, when a backend is available.
 */
export class DurationUnknownError extends UnsupportedMediaError {
  constructor(
    message: string,
    readonly container: string,
    readonly mimeTypes: Partial<Record<MediaKind, string>>,
  ) {
    super(message);
    this.name = "DurationUnknownError";
  }
}

/** What a container reader learned about the streams; probe.ts turns it into a ProbeResult. */
export interface StreamSummary {
  /** Seconds, as precise as the container states it. */
  durationSeconds?: number;
  hasAudio: boolean;
  hasVideo: boolean;
  videoCodec?: string;
  audioCodec?: string;
  width?: number;
  height?: number;
  /** Frames per second of the first video stream, unrounded (e.g. 1e9 / Matroska DefaultDuration). */
  frameRate?: number;
  audioChannels?: number;
  /** Clockwise turn the container asks players to apply to the video (MP4/MOV track matrix). */
  rotation?: 90 | 180 | 270;
  h264Profile?: number;
}
