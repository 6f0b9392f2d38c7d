/**
 * RNNoise, the recurrent neural network noise suppressor (Xiph, BSD-3-Clause), as compiled to
 * wasm by `@jitsi/rnnoise-wasm` (Apache-2.0, weights built in, 112 KB): clean-audio's denoiser,
 * run by the backend (backend/src/denoise.ts; the media Worker has no room left for it). The
 * caller hands over the compiled module, so this file needs no runtime API and runs in workerd as
 * well. Why RNNoise and the measurements: docs/decisions/0006-clean-audio-chain.md.
 *
 * RNNoise works on 480-sample frames at 48 kHz, one state per channel, on samples scaled like
 * 16-bit PCM; its output lags its input by one frame, which the stream takes back so the result
 * keeps the input's length and timing sample for sample.
 */

/** Samples per RNNoise frame (10 ms at 48 kHz), and the lag of its output behind its input. */
export const RNNOISE_FRAME = 480;
/** The only rate RNNoise works at. */
export const RNNOISE_SAMPLE_RATE = 48_000;
const PCM_SCALE = 32_768;

/** The exports of @jitsi/rnnoise-wasm 0.2.1's rnnoise.wasm, under their minified names (its rnnoise.js maps them). */
interface RnnoiseExports {
  c: WebAssembly.Memory;
  /** __wasm_call_ctors */
  d: () => void;
  /** rnnoise_create(model): a state for the built-in model when model is 0. */
  f: (model: number) => number;
  /** malloc */
  g: (bytes: number) => number;
  /** rnnoise_destroy */
  h: (state: number) => void;
  /** rnnoise_process_frame(state, out, in): the frame's voice probability. */
  j: (state: number, out: number, input: number) => number;
}

/** One instance of the wasm: its own memory, one state per channel, one frame buffer. */
function instantiate(module: WebAssembly.Module, channels: number) {
  let memory: WebAssembly.Memory | undefined;
  // Emscripten's two imports: emscripten_resize_heap and emscripten_memcpy_big.
  const imports = {
    a: {
      a: (requested: number) => {
        const grow = Math.ceil((requested - memory!.buffer.byteLength) / 65_536);
        if (grow > 0) memory!.grow(grow);
        return 1;
      },
      b: (dest: number, src: number, bytes: number) => {
        new Uint8Array(memory!.buffer).copyWithin(dest, src, src + bytes);
      },
    },
  };
  const exports = new WebAssembly.Instance(module, imports).exports as unknown as RnnoiseExports;
  memory = exports.c;
  exports.d();
  const states = Array.from({ length: channels }, () => exports.f(0));
  const frame = exports.g(RNNOISE_FRAME * 4);
  return { exports, states, frame };
}

/**
 * Denoises interleaved float samples (-1..1) at 48 kHz, chunk by chunk: `push` takes any number
 * of whole sample frames and gives back as many, `end` the rest. Together they give back exactly
 * what went in, denoised and without RNNoise's lag: the first `RNNOISE_FRAME` output samples of
 * each channel (the lag) are dropped and the last frame is flushed with silence.
 */
export class RnnoiseStream {
  readonly #channels: number;
  readonly #wasm: ReturnType<typeof instantiate>;
  /** Input not yet a whole RNNoise frame, per channel's interleaved position. */
  #pending: Float32Array;
  #pendingFrames = 0;
  /** Output frames still to drop (the lag). */
  #lagToDrop = RNNOISE_FRAME;
  /** Denoised output not yet handed back. */
  #ready: Float32Array[] = [];
  #framesIn = 0;
  #framesOut = 0;

  constructor(module: WebAssembly.Module, channels: number) {
    if (!Number.isInteger(channels) || channels < 1)
      throw new RangeError(`channels must be a positive integer, got ${channels}`);
    this.#channels = channels;
    this.#wasm = instantiate(module, channels);
    this.#pending = new Float32Array(RNNOISE_FRAME * channels);
  }

