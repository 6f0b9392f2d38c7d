/**
 * clean-audio's denoiser on the backend (protocol: DenoisePassSchema): RNNoise over the raw float
 * samples the denoise pass wrote, in place, a chunk at a time, so an hour of stereo (1.4 GB raw)
 * needs a few MB of memory. The stream itself is packages/wire/src/rnnoise.ts (runtime-neutral).
 */
import { open, readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { RNNOISE_FRAME, RNNOISE_PRIME_SECONDS, RNNOISE_SAMPLE_RATE, RnnoiseStream } from "@media-credits/wire/rnnoise";

/** Typed here: the backend's types lack the WebAssembly global (webassembly.d.ts), the Worker's declare it otherwise. */
const wasm = WebAssembly as unknown as { compile(bytes: Uint8Array): Promise<WebAssembly.Module> };

let compiled: Promise<WebAssembly.Module> | undefined;

function rnnoiseModule(): Promise<WebAssembly.Module> {
  compiled ??= readFile(createRequire(import.meta.url).resolve("@jitsi/rnnoise-wasm/dist/rnnoise.wasm")).then((bytes) =>
    wasm.compile(bytes),
  );
  return compiled;
}

/** RNNoise frames read at once: 5.12 s of sound. */
const CHUNK_FRAMES = 512;

/**
 * Denoises `file` (interleaved 32-bit float samples at 48 kHz, `channels` of them) in place. The
 * stream hands back what it took, one RNNoise frame later, so each write lands on bytes already read.
 */
export async function denoiseRawFile(file: string, channels: number, signal?: AbortSignal): Promise<void> {
  const module = await rnnoiseModule();
  const stream = new RnnoiseStream(module, channels);
  const handle = await open(file, "r+");
  try {
    const frameBytes = 4 * channels;
    const buffer = new Float32Array(CHUNK_FRAMES * RNNOISE_FRAME * channels);
    const bytes = new Uint8Array(buffer.buffer);
    // The network first hears the opening seconds (RNNOISE_PRIME_SECONDS), then the whole file from its start.
    const opening = new Float32Array(RNNOISE_PRIME_SECONDS * RNNOISE_SAMPLE_RATE * channels);
    const { bytesRead: openingBytes } = await handle.read(new Uint8Array(opening.buffer), 0, opening.byteLength, 0);
    stream.prime(opening.subarray(0, Math.floor(openingBytes / frameBytes) * channels));
    let readAt = 0;
    let writeAt = 0;
    const write = async (samples: Float32Array) => {
      await handle.write(
        new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength),
        0,
        samples.byteLength,
        writeAt,
      );
      writeAt += samples.byteLength;
    };
    for (;;) {
      signal?.throwIfAborted();
      const { bytesRead } = await handle.read(bytes, 0, bytes.byteLength, readAt);
      // A trailing part sample frame (the file was cut short) is left as it is.
      const whole = bytesRead - (bytesRead % frameBytes);
      if (whole === 0) break;
      readAt += whole;
      await write(stream.push(buffer.subarray(0, whole / 4)));
    }
    await write(stream.end());
  } finally {
    await handle.close();
  }
}
