import { fileTypeFromBuffer } from "file-type";
import { type MediaKind, UnsupportedMediaError } from "./types";

/** How the rest of the file is read. */
export type ContainerFamily = "isobmff" | "matroska" | "avi" | "mpeg-audio" | "wav" | "flac" | "ogg" | "image";

export interface SniffedFormat {
  family: ContainerFamily;
  container: string;
  /** Name used in messages to the user. */
  label: string;
  /** MIME type by the kind the streams turn out to be. */
  mimeTypes: Partial<Record<MediaKind, string>>;
}

export const ACCEPTED_IMAGE_FORMATS = "PNG, JPEG and WebP images";
const ACCEPTED_FORMATS = `MP4, MOV, M4V, WebM, MKV and AVI videos; MP3, WAV, M4A, AAC, Ogg (Opus or Vorbis) and FLAC audio; ${ACCEPTED_IMAGE_FORMATS}`;

/** file-type extension -> accepted format. Anything not listed is refused. */
const FORMATS: Record<string, SniffedFormat> = {
  mp4: { family: "isobmff", container: "mp4", label: "MP4", mimeTypes: { video: "video/mp4", audio: "audio/mp4" } },
  mov: {
    family: "isobmff",
    container: "mov",
    label: "QuickTime (MOV)",
    mimeTypes: { video: "video/quicktime", audio: "video/quicktime" },
  },
  m4v: { family: "isobmff", container: "m4v", label: "M4V", mimeTypes: { video: "video/x-m4v", audio: "audio/mp4" } },
  m4a: { family: "isobmff", container: "m4a", label: "M4A", mimeTypes: { video: "video/mp4", audio: "audio/mp4" } },
  webm: {
    family: "matroska",
    container: "webm",
    label: "WebM",
    mimeTypes: { video: "video/webm", audio: "audio/webm" },
  },
  mkv: {
    family: "matroska",
    container: "mkv",
    label: "Matroska (MKV)",
    mimeTypes: { video: "video/matroska", audio: "audio/matroska" },
  },
  avi: {
    family: "avi",
    container: "avi",
    label: "AVI",
    mimeTypes: { video: "video/x-msvideo", audio: "video/x-msvideo" },
  },
  mp3: { family: "mpeg-audio", container: "mp3", label: "MP3", mimeTypes: { audio: "audio/mpeg" } },
  aac: { family: "mpeg-audio", container: "aac", label: "AAC (ADTS)", mimeTypes: { audio: "audio/aac" } },
  wav: { family: "wav", container: "wav", label: "WAV", mimeTypes: { audio: "audio/wav" } },
  flac: { family: "flac", container: "flac", label: "FLAC", mimeTypes: { audio: "audio/flac" } },
  opus: { family: "ogg", container: "ogg", label: "Ogg Opus", mimeTypes: { audio: "audio/ogg" } },
  ogg: { family: "ogg", container: "ogg", label: "Ogg Vorbis", mimeTypes: { audio: "audio/ogg" } },
  png: { family: "image", container: "png", label: "PNG", mimeTypes: { image: "image/png" } },
  jpg: { family: "image", container: "jpeg", label: "JPEG", mimeTypes: { image: "image/jpeg" } },
  webp: { family: "image", container: "webp", label: "WebP", mimeTypes: { image: "image/webp" } },
};

/** Identifies the format from the first bytes of the file, whatever its name or declared type says. */
export async function sniff(head: Uint8Array): Promise<SniffedFormat> {
  const detected = await fileTypeFromBuffer(head);
  if (!detected) {
    throw new UnsupportedMediaError(
      `The file is not a recognised audio, video or image file. Accepted are ${ACCEPTED_FORMATS}.`,
    );
  }
  const format = FORMATS[detected.ext];
  if (!format) {
    throw new UnsupportedMediaError(
      `The file is ${detected.ext.toUpperCase()} (${detected.mime}), which is not supported. Accepted are ${ACCEPTED_FORMATS}.`,
    );
  }
  return format;
}
