/**
 * Container codec identifiers mapped to ffprobe's codec_name, so that probe results, the
 * backend's ffmpeg and the tests' ffprobe references all speak the same names.
 */
import { u16le } from "./bytes";

const VIDEO_CODECS = new Set([
  "h264",
  "hevc",
  "vp8",
  "vp9",
  "av1",
  "mpeg4",
  "msmpeg4v2",
  "msmpeg4v3",
  "h263",
  "mjpeg",
  "prores",
  "theora",
  "mpeg1video",
  "mpeg2video",
  "wmv1",
  "wmv2",
  "dvvideo",
  "rawvideo",
]);

export function isVideoCodec(codec: string): boolean {
  return VIDEO_CODECS.has(codec);
}

/** ISO BMFF / QuickTime sample entry types. */
const MP4_SAMPLE_ENTRIES: Record<string, string> = {
  avc1: "h264",
  avc3: "h264",
  hvc1: "hevc",
  hev1: "hevc",
  dvh1: "hevc",
  dvhe: "hevc",
  vp08: "vp8",
  vp09: "vp9",
  av01: "av1",
  mp4v: "mpeg4",
  s263: "h263",
  h263: "h263",
  jpeg: "mjpeg",
  mjpa: "mjpeg",
  mjpb: "mjpeg",
  apch: "prores",
  apcn: "prores",
  apcs: "prores",
  apco: "prores",
  ap4h: "prores",
  ap4x: "prores",
  mp4a: "aac",
  ".mp3": "mp3",
  "ac-3": "ac3",
  "ec-3": "eac3",
  Opus: "opus",
  fLaC: "flac",
  alac: "alac",
  sowt: "pcm_s16le",
  twos: "pcm_s16be",
  ulaw: "pcm_mulaw",
  alaw: "pcm_alaw",
};

/** Matroska CodecID prefixes (A_AAC/MPEG4/LC is still AAC). */
const MATROSKA_CODEC_IDS: [prefix: string, codec: string][] = [
  ["V_MPEG4/ISO/AVC", "h264"],
  ["V_MPEGH/ISO/HEVC", "hevc"],
  ["V_VP8", "vp8"],
  ["V_VP9", "vp9"],
  ["V_AV1", "av1"],
  ["V_MPEG4/ISO/", "mpeg4"],
  ["V_MJPEG", "mjpeg"],
  ["V_THEORA", "theora"],
  ["V_PRORES", "prores"],
  ["V_MPEG1", "mpeg1video"],
  ["V_MPEG2", "mpeg2video"],
  ["A_AAC", "aac"],
  ["A_OPUS", "opus"],
  ["A_VORBIS", "vorbis"],
  ["A_MPEG/L3", "mp3"],
  ["A_MPEG/L2", "mp2"],
  ["A_FLAC", "flac"],
  ["A_AC3", "ac3"],
  ["A_EAC3", "eac3"],
  ["A_DTS", "dts"],
  ["A_TRUEHD", "truehd"],
  ["A_ALAC", "alac"],
  ["A_PCM/INT/LIT", "pcm_s16le"],
  ["A_PCM/FLOAT/IEEE", "pcm_f32le"],
];

/** AVI video FourCCs (BITMAPINFOHEADER biCompression), upper-cased. */
const AVI_FOURCCS: Record<string, string> = {
  FMP4: "mpeg4",
  XVID: "mpeg4",
  DIVX: "mpeg4",
  DX50: "mpeg4",
  MP4V: "mpeg4",
  M4S2: "mpeg4",
  H264: "h264",
  X264: "h264",
  AVC1: "h264",
  DAVC: "h264",
  HEVC: "hevc",
  H265: "hevc",
  HVC1: "hevc",
  MJPG: "mjpeg",
  AVRN: "mjpeg",
  LJPG: "mjpeg",
  DIV3: "msmpeg4v3",
  MP43: "msmpeg4v3",
  MP42: "msmpeg4v2",
  WMV1: "wmv1",
  WMV2: "wmv2",
  VP80: "vp8",
  VP90: "vp9",
  AV01: "av1",
  MPG2: "mpeg2video",
  DVSD: "dvvideo",
};

/** WAVEFORMATEX wFormatTag values (AVI and WAV audio). */
const WAVE_FORMAT_TAGS: Record<number, string> = {
  0x0002: "adpcm_ms",
  0x0006: "pcm_alaw",
  0x0007: "pcm_mulaw",
  0x0011: "adpcm_ima_wav",
  0x0050: "mp2",
  0x0055: "mp3",
  0x00ff: "aac",
  0x1610: "aac",
  0x706d: "aac",
  0x2000: "ac3",
  0x2001: "dts",
  0x0160: "wmav1",
  0x0161: "wmav2",
};

export function codecFromMp4SampleEntry(type: string): string | undefined {
  return MP4_SAMPLE_ENTRIES[type];
}

export function codecFromMatroskaId(codecId: string): string | undefined {
  return MATROSKA_CODEC_IDS.find(([prefix]) => codecId.startsWith(prefix))?.[1];
}

export function codecFromAviFourCC(fourCC: string): string {
  if (fourCC === "\0\0\0\0") return "rawvideo";
  return AVI_FOURCCS[fourCC.toUpperCase()] ?? fourCC.trim().toLowerCase();
}

function pcmCodec(bitsPerSample: number | undefined, float = false): string {
  if (float) return bitsPerSample === 64 ? "pcm_f64le" : "pcm_f32le";
  return bitsPerSample === 8 ? "pcm_u8" : `pcm_s${bitsPerSample ?? 16}le`;
}

/** WAVE_FORMAT_EXTENSIBLE carries the real format tag in the first bytes of its sub-format GUID. */
export function waveFormatTag(format: Uint8Array): number {
  const tag = u16le(format, 0);
  return tag === 0xfffe && format.length >= 26 ? u16le(format, 24) : tag;
}

export function codecFromWaveFormatTag(tag: number, bitsPerSample: number): string {
  if (tag === 0x0001) return pcmCodec(bitsPerSample);
  if (tag === 0x0003) return pcmCodec(bitsPerSample, true);
  return WAVE_FORMAT_TAGS[tag] ?? `wave_format_0x${tag.toString(16).padStart(4, "0")}`;
}

/** music-metadata's codec names of the audio-only parsers (MPEG, ADTS, FLAC, WAV). */
export function codecFromAudioFormatName(name: string, bitsPerSample: number | undefined): string {
  if (/layer 3/i.test(name)) return "mp3";
  if (/layer 2/i.test(name)) return "mp2";
  if (/layer 1/i.test(name)) return "mp1";
  if (name === "PCM") return pcmCodec(bitsPerSample);
  if (name === "IEEE_FLOAT") return pcmCodec(bitsPerSample, true);
  if (name === "ALAW" || name === "MULAW") return `pcm_${name.toLowerCase()}`;
  return name.toLowerCase();
}
