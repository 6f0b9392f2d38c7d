/**
 * Audio measurements in plain TypeScript on 16-bit PCM WAV files: reading/writing WAV, a YIN
 * fundamental-frequency tracker (median f0 of a voice), the spectral centroid (timbre
 * brightness), and duration. Used by voice profiles, clone pitch matching and the tests.
 */
import { readFile, writeFile } from "node:fs/promises";
import { fft } from "./fft.ts";

export interface Pcm {
  sampleRate: number;
  /** Mono samples in [-1, 1] (the first channel of a multichannel file). */
  samples: Float32Array;
}

/** Parses a RIFF/WAVE file with 16-bit PCM data (any channel count; the first channel is kept). */
export function parseWav(buffer: Buffer): Pcm {
  if (buffer.length < 12 || buffer.toString("ascii", 0, 4) !== "RIFF" || buffer.toString("ascii", 8, 12) !== "WAVE") {
    throw new Error("not a RIFF/WAVE file");
  }
  let offset = 12;
  let sampleRate = 0;
  let channels = 0;
  let bits = 0;
  let format = 0;
  while (offset + 8 <= buffer.length) {
    const id = buffer.toString("ascii", offset, offset + 4);
    let size = buffer.readUInt32LE(offset + 4);
    const body = offset + 8;
    if (id === "fmt ") {
      format = buffer.readUInt16LE(body);
      channels = buffer.readUInt16LE(body + 2);
      sampleRate = buffer.readUInt32LE(body + 4);
      bits = buffer.readUInt16LE(body + 14);
      if (format === 0xfffe && size >= 40) format = buffer.readUInt16LE(body + 24); // WAVE_FORMAT_EXTENSIBLE
    } else if (id === "data") {
      if (format !== 1 || bits !== 16 || channels < 1)
        throw new Error(`unsupported WAV format (format ${format}, ${bits} bits)`);
      // Streamed WAVs (pico2wave, ffmpeg to a pipe) may carry a 0 or 0xFFFFFFFF size.
      if (size === 0 || size === 0xffffffff || body + size > buffer.length) size = buffer.length - body;
      const frames = Math.floor(size / (2 * channels));
      const samples = new Float32Array(frames);
      for (let i = 0; i < frames; i++) samples[i] = buffer.readInt16LE(body + i * 2 * channels) / 32768;
      return { sampleRate, samples };
    }
    offset = body + size + (size % 2);
  }
  throw new Error("WAV file without a data chunk");
}

export async function readWav(file: string): Promise<Pcm> {
  return parseWav(await readFile(file));
}

/** A 16-bit PCM mono WAV. */
export function encodeWav(pcm: Pcm): Buffer {
  const n = pcm.samples.length;
  const out = Buffer.alloc(44 + n * 2);
  out.write("RIFF", 0, "ascii");
  out.writeUInt32LE(36 + n * 2, 4);
  out.write("WAVE", 8, "ascii");
  out.write("fmt ", 12, "ascii");
  out.writeUInt32LE(16, 16);
  out.writeUInt16LE(1, 20);
  out.writeUInt16LE(1, 22);
  out.writeUInt32LE(pcm.sampleRate, 24);
  out.writeUInt32LE(pcm.sampleRate * 2, 28);
  out.writeUInt16LE(2, 32);
  out.writeUInt16LE(16, 34);
  out.write("data", 36, "ascii");
  out.writeUInt32LE(n * 2, 40);
  for (let i = 0; i < n; i++) {
    const v = Math.max(-1, Math.min(1, pcm.samples[i]!));
    out.writeInt16LE(Math.round(v * 32767), 44 + i * 2);
  }
  return out;
}

export async function writeWav(file: string, pcm: Pcm): Promise<void> {
  await writeFile(file, encodeWav(pcm));
}

export function durationSeconds(pcm: Pcm): number {
  return pcm.samples.length / pcm.sampleRate;
}

export interface PitchStats {
  /** Median f0 of the voiced frames, Hz (0 when nothing is voiced). */
  median: number;
  /** 10th and 90th percentiles of f0, Hz. */
  p10: number;
  p90: number;
  /** Seconds of voiced frames. */
  voicedSeconds: number;
  /** f0 of each voiced frame with its time (s). */
  frames: { time: number; f0: number }[];
}

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return 0;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

/**
 * YIN f0 tracker (de Cheveigné & Kawahara 2002): 40 ms frames every 10 ms, f0 between `minHz`
 * and `maxHz`, cumulative-mean-normalised difference with an absolute threshold and parabolic
 * interpolation. Frames quieter than 30 dB under the loudest one, or without a clear period,
 * are unvoiced.
 */
