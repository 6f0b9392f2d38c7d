/**
 * clean-audio's quality on ffmpeg.wasm, inside workerd (the engine of the media Worker): a voice
 * stand-in (two tones of the voice band) over steady noise, with noise-only passages at the start
 * and in a pause. The same measurements run against both engines through the API in
 * test/e2e/clean-audio-quality.test.ts; the figures and the chain are in src/media/commands/clean-audio.ts.
 */
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runFfmpegWasm } from "../../src/media-worker/ffmpeg-wasm";
import { probeR2Object } from "../../src/media/probe";
import { buildCleanAudioCommand } from "../../src/media/commands/clean-audio";
import { runCommandOnWasm } from "../../src/media-worker/wasm-command";
import { createFfmpegCore } from "../../wasm/ffmpeg-core";
import { bandLevelsDb, monoSamples, parseWav, rmsDb, toneLevelDb, voiceToNoiseDb } from "../helpers/audio-checks";

const MiB = 1024 * 1024;
const RATE = 48_000;
/** 14 s: noise only for 3 s, voice 3-7 s, a 2.5 s pause, voice 9.5-14 s. */
const VOICE = "(0.1*sin(2*PI*400*t)+0.05*sin(2*PI*3000*t))*(between(t,3,7)+between(t,9.5,14))";
const WINDOWS = { lead: [0.5, 2.5], voice: [3.5, 6.5], pause: [7.5, 9], voice2: [10, 13.5] } as const;

// Pay the wasm transfer (15-20 s) under the hook timeout rather than in the first test.
beforeAll(() => createFfmpegCore());

const report: string[] = [];
afterAll(() => console.log(`clean-audio on ffmpeg.wasm:\n${report.join("\n")}`));

/** A 16-bit mono WAV made by ffmpeg.wasm's own sources: the voice stand-in over `noise` (an anoisesrc). */
async function noisyVoice(noise: string): Promise<Uint8Array> {
  const name = "noisy.wav";
  const run = await runFfmpegWasm({
    args: [
      "-hide_banner",
      "-f",
      "lavfi",
      "-i",
      `aevalsrc='${VOICE}':s=${RATE}:d=14`,
      "-f",
      "lavfi",
      "-i",
      `${noise}:r=${RATE}:d=14:seed=5`,
      "-filter_complex",
      "[0][1]amix=inputs=2:normalize=0",
      "-c:a",
      "pcm_s16le",
      name,
    ],
    inputs: {},
    outputs: [name],
  });
  return run.outputs[name]!;
}

/** Integrated loudness (LUFS) by ffmpeg's ebur128 filter, on ffmpeg.wasm. */
async function integratedLoudness(wav: Uint8Array): Promise<number> {
  const run = await runFfmpegWasm({
    args: ["-hide_banner", "-nostats", "-i", "in.wav", "-af", "ebur128=framelog=verbose", "-f", "null", "-"],
    inputs: { "in.wav": wav },
    outputs: [],
  });
  const summary = run.log.slice(run.log.lastIndexOf("Summary:"));
  return Number(/I:\s+(-?[\d.]+) LUFS/.exec(summary)?.[1]);
}

interface Measured {
  leadGainDb: number;
  pauseGainDb: number;
  voiceChangeDb: number;
  tiltChangeDb: number;
  lufs: number;
  peakMiB: number;
}

/** Cleans `source` as the in-Worker engine does and measures the result against it. */
async function cleanAndMeasure(label: string, source: Uint8Array): Promise<Measured> {
  const key = `clean-audio-quality/${label}.wav`;
  await env.MEDIA.put(key, source);
  const probe = await probeR2Object(env.MEDIA, key, source.byteLength);
  const command = buildCleanAudioCommand({}, [
    { name: "in0.wav", filename: `${label}.wav`, sizeBytes: source.byteLength, probe },
  ]);
  const started = Date.now();
  const run = await runCommandOnWasm(command, { "in0.wav": source.slice() });
  const seconds = (Date.now() - started) / 1000;
  // Routing trusts the builder's estimate: the run must stay within it.
  expect(run.peakWasmBytes).toBeLessThanOrEqual(command.wasmHeapBytes);
  const output = run.outputs[command.outputName]!;

  const [before, after] = [parseWav(source), parseWav(output)];
  expect(after).toMatchObject({ sampleRate: RATE, channels: 1, bitsPerSample: 16 });
  expect(after.samples.length).toBe(before.samples.length);
  const [x, y] = [monoSamples(before), monoSamples(after)];
  const gain = (noise: readonly [number, number]) =>
    voiceToNoiseDb(y, RATE, [...WINDOWS.voice], [...noise]) - voiceToNoiseDb(x, RATE, [...WINDOWS.voice], [...noise]);
  const tilt = (samples: Float32Array) =>
    toneLevelDb(samples, RATE, 3000, ...WINDOWS.voice) - toneLevelDb(samples, RATE, 400, ...WINDOWS.voice);
  const measured: Measured = {
    leadGainDb: gain(WINDOWS.lead),
    pauseGainDb: gain(WINDOWS.pause),
    voiceChangeDb: rmsDb(y, RATE, ...WINDOWS.voice) - rmsDb(x, RATE, ...WINDOWS.voice),
    tiltChangeDb: tilt(y) - tilt(x),
    lufs: await integratedLoudness(output),
    peakMiB: run.peakWasmBytes / MiB,
  };
  // The two voice passages end at the same level: no drift of the gain along the file.
  expect(Math.abs(rmsDb(y, RATE, ...WINDOWS.voice2) - rmsDb(y, RATE, ...WINDOWS.voice))).toBeLessThan(1);
  // The voice band keeps its balance in the noise bands too (nothing above 3.4 kHz is added).
  const [voiceBand, above] = bandLevelsDb(y, RATE, ...WINDOWS.voice, [
    [300, 3400],
    [4000, 12000],
  ]);
  expect(voiceBand! - above!).toBeGreaterThan(30);
  report.push(
    `  ${label}: noise-only passages ${measured.leadGainDb.toFixed(1)} dB (start) and ${measured.pauseGainDb.toFixed(1)} dB (pause) lower relative to the voice, ` +
      `voice ${measured.voiceChangeDb >= 0 ? "+" : ""}${measured.voiceChangeDb.toFixed(1)} dB, 3 kHz vs 400 Hz ${measured.tiltChangeDb.toFixed(2)} dB, ` +
      `${measured.lufs.toFixed(1)} LUFS, wasm heap ${measured.peakMiB.toFixed(1)} MiB, ${seconds.toFixed(2)} s for both runs`,
  );
  return measured;
}