  /** Runs `samples` (interleaved, whole sample frames) through the network and drops what comes out: its state learns the recording. */
  prime(samples: Float32Array): void {
    const channels = this.#channels;
    const { exports, states, frame } = this.#wasm;
    const frames = Math.floor(samples.length / channels / RNNOISE_FRAME);
    for (let f = 0; f < frames; f++) {
      for (let channel = 0; channel < channels; channel++) {
        const heap = new Float32Array(exports.c.buffer, frame, RNNOISE_FRAME);
        const base = f * RNNOISE_FRAME * channels + channel;
        for (let i = 0; i < RNNOISE_FRAME; i++) heap[i] = samples[base + i * channels]! * PCM_SCALE;
        exports.j(states[channel]!, frame, frame);
      }
    }
  }

  /** Takes `samples` (interleaved, whole sample frames) and returns as many denoised samples as are ready. */
  push(samples: Float32Array): Float32Array {
    const channels = this.#channels;
    if (samples.length % channels !== 0) throw new RangeError("samples must hold whole sample frames");
    const frames = samples.length / channels;
    this.#framesIn += frames;
    let read = 0;
    while (read < frames) {
      const take = Math.min(RNNOISE_FRAME - this.#pendingFrames, frames - read);
      this.#pending.set(samples.subarray(read * channels, (read + take) * channels), this.#pendingFrames * channels);
      this.#pendingFrames += take;
      read += take;
      if (this.#pendingFrames === RNNOISE_FRAME) this.#processPending();
    }
    return this.#take(this.#framesIn);
  }

  /** The rest: the pending input and RNNoise's lag, pushed out with silence whose own output is dropped. */
  end(): Float32Array {
    const pendingFrames = this.#pendingFrames;
    this.#pending.fill(0, pendingFrames * this.#channels);
    this.#processPending();
    // A part frame of input leaves part of its output behind the lag: one more frame of silence brings it out.
    if (pendingFrames > 0) {
      this.#pending.fill(0);
      this.#processPending();
    }
    const out = this.#take(this.#framesIn);
    for (const state of this.#wasm.states) this.#wasm.exports.h(state);
    return out;
  }

  /** Denoises the pending frame, one channel at a time, into #ready. */
  #processPending(): void {
    const channels = this.#channels;
    const { exports, states, frame } = this.#wasm;
    const out = new Float32Array(RNNOISE_FRAME * channels);
    for (let channel = 0; channel < channels; channel++) {
      const heap = new Float32Array(exports.c.buffer, frame, RNNOISE_FRAME);
      for (let i = 0; i < RNNOISE_FRAME; i++) heap[i] = this.#pending[i * channels + channel]! * PCM_SCALE;
      exports.j(states[channel]!, frame, frame);
      // The memory may have grown: a fresh view.
      const denoised = new Float32Array(exports.c.buffer, frame, RNNOISE_FRAME);
      for (let i = 0; i < RNNOISE_FRAME; i++) out[i * channels + channel] = denoised[i]! / PCM_SCALE;
    }
    this.#pendingFrames = 0;
    const drop = Math.min(this.#lagToDrop, RNNOISE_FRAME);
    this.#lagToDrop -= drop;
    if (drop < RNNOISE_FRAME) this.#ready.push(out.subarray(drop * channels));
  }

  /** Hands back the ready output, at most up to `limit` frames out in total. */
  #take(limit: number): Float32Array {
    const channels = this.#channels;
    const available = this.#ready.reduce((sum, part) => sum + part.length, 0) / channels;
    const frames = Math.min(available, limit - this.#framesOut);
    const out = new Float32Array(frames * channels);
    let written = 0;
    while (written < out.length) {
      const part = this.#ready[0]!;
      const take = Math.min(part.length, out.length - written);
      out.set(part.subarray(0, take), written);
      written += take;
      if (take === part.length) this.#ready.shift();
      else this.#ready[0] = part.subarray(take);
    }
    this.#framesOut += frames;
    return out;
  }
}

/**
 * What the network hears before it starts: the recording's first seconds. From a fresh state it
 * lets steady noise through for seconds (white noise before the first word: 2 dB lower over the
 * first 2.5 s); primed on the first 10 s, 10 to 40 dB lower from 0.5 s on (docs/decisions/0006-clean-audio-chain.md).
 */
export const RNNOISE_PRIME_SECONDS = 10;