export function pitchStats(pcm: Pcm, minHz = 60, maxHz = 450): PitchStats {
  const { samples, sampleRate } = pcm;
  const window = Math.round(sampleRate * 0.04);
  const hop = Math.round(sampleRate * 0.01);
  const minLag = Math.max(2, Math.floor(sampleRate / maxHz));
  const maxLag = Math.min(window - 1, Math.ceil(sampleRate / minHz));
  const starts: number[] = [];
  const rms: number[] = [];
  for (let start = 0; start + window + maxLag <= samples.length; start += hop) {
    let sum = 0;
    for (let i = start; i < start + window; i++) sum += samples[i]! * samples[i]!;
    starts.push(start);
    rms.push(Math.sqrt(sum / window));
  }
  const loudest = Math.max(0, ...rms);
  const gate = Math.max(loudest * 10 ** (-30 / 20), 1e-4);
  const diff = new Float64Array(maxLag + 1);
  const frames: { time: number; f0: number }[] = [];
  for (let k = 0; k < starts.length; k++) {
    if (rms[k]! < gate) continue;
    const start = starts[k]!;
    for (let tau = 1; tau <= maxLag; tau++) {
      let d = 0;
      for (let i = start; i < start + window; i++) {
        const delta = samples[i]! - samples[i + tau]!;
        d += delta * delta;
      }
      diff[tau] = d;
    }
    // Cumulative mean normalised difference.
    let running = 0;
    const cmnd = new Float64Array(maxLag + 1);
    cmnd[0] = 1;
    for (let tau = 1; tau <= maxLag; tau++) {
      running += diff[tau]!;
      cmnd[tau] = running > 0 ? (diff[tau]! * tau) / running : 1;
    }
    let best = -1;
    for (let tau = minLag; tau <= maxLag; tau++) {
      if (cmnd[tau]! < 0.15) {
        while (tau + 1 <= maxLag && cmnd[tau + 1]! < cmnd[tau]!) tau++;
        best = tau;
        break;
      }
    }
    if (best === -1) continue;
    let lag = best;
    if (best > minLag && best < maxLag) {
      const a = cmnd[best - 1]!;
      const b = cmnd[best]!;
      const c = cmnd[best + 1]!;
      const denom = a - 2 * b + c;
      if (denom !== 0) lag = best + (0.5 * (a - c)) / denom;
    }
    frames.push({ time: (start + window / 2) / sampleRate, f0: sampleRate / lag });
  }
  const sorted = frames.map((f) => f.f0).sort((a, b) => a - b);
  return {
    median: quantile(sorted, 0.5),
    p10: quantile(sorted, 0.1),
    p90: quantile(sorted, 0.9),
    voicedSeconds: frames.length * (hop / sampleRate),
    frames,
  };
}

/**
 * Mean spectral centroid (Hz) of the loud frames (within 30 dB of the loudest), 1024-sample
 * Hann windows, up to 8 kHz: a brightness measure of the timbre.
 */
export function spectralCentroid(pcm: Pcm): number {
  const { samples, sampleRate } = pcm;
  const n = 1024;
  const hop = 512;
  const hann = new Float64Array(n).map((_, i) => 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / (n - 1)));
  const energies: number[] = [];
  const centroids: number[] = [];
  const maxBin = Math.min(n / 2, Math.floor((8000 * n) / sampleRate));
  for (let start = 0; start + n <= samples.length; start += hop) {
    const re = new Float64Array(n);
    const im = new Float64Array(n);
    for (let i = 0; i < n; i++) re[i] = samples[start + i]! * hann[i]!;
    fft(re, im);
    let weighted = 0;
    let total = 0;
    for (let k = 1; k < maxBin; k++) {
      const mag = Math.hypot(re[k]!, im[k]!);
      weighted += mag * ((k * sampleRate) / n);
      total += mag;
    }
    energies.push(total);
    centroids.push(total > 0 ? weighted / total : 0);
  }
  const loudest = Math.max(0, ...energies);
  let sum = 0;
  let count = 0;
  for (let i = 0; i < energies.length; i++) {
    if (energies[i]! >= loudest * 10 ** (-30 / 20) && energies[i]! > 0) {
      sum += centroids[i]!;
      count++;
    }
  }
  return count > 0 ? sum / count : 0;
}

/** Semitones from `from` Hz to `to` Hz. */
export function semitones(from: number, to: number): number {
  return 12 * Math.log2(to / from);
}
