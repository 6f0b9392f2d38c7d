/**
 * STOI, short-time objective intelligibility (Taal, Hendriks, Heusdens, Jensen, IEEE TASLP 2011),
 * from the paper's description: a processed recording against the clean one, both at 10 kHz, one
 * value in about 0.4..1 (higher is more intelligible). Frames of 256 samples (Hann, half overlap,
 * FFT of 512), 15 third-octave bands from 150 Hz, frames more than 40 dB under the loudest clean
 * frame dropped (here in the STFT domain), 30-frame (384 ms) segments, the processed envelope
 * scaled to the clean one's energy and clipped at -15 dB SDR, then the correlation of the two
 * envelopes averaged over bands and segments. Used by bench/denoise.ts only; it matches the
 * reference implementations' ranking, not their third decimal.
 */
import { fft } from "../backend/src/speech/fft.ts";

export const STOI_RATE = 10_000;
const FRAME = 256;
const HOP = 128;
const NFFT = 512;
const BANDS = 15;
const LOWEST_CENTRE_HZ = 150;
const SEGMENT = 30;
const DYNAMIC_RANGE_DB = 40;
const BETA_DB = -15;

/** Band x frame envelopes of `signal` (third-octave magnitudes), frame energies alongside. */
function envelopes(signal: Float32Array): { bands: Float64Array[]; energyDb: number[] } {
  const window = Float64Array.from(
    { length: FRAME },
    (_, i) => 0.5 - 0.5 * Math.cos((2 * Math.PI * (i + 1)) / (FRAME + 1)),
  );
  const edges = Array.from({ length: BANDS }, (_, k) => {
    const centre = LOWEST_CENTRE_HZ * 2 ** (k / 3);
    return [centre * 2 ** (-1 / 6), centre * 2 ** (1 / 6)].map((hz) => Math.round((hz / STOI_RATE) * NFFT)) as [
      number,
      number,
    ];
  });
  const frames = Math.max(0, Math.floor((signal.length - FRAME) / HOP) + 1);
  const bands = Array.from({ length: BANDS }, () => new Float64Array(frames));
  const energyDb: number[] = [];
  for (let f = 0; f < frames; f++) {
    const re = new Float64Array(NFFT);
    const im = new Float64Array(NFFT);
    let energy = 0;
    for (let i = 0; i < FRAME; i++) {
      const value = signal[f * HOP + i]! * window[i]!;
      re[i] = value;
      energy += value * value;
    }
    energyDb.push(10 * Math.log10(energy + 1e-20));
    fft(re, im);
    edges.forEach(([from, to], band) => {
      let sum = 0;
      for (let bin = from; bin < to; bin++) sum += re[bin]! ** 2 + im[bin]! ** 2;
      bands[band]![f] = Math.sqrt(sum);
    });
  }
  return { bands, energyDb };
}

/** STOI of `processed` against `clean`, both mono at STOI_RATE and aligned sample for sample. */
export function stoi(clean: Float32Array, processed: Float32Array): number {
  const length = Math.min(clean.length, processed.length);
  const x = envelopes(clean.subarray(0, length));
  const y = envelopes(processed.subarray(0, length));
  const loudest = Math.max(...x.energyDb);
  const kept = x.energyDb.flatMap((db, f) => (db > loudest - DYNAMIC_RANGE_DB ? [f] : []));
  const clip = 10 ** (-BETA_DB / 20);
  let total = 0;
  let count = 0;
  for (let end = SEGMENT; end <= kept.length; end++) {
    const frames = kept.slice(end - SEGMENT, end);
    for (let band = 0; band < BANDS; band++) {
      const xs = frames.map((f) => x.bands[band]![f]!);
      const ys = frames.map((f) => y.bands[band]![f]!);
      const norm = (values: number[]) => Math.sqrt(values.reduce((sum, v) => sum + v * v, 0));
      const scale = norm(xs) / (norm(ys) || 1e-20);
      const yc = ys.map((v, i) => Math.min(v * scale, xs[i]! * (1 + clip)));
      const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;
      const mx = mean(xs);
      const my = mean(yc);
      const dx = xs.map((v) => v - mx);
      const dy = yc.map((v) => v - my);
      const denominator = norm(dx) * norm(dy);
      total += denominator > 0 ? dx.reduce((sum, v, i) => sum + v * dy[i]!, 0) / denominator : 0;
      count++;
    }
  }
  return count > 0 ? total / count : Number.NaN;
}
