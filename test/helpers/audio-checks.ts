/**
 * Minimal readers of WAV, MP3 and ADTS streams, so tests check what ffmpeg actually wrote
 * (header fields, frame counts, the tone's frequency) rather than trusting its exit code; and
 * level measurements over time windows (RMS, a tone's level, band levels), so audio processing
 * is judged by what it did to the signal. Runtime-neutral: workerd and Node.
 */
import { fft } from "../../backend/src/speech/fft.ts";

export interface WavInfo {
  audioFormat: number;
  channels: number;
  sampleRate: number;
  bitsPerSample: number;
  dataBytes: number;
  durationSeconds: number;
  /** Little-endian 16-bit samples (first channel interleaved with the others). */
  samples: Int16Array;
}

export function parseWav(bytes: Uint8Array): WavInfo {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const tag = (offset: number) => String.fromCharCode(...bytes.subarray(offset, offset + 4));
  if (tag(0) !== "RIFF" || tag(8) !== "WAVE") throw new Error("not a RIFF/WAVE file");
  let fmt: Omit<WavInfo, "dataBytes" | "durationSeconds" | "samples"> | undefined;
  for (let offset = 12; offset + 8 <= bytes.byteLength; ) {
    const id = tag(offset);
    const size = view.getUint32(offset + 4, true);
    const body = offset + 8;
    if (id === "fmt ") {
      fmt = {
        audioFormat: view.getUint16(body, true),
        channels: view.getUint16(body + 2, true),
        sampleRate: view.getUint32(body + 4, true),
        bitsPerSample: view.getUint16(body + 14, true),
      };
    } else if (id === "data") {
      if (!fmt) throw new Error("data chunk before fmt chunk");
      const frameBytes = fmt.channels * (fmt.bitsPerSample / 8);
      const samples = new Int16Array(bytes.slice(body, body + size).buffer);
      return { ...fmt, dataBytes: size, durationSeconds: size / frameBytes / fmt.sampleRate, samples };
    }
    offset = body + size + (size % 2);
  }
  throw new Error("no data chunk");
}

/**
 * Frequency of a pure tone: rising crossings per second between the first and the last one,
 * so priming silence and padding do not count. The hysteresis of a quarter of the peak
 * ignores the low-level noise lossy codecs leave around the tone.
 */
export function toneFrequency(samples: Int16Array, channels: number, sampleRate: number): number {
  const frames = Math.floor(samples.length / channels);
  let peak = 0;
  for (let i = 0; i < frames; i++) peak = Math.max(peak, Math.abs(samples[i * channels]!));
  const threshold = peak / 4;
  const crossings: number[] = [];
  let below = false;
  for (let i = 0; i < frames; i++) {
    const sample = samples[i * channels]!;
    if (sample < -threshold) below = true;
    else if (below && sample > threshold) {
      crossings.push(i);
      below = false;
    }
  }
  if (crossings.length < 2) return 0;
  return ((crossings.length - 1) * sampleRate) / (crossings.at(-1)! - crossings[0]!);
}

export interface AdtsInfo {
  frames: number;
  profile: number;
  sampleRate: number;
  channelConfig: number;
  durationSeconds: number;
}

const ADTS_RATES = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350];

/** Walks every ADTS frame: each must start with the 12-bit sync word and chain to the next. */
export function parseAdts(bytes: Uint8Array): AdtsInfo {
  let offset = 0;
  let frames = 0;
  let first: Omit<AdtsInfo, "frames" | "durationSeconds"> | undefined;
  while (offset < bytes.byteLength) {
    if (bytes[offset] !== 0xff || (bytes[offset + 1]! & 0xf6) !== 0xf0) {
      throw new Error(`no ADTS sync word at byte ${offset}`);
    }
    const header = bytes.subarray(offset, offset + 7);
    const length = ((header[3]! & 0x03) << 11) | (header[4]! << 3) | (header[5]! >> 5);
    if (length < 7) throw new Error(`bad ADTS frame length at byte ${offset}`);
    first ??= {
      profile: (header[2]! >> 6) + 1,
      sampleRate: ADTS_RATES[(header[2]! >> 2) & 0x0f]!,
      channelConfig: ((header[2]! & 0x01) << 2) | (header[3]! >> 6),
    };
    frames++;
    offset += length;
  }
  if (!first) throw new Error("empty ADTS stream");
  return { ...first, frames, durationSeconds: (frames * 1024) / first.sampleRate };
}

/** Offset of the first MPEG audio frame, after an optional ID3v2 tag. */
export function firstMp3FrameOffset(bytes: Uint8Array): number {
  let offset = 0;
  if (String.fromCharCode(bytes[0]!, bytes[1]!, bytes[2]!) === "ID3") {
    // Synchsafe size: 4 x 7 bits, excluding the 10-byte header.
    offset = 10 + ((bytes[6]! << 21) | (bytes[7]! << 14) | (bytes[8]! << 7) | bytes[9]!);
  }
  return offset;
}

/** MPEG version and layer bits of the frame header at `offset` (MPEG-1 Layer III: 0b11, 0b01). */
export function mp3FrameHeader(bytes: Uint8Array, offset: number): { sync: boolean; version: number; layer: number } {
  return {
    sync: bytes[offset] === 0xff && (bytes[offset + 1]! & 0xe0) === 0xe0,
    version: (bytes[offset + 1]! >> 3) & 0x03,
    layer: (bytes[offset + 1]! >> 1) & 0x03,
  };
}

// ---------------------------------------------------------------------------------------------
// Levels over time windows (mono samples in [-1, 1])

