/**
 * WAV's format chunk, for what music-metadata leaves out: WAVE_FORMAT_EXTENSIBLE (0xFFFE, how
 * ffmpeg and editors write 24-bit, 32-bit, float and multichannel WAV) carries its real format in
 * a sub-format GUID, which music-metadata reports only as "non-PCM (65534)".
 */
import type { IRandomAccessTokenizer } from "strtok3";
import { fourCC, readAt, u16le, u32le } from "../bytes";
import { codecFromWaveFormatTag, waveFormatTag } from "../codecs";

const EXTENSIBLE = 0xfffe;
/** Chunks looked at before giving up on finding 'fmt ' (it is the first one in practice). */
const MAX_CHUNKS = 16;

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
      // An extensible format too short to hold its sub-format GUID says nothing.
      if (fmt.length < 16 || (u16le(fmt, 0) === EXTENSIBLE && fmt.length < 26)) return undefined;
      return codecFromWaveFormatTag(waveFormatTag(fmt), u16le(fmt, 14));
    }
    at += 8 + length + (length % 2);
  }
  return undefined;
}