describe("clean-audio on ffmpeg.wasm, on a voice stand-in over steady noise", () => {
  it.each([
    ["white noise 23 dB under the voice", "anoisesrc=a=0.01:c=white"],
    ["pink noise 17 dB under the voice", "anoisesrc=a=0.06:c=pink"],
  ])(
    "%s: noise-only passages >= 10 dB lower relative to the voice, voice band intact, -16 LUFS",
    async (label, noise) => {
      const m = await cleanAndMeasure(label.replaceAll(" ", "-"), await noisyVoice(noise));
      expect(m.leadGainDb).toBeGreaterThanOrEqual(10);
      expect(m.pauseGainDb).toBeGreaterThanOrEqual(10);
      expect(Math.abs(m.tiltChangeDb)).toBeLessThan(1);
      // Measured by a first run, then one gain: the target within ebur128's rounding.
      expect(Math.abs(m.lufs - -16)).toBeLessThanOrEqual(0.3);
    },
  );
});

it("a stereo 44.1 kHz input keeps its channels and length, within the builder's heap estimate", async () => {
  const name = "stereo.wav";
  const generated = await runFfmpegWasm({
    args: [
      "-hide_banner",
      "-f",
      "lavfi",
      "-i",
      `aevalsrc='${VOICE}|0.8*(${VOICE})':s=44100:d=14`,
      "-f",
      "lavfi",
      "-i",
      "anoisesrc=a=0.01:c=white:r=44100:d=14:seed=5",
      "-filter_complex",
      "[1]asplit[n1][n2];[n1][n2]join=inputs=2:channel_layout=stereo[n];[0][n]amix=inputs=2:normalize=0",
      "-c:a",
      "pcm_s16le",
      name,
    ],
    inputs: {},
    outputs: [name],
  });
  const source = generated.outputs[name]!;
  await env.MEDIA.put("clean-audio-quality/stereo.wav", source);
  const probe = await probeR2Object(env.MEDIA, "clean-audio-quality/stereo.wav", source.byteLength);
  const command = buildCleanAudioCommand({}, [
    { name: "in0.wav", filename: name, sizeBytes: source.byteLength, probe },
  ]);
  const run = await runCommandOnWasm(command, { "in0.wav": source.slice() });
  expect(run.peakWasmBytes).toBeLessThanOrEqual(command.wasmHeapBytes);
  const out = parseWav(run.outputs[command.outputName]!);
  expect(out).toMatchObject({ sampleRate: RATE, channels: 2 });
  expect(Math.abs(out.durationSeconds - 14)).toBeLessThan(0.001);
  report.push(`  stereo 44.1 kHz: wasm heap ${(run.peakWasmBytes / MiB).toFixed(1)} MiB`);
});

it.each([
  ["5.1, a loud tone in the centre alone", "5.1", 2, 6],
  ["stereo, a loud tone on the left alone", "stereo", 0, 2],
])(
  "%s: the silent channels stay silent once the limiter works (ffmpeg 5.1's alimiter spread the tone over 5.1)",
  async (label, layout, toneChannel, channels) => {
    const name = "loud.wav";
    const generated = await runFfmpegWasm({
      args: [
        "-hide_banner",
        "-f",
        "lavfi",
        "-i",
        `sine=f=440:d=6:r=${RATE}`,
        "-af",
        `pan=${layout}|c${toneChannel}=c0,volume=18dB`,
        "-c:a",
        "pcm_s16le",
        name,
      ],
      inputs: {},
      outputs: [name],
    });
    const source = generated.outputs[name]!;
    const key = `clean-audio-quality/${label.replaceAll(/\W+/g, "-")}.wav`;
    await env.MEDIA.put(key, source);
    const probe = await probeR2Object(env.MEDIA, key, source.byteLength);
    expect(probe.audioChannels).toBe(channels);
    const command = buildCleanAudioCommand({}, [
      { name: "in0.wav", filename: name, sizeBytes: source.byteLength, probe },
    ]);
    const run = await runCommandOnWasm(command, { "in0.wav": source.slice() });
    expect(run.peakWasmBytes).toBeLessThanOrEqual(command.wasmHeapBytes);
    const out = parseWav(run.outputs[command.outputName]!);
    expect(out.channels).toBe(channels);
    for (let c = 0; c < channels; c++) {
      const level = rmsDb(monoSamples(out, c), RATE, 1, 5);
      if (c === toneChannel) expect(level).toBeGreaterThan(-25);
      else expect(level, `channel ${c}`).toBeLessThan(-80);
    }
    report.push(
      `  ${label}: tone channel ${rmsDb(monoSamples(out, toneChannel), RATE, 1, 5).toFixed(1)} dBFS, the others silent`,
    );
  },
);