/** One channel of a 16-bit WAV (the first by default) as floats in [-1, 1]. */
export function monoSamples(wav: WavInfo, channel = 0): Float32Array {
  const frames = Math.floor(wav.samples.length / wav.channels);
  const out = new Float32Array(frames);
  for (let i = 0; i < frames; i++) out[i] = wav.samples[i * wav.channels + channel]! / 32768;
  return out;
}

function windowOf(samples: ArrayLike<number>, sampleRate: number, from: number, to: number): [number, number] {
  const start = Math.max(0, Math.round(from * sampleRate));
  const end = Math.min(samples.length, Math.round(to * sampleRate));
  if (end - start < 2)
    throw new RangeError(`window ${from}-${to} s is outside the ${samples.length / sampleRate} s of audio`);
  return [start, end];
}

const decibels = (power: number) => 10 * Math.log10(Math.max(power, 1e-20));

/** RMS level (dBFS) between `from` and `to` seconds. */
export function rmsDb(samples: ArrayLike<number>, sampleRate: number, from: number, to: number): number {
  const [start, end] = windowOf(samples, sampleRate, from, to);
  let sum = 0;
  for (let i = start; i < end; i++) sum += samples[i]! ** 2;
  return decibels(sum / (end - start));
}

/**
 * Level (dBFS RMS) of the sine at `frequency` between `from` and `to` seconds (Goertzel over the
 * window, Hann-weighted so that noise and other tones leak little into it).
 */
export function toneLevelDb(
  samples: ArrayLike<number>,
  sampleRate: number,
  frequency: number,
  from: number,
  to: number,
): number {
  const [start, end] = windowOf(samples, sampleRate, from, to);
  const n = end - start;
  const coefficient = 2 * Math.cos((2 * Math.PI * frequency) / sampleRate);
  let s1 = 0;
  let s2 = 0;
  let weights = 0;
  for (let i = 0; i < n; i++) {
    const w = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / (n - 1));
    weights += w;
    const s0 = samples[start + i]! * w + coefficient * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  const amplitude = (2 * Math.sqrt(Math.max(0, s1 * s1 + s2 * s2 - coefficient * s1 * s2))) / weights;
  return decibels(amplitude ** 2 / 2);
}

/**
 * Level (dB, relative: compare bands or files with each other) of each frequency band
 * `[low, high)` Hz between `from` and `to` seconds: the power spectrum of Hann-windowed 4096-sample
 * blocks, half overlapped, summed per band.
 */
export function bandLevelsDb(
  samples: ArrayLike<number>,
  sampleRate: number,
  from: number,
  to: number,
  bands: [number, number][],
): number[] {
  const [start, end] = windowOf(samples, sampleRate, from, to);
  const size = 4096;
  const power = new Float64Array(size / 2);
  const re = new Float64Array(size);
  const im = new Float64Array(size);
  let blocks = 0;
  for (let offset = start; offset + size <= end; offset += size / 2) {
    for (let i = 0; i < size; i++) {
      re[i] = samples[offset + i]! * (0.5 - 0.5 * Math.cos((2 * Math.PI * i) / (size - 1)));
      im[i] = 0;
    }
    fft(re, im);
    for (let k = 0; k < size / 2; k++) power[k] = power[k]! + re[k]! ** 2 + im[k]! ** 2;
    blocks++;
  }
  if (blocks === 0) throw new RangeError(`window ${from}-${to} s is shorter than one ${size}-sample block`);
  return bands.map(([low, high]) => {
    let sum = 0;
    for (let k = Math.ceil((low * size) / sampleRate); k < Math.min(size / 2, (high * size) / sampleRate); k++)
      sum += power[k]!;
    return decibels(sum / blocks / size);
  });
}

/** Voice-to-noise ratio (dB): RMS of the voice window over RMS of the noise-only window. */
export function voiceToNoiseDb(
  samples: ArrayLike<number>,
  sampleRate: number,
  voice: [number, number],
  noise: [number, number],
): number {
  return rmsDb(samples, sampleRate, ...voice) - rmsDb(samples, sampleRate, ...noise);
}

/** A 16-bit PCM WAV built in memory: `seconds` of a tone at `frequency` Hz (0: silence), any size a test needs. */
export function makeWav(p: { seconds: number; sampleRate: number; channels: number; frequency?: number }): Uint8Array {
  const frames = p.sampleRate * p.seconds;
  const blockAlign = p.channels * 2;
  const dataBytes = frames * blockAlign;
  const bytes = new Uint8Array(44 + dataBytes);
  const view = new DataView(bytes.buffer);
  const ascii = (offset: number, text: string) =>
    [...text].forEach((ch, i) => view.setUint8(offset + i, ch.charCodeAt(0)));
  ascii(0, "RIFF");
  view.setUint32(4, 36 + dataBytes, true);
  ascii(8, "WAVEfmt ");
  view.setUint32(16, 16, true);
  view.setUint16(20, 1, true);
  view.setUint16(22, p.channels, true);
  view.setUint32(24, p.sampleRate, true);
  view.setUint32(28, p.sampleRate * blockAlign, true);
  view.setUint16(32, blockAlign, true);
  view.setUint16(34, 16, true);
  ascii(36, "data");
  view.setUint32(40, dataBytes, true);
  if (p.frequency) {
    for (let i = 0; i < frames; i++) {
      const sample = Math.round(Math.sin((2 * Math.PI * p.frequency * i) / p.sampleRate) * 8000);
      for (let c = 0; c < p.channels; c++) view.setInt16(44 + i * blockAlign + c * 2, sample, true);
    }
  }
  return bytes;
}
