/**
 * WAV's format chunk, for what music-metadata leaves out: WAVE_FORMAT_EXTENSIBLE (0xFFFE, how
 * ffmpeg and editors write 24-bit, 32-bit, float and multichannel WAV) carries its real format in
 * a sub-format GUID, which music-metadata reports only as "non-PCM (65534)".
 */
import type { IRandomAccessTokenizer } from "strtok3";
import { fourCC, readAt } from "../bytes";
import { codecFromWaveFormatTag } from "../codecs";

const EXTENSIBLE = 0xfffe;
/** Chunks looked at before giving up on finding 'fmt ' (it is the first one in practice). */
const MAX_CHUNKS = 16;

const u16le = (bytes: Uint8Array, at: number) => bytes[at]! | (bytes[at + 1]! << 8);
const u32le = (bytes: Uint8Array, at: number) => (u16le(bytes, at) | (u16le(bytes, at + 2) << 16)) >>> 0;

/** ffprobe's codec name of a WAV file's samples, read from its 'fmt ' chunk; undefined if unreadable. */
export async function readWavCodec(source: IRandomAccessTokenizer): Promise<string | undefined> {
  const size = source.fileInfo.size ?? 0;
  let at = 12;
  for (let i = 0; i < MAX_CHUNKS && at + 8 <= size; i++) {
    const header = await readAt(source, at, 8);
    if (header.length < 8) return undefined;
    const length = u32le(header, 4);
    if (fourCC(header, 0) === "fmt ") {
      const fmt = await readAt(source, at + 8, Math.min(length, 40));
      if (fmt.length < 16) return undefined;
      const tag = u16le(fmt, 0);
      const bits = u16le(fmt, 14);
      if (tag !== EXTENSIBLE) return codecFromWaveFormatTag(tag, bits);
      if (fmt.length < 26) return undefined;
      // cbSize, wValidBitsPerSample, dwChannelMask, then the GUID whose first two bytes are the format tag.
      return codecFromWaveFormatTag(u16le(fmt, 24), bits);
    }
    at += 8 + length + (length % 2);
  }
  return undefined;
}
