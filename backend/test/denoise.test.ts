/**
 * RNNoise over a raw file in place, 5 s at a time (backend/src/denoise.ts), against the whole
 * buffer through one stream (packages/wire/src/rnnoise.ts): the same samples, the input's length and timing,
 * the tone kept and the noise of its pauses gone. Signals made by native ffmpeg.
 */
import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RNNOISE_PRIME_SECONDS, RNNOISE_SAMPLE_RATE, RnnoiseStream } from "@media-credits/wire/rnnoise";
import { parseJobRequest } from "@media-credits/wire/protocol";
import { type Fixture, jobBody } from "./helpers.ts";
import { denoiseRawFile } from "../src/denoise.ts";

const RATE = 48_000;
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "denoise-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** Stereo, 12.34 s (not a whole number of RNNoise frames): white noise 30 dB under a 440 Hz tone on the left from 4 to 8 s, a click on the right at 6 s. */
function makeSignal(file: string): void {
  const left = "if(between(t,4,8),0.2*sin(2*PI*440*t),0)+0.0063*(2*random(0)-1)";
  const right = "if(between(t,6,6.0005),0.8,0)";
  execFileSync("ffmpeg", [
    "-v",
    "error",
    "-y",
    "-f",
    "lavfi",
    "-i",
    `aevalsrc='${left}|${right}':s=${RATE}:d=12.34`,
    "-c:a",
    "pcm_f32le",
    "-f",
    "f32le",
    file,
  ]);
}

/** The reference: the whole buffer through one stream at once, primed as the file run primes. */
function denoiseInPlace(module: WebAssembly.Module, samples: Float32Array, channels: number): void {
  const stream = new RnnoiseStream(module, channels);
  stream.prime(samples.subarray(0, RNNOISE_PRIME_SECONDS * RNNOISE_SAMPLE_RATE * channels));
  const head = stream.push(samples);
  samples.set(head);
  samples.set(stream.end(), head.length);
}

const levelDb = (samples: Float32Array, channel: number, from: number, to: number) => {
  let sum = 0;
  for (let i = Math.round(from * RATE); i < Math.round(to * RATE); i++) sum += samples[i * 2 + channel]! ** 2;
  return 10 * Math.log10(sum / ((to - from) * RATE) + 1e-20);
};

describe("denoiseRawFile", () => {
  it("denoises in place as one whole-buffer run does, keeping length, timing and the tone", async () => {
    const file = path.join(dir, "stereo.f32");
    makeSignal(file);
    const source = new Float32Array((await readFile(file)).buffer.slice(0));
    await denoiseRawFile(file, 2);
    const denoised = new Float32Array((await readFile(file)).buffer.slice(0));
    const module = new WebAssembly.Module(
      await readFile(createRequire(import.meta.url).resolve("@jitsi/rnnoise-wasm/dist/rnnoise.wasm")),
    );
    const whole = source.slice();
    denoiseInPlace(module, whole, 2);

    expect(denoised.length).toBe(source.length);
    expect(Buffer.from(denoised.buffer).equals(Buffer.from(whole.buffer))).toBe(true);
    // The click comes out where it went in (RNNoise's 10 ms lag taken back), within 1 ms.
    let peak = 0;
    for (let i = 0; i < denoised.length / 2; i++)
      if (Math.abs(denoised[i * 2 + 1]!) > Math.abs(denoised[peak * 2 + 1]!)) peak = i;
    expect(Math.abs(peak / RATE - 6)).toBeLessThan(0.001);
    // The tone within 1 dB; the noise of the pause after it at least 25 dB lower (29.8 measured).
    expect(Math.abs(levelDb(denoised, 0, 5, 7) - levelDb(source, 0, 5, 7))).toBeLessThan(1);
    const before = levelDb(source, 0, 9, 12);
    const after = levelDb(denoised, 0, 9, 12);
    console.log(
      `tone ${levelDb(source, 0, 5, 7).toFixed(1)} -> ${levelDb(denoised, 0, 5, 7).toFixed(1)} dB; pause noise ${before.toFixed(1)} -> ${after.toFixed(1)} dB`,
    );
    expect(before - after).toBeGreaterThan(25);
  });

  it("leaves a trailing part sample frame as it was, and an empty file empty", async () => {
    const file = path.join(dir, "odd.f32");
    const samples = new Float32Array(2 * 1000 + 1).fill(0.01);
    await writeFile(file, new Uint8Array(samples.buffer));
    await denoiseRawFile(file, 2);
    const out = new Float32Array((await readFile(file)).buffer.slice(0));
    expect(out.length).toBe(samples.length);
    expect(out.at(-1)).toBeCloseTo(0.01, 6);
    const empty = path.join(dir, "empty.f32");
    await writeFile(empty, new Uint8Array(0));
    await denoiseRawFile(empty, 1);
    expect((await readFile(empty)).byteLength).toBe(0);
  });
});

describe("the denoisePass field of an ffmpeg request", () => {
  const fixture = { baseUrl: "http://127.0.0.1:9" } as Fixture;
  const DECODE = ["-i", "in0.wav", "-map", "0:a:0", "-c:a", "pcm_f32le", "-f", "f32le", "denoised.f32"];
  const job = (
    denoisePass: unknown,
    args = ["-f", "f32le", "-ar", "48000", "-ac", "1", "-i", "denoised.f32", "out.wav"],
  ) =>
    parseJobRequest(
      jobBody(fixture, "dn", {
        args,
        inputs: [{ name: "in0.wav", url: `${fixture.baseUrl}/media/dn` }],
        output: { name: "out.wav", url: `${fixture.baseUrl}/upload/dn`, contentType: "audio/wav" },
        denoisePass,
      }),
    );

  it("lets the args read what the pass writes, and the pass read only the job's inputs", () => {
    expect(job({ args: DECODE, writes: "denoised.f32", channels: 1 })).toMatchObject({ ok: true });
    expect(job({ args: ["-i", "other.wav", ...DECODE.slice(2)], writes: "denoised.f32", channels: 1 })).toMatchObject({
      ok: false,
      message: expect.stringMatching(/^denoisePass: .*'other\.wav' is not one of the declared/),
    });
    // Without the pass, nothing declares the raw file the args read.
    expect(job(undefined)).toMatchObject({
      ok: false,
      message: expect.stringMatching(/'denoised\.f32' is not one of the declared/),
    });
  });

  it("refuses a pass that does not write raw floats into the file it names, or names a used file", () => {
    expect(
      job({ args: DECODE.slice(0, -3).concat(["-f", "wav", "denoised.f32"]), writes: "denoised.f32", channels: 1 }),
    ).toMatchObject({
      ok: false,
      message: expect.stringContaining("must end with -f f32le and the file it writes"),
    });
    expect(job({ args: DECODE, writes: "in0.wav", channels: 1 })).toMatchObject({ ok: false });
    expect(job({ args: DECODE, writes: "denoised.f32", channels: 0 })).toMatchObject({ ok: false });
  });
});
