/**
 * extract-audio: the first audio stream of a video or audio file as MP3, WAV or AAC.
 * Pure argv building, so the same command runs on ffmpeg.wasm and on a native ffmpeg.
 */
import { streamedInput, type MediaCommand, type MediaInput } from "./command";

export const extractAudioFormats = ["mp3", "wav", "aac"] as const;
export type ExtractAudioFormat = (typeof extractAudioFormats)[number];

export const extractAudioContentType: Record<ExtractAudioFormat, string> = {
  mp3: "audio/mpeg",
  wav: "audio/wav",
  aac: "audio/aac",
};

/**
 * Encoder settings per format. AAC is written as ADTS (`.aac`, `audio/aac`) rather than M4A:
 * it needs no index, plays while downloading, and takes a stream copy out of MP4/MKV as is.
 */
const encoderArgs: Record<ExtractAudioFormat, string[]> = {
  // LAME VBR V2: ~190 kbit/s for stereo music, transparent for most listeners.
  mp3: ["-c:a", "libmp3lame", "-q:a", "2"],
  // RF64 only past the 4 GiB a RIFF header can describe (hours of multichannel audio).
  wav: ["-c:a", "pcm_s16le", "-rf64", "auto"],
  // FFmpeg's native encoder; its VBR mode is experimental, so a fixed bit rate.
  aac: ["-c:a", "aac", "-b:a", "192k"],
};

const muxerOf: Record<ExtractAudioFormat, string> = { mp3: "mp3", wav: "wav", aac: "adts" };

export interface ExtractAudioParams {
  input: string;
  output: string;
  format: ExtractAudioFormat;
  /**
   * Codec of the source's first audio stream, as reported by ffprobe (`aac`) or
   * music-metadata (`AAC`, `MPEG-4/AAC`, `MPEG-4/AAC+SBR`), when known.
   */
  sourceAudioCodec?: string;
}

export function extractAudioArgs(p: ExtractAudioParams): string[] {
  const copy = p.format === "aac" && p.sourceAudioCodec !== undefined && isPlainAac(p.sourceAudioCodec);
  return [
    "-hide_banner",
    "-y",
    "-i",
    p.input,
    "-map",
    "0:a:0",
    "-vn",
    // Encoders get the channel layouts and rates they support through ffmpeg's automatic
    // conversion (5.1 or 96 kHz into LAME becomes stereo 48 kHz), so no -ac / -ar here.
    // The audio keeps the file's timeline: a track that starts after the picture (phones write
    // 0.02-0.5 s) is padded with silence from the start, so the result lasts the source and its
    // sound stays where it was against the video. A stream copy keeps the packets as they are.
    ...(copy ? ["-c:a", "copy"] : ["-af", "aresample=first_pts=0", ...encoderArgs[p.format]]),
    // The muxer is named rather than guessed from the extension, so any output name works.
    "-f",
    muxerOf[p.format],
    p.output,
  ];
}

/**
 * True for AAC carried as raw access units (MP4, MKV, ADTS), which the ADTS muxer accepts as a
 * stream copy; LATM-wrapped AAC (`aac_latm`, broadcast TS) is not, and is re-encoded.
 */
function isPlainAac(codec: string): boolean {
  return /(^|[^a-z0-9_])(aac|mp4a)([^a-z0-9_]|$)/.test(codec.toLowerCase());
}

/**
 * `clip.mp4` -> `clip.mp3`. Keeps letters, digits, `.`, `_` and `-` (accents folded, other
 * runs become `_`) so the name is safe in a storage key and a Content-Disposition header;
 * a name with no letter or digit left becomes `audio.<ext>`.
 */
export function extractAudioOutputName(sourceFilename: string, format: ExtractAudioFormat): string {
  const base = sourceFilename.split(/[\\/]/).pop() ?? "";
  const stem = base.replace(/\.[^.]*$/, "");
  const safe = stem
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .replace(/[^A-Za-z0-9._-]+/g, "_")
    .replace(/^[._-]+|[._-]+$/g, "")
    .slice(0, 100);
  return `${/[A-Za-z0-9]/.test(safe) ? safe : "audio"}.${format}`;
}

/** The tool's command for one probed input (see command.ts). */
export function buildExtractAudioCommand(params: { format: ExtractAudioFormat }, [input]: MediaInput[]): MediaCommand {
  if (input === undefined) throw new TypeError("extract-audio needs one input");
  const outputName = `out.${params.format}`;
  return {
    args: extractAudioArgs({
      input: input.name,
      output: outputName,
      format: params.format,
      sourceAudioCodec: input.probe.audioCodec,
    }),
    files: {},
    fonts: [],
    outputName,
    resultFilename: extractAudioOutputName(input.filename, params.format),
    contentType: extractAudioContentType[params.format],
    wasmCapable: true,
    wasmHeapBytes: 32 * 1024 * 1024,
    // Read over HTTP as ffmpeg goes, so the audio is encoded while the file arrives (ffmpeg reads
    // through the short gaps the unmapped video leaves in an interleaved file: a few requests).
    backendStreaming: streamedInput(input),
  };
}
