/**
 * clean-audio really cleans, on both engines, through the public API: the same noisy input goes
 * to `wasm` (every command on ffmpeg.wasm in the media Worker) and to `forced` (every command on
 * the native backend). Each result is measured against
 * its input: noise-only passages (the first seconds and a pause) must end at least 10 dB lower
 * relative to the voice, the voice band must keep its balance (nothing muffled), the loudness
 * must reach -16 LUFS within 1 LU on both engines (each measures, then applies one gain). The chain
 * and the reasons are in src/media/commands/clean-audio.ts; the wasm side alone, with its heap, in
 * test/media/clean-audio-quality.test.ts.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { skipUnlessEngine } from "../helpers/engines";
import { bandLevelsDb, rmsDb, toneLevelDb, voiceToNoiseDb } from "../helpers/audio-checks";
import { download, generate, newClient, runTool, upload, type Client } from "./client";

const RATE = 48_000;
const MiB = 1024 * 1024;
type Window = [number, number];

/** Mono float samples of a file's first audio stream at 48 kHz, decoded by native ffmpeg. */
function decode(file: string): Float32Array {
  const raw = execFileSync(
    "ffmpeg",
    ["-v", "error", "-i", file, "-map", "0:a:0", "-ac", "1", "-ar", String(RATE), "-f", "f32le", "-"],
    { maxBuffer: 256 * MiB },
  );
  return new Float32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4);
}

/** Integrated loudness (LUFS) by native ffmpeg's EBU R128 meter. */
function integratedLoudness(file: string): number {
  const run = spawnSync(
    "ffmpeg",
    ["-hide_banner", "-nostats", "-i", file, "-af", "ebur128=framelog=verbose", "-f", "null", "-"],
    { encoding: "utf8" },
  );
  return Number(/I:\s+(-?[\d.]+) LUFS/.exec(run.stderr.slice(run.stderr.lastIndexOf("Summary:")))?.[1]);
}

interface Case {
  file: string;
  voice: Window;
  noise: { start: Window; pause: Window };
  /** Voice-band balance of a signal in the voice window, dB (higher band minus lower band). */
  balance: (samples: Float32Array) => number;
  /** The signal without noise, when the balance is judged against it rather than against the input. */
  reference?: string;
}

interface Result {
  startDb: number;
  pauseDb: number;
  balanceChangeDb: number;
  voiceDbfs: number;
  lufs: number;
  seconds: number;
}

const engines = { wasm: "wasm (ffmpeg.wasm)", backend: "forced (native backend)" } as const;
type EngineName = keyof typeof engines;
const clients = {} as Record<EngineName, Client>;
const report: string[] = [];

beforeAll(async () => {
  clients.wasm = await newClient(inject("e2eWasmUrl"));
  clients.backend = await newClient(inject("e2eForcedBackendUrl"));
});
afterAll(() => console.log(`clean-audio, both engines on the same inputs:\n${report.join("\n")}`));

async function cleanOn(engine: EngineName, label: string, c: Case): Promise<Result> {
  const client = clients[engine];
  const source = await upload(client, c.file);
  const started = Date.now();
  const output = await download(client, await runTool(client, "clean-audio", { uploadId: source.uploadId }));
  const seconds = (Date.now() - started) / 1000;
  const [x, y] = [decode(c.file), decode(output)];
  expect(Math.abs(y.length - x.length)).toBeLessThanOrEqual(RATE / 100); // same length, within 10 ms
  const reference = c.reference ? decode(c.reference) : x;
  const result: Result = {
    startDb: voiceToNoiseDb(y, RATE, c.voice, c.noise.start) - voiceToNoiseDb(x, RATE, c.voice, c.noise.start),
    pauseDb: voiceToNoiseDb(y, RATE, c.voice, c.noise.pause) - voiceToNoiseDb(x, RATE, c.voice, c.noise.pause),
    balanceChangeDb: c.balance(y) - c.balance(reference),
    voiceDbfs: rmsDb(y, RATE, ...c.voice),
    lufs: integratedLoudness(output),
    seconds,
  };
  const sign = (v: number) => `${v >= 0 ? "+" : ""}${v.toFixed(1)}`;
  report.push(
    `  ${label} on ${engines[engine]}: noise-only start ${result.startDb.toFixed(1)} dB and pause ${result.pauseDb.toFixed(1)} dB lower relative to the voice; ` +
      `voice ${sign(rmsDb(y, RATE, ...c.voice) - rmsDb(x, RATE, ...c.voice))} dB (${result.voiceDbfs.toFixed(1)} dBFS), band balance ${sign(result.balanceChangeDb)} dB; ` +
      `${result.lufs.toFixed(1)} LUFS (input ${integratedLoudness(c.file).toFixed(1)}); ${result.seconds.toFixed(1)} s`,
  );
  return result;
}

/** What every result must show, whatever the engine. */
function expectCleaned(result: Result, balanceTolerance: number): void {
  expect(result.startDb).toBeGreaterThanOrEqual(10);
  expect(result.pauseDb).toBeGreaterThanOrEqual(10);
  expect(Math.abs(result.balanceChangeDb)).toBeLessThanOrEqual(balanceTolerance);
  // Levelled, not muffled into the floor.
  expect(result.voiceDbfs).toBeGreaterThan(-26);
}

/**
 * The voice stand-in (400 Hz + 3 kHz tones, -22 dBFS RMS) over white noise of amplitude `noise`,
 * 14 s: noise only for 3 s, voice 3-7 s, a 2.5 s pause, voice 9.5-14 s.
 */
function tonesCase(name: string, noise: number): Case {
  const c: Case = {
    file: "",
    voice: [3.5, 6.5],
    noise: { start: [0.5, 2.5], pause: [7.5, 9] },
    balance: (s) => toneLevelDb(s, RATE, 3000, 3.5, 6.5) - toneLevelDb(s, RATE, 400, 3.5, 6.5),
  };
  beforeAll(() => {
    c.file = generate(name, [
      "-f",
      "lavfi",
      "-i",
      `aevalsrc='(0.1*sin(2*PI*400*t)+0.05*sin(2*PI*3000*t))*(between(t,3,7)+between(t,9.5,14))':s=${RATE}:d=14`,
      "-f",
      "lavfi",
      "-i",
      `anoisesrc=a=${noise}:c=white:r=${RATE}:d=14:seed=5`,
      "-filter_complex",
      "[0][1]amix=inputs=2:normalize=0",
      "-c:a",
      "pcm_s16le",
    ]);
  });
  return c;
}

describe("a voice stand-in (400 Hz + 3 kHz tones) over white noise 23 dB down", () => {
  const c = tonesCase("clean-quality-tones.wav", 0.01);

  it.each(["backend", "wasm"] as const)(
    "on %s: >= 10 dB less noise relative to the voice, both tones kept, -16 LUFS",
    async (engine) => {
      const result = await cleanOn(engine, "tones over white noise", c);
      expectCleaned(result, 1);
      expect(Math.abs(result.lufs - -16)).toBeLessThanOrEqual(1);
    },
  );
});

describe("the same stand-in 11 dB over white noise (where the chain before RNNoise left the noise 4.6 dB lower)", () => {
  const c = tonesCase("clean-quality-tones-11db.wav", 0.04);

  // RNNoise runs on the backend only (routing sends clean-audio there; the Worker has no room for its wasm).
  it.each(["backend"] as const)(
    "on %s: RNNoise takes the noise-only passages >= 40 dB further down, both tones kept",
    async (engine) => {
      const result = await cleanOn(engine, "tones 11 dB over white noise", c);
      expect(result.startDb).toBeGreaterThanOrEqual(40);
      expect(result.pauseDb).toBeGreaterThanOrEqual(40);
      // 1.6 dB measured (the 3 kHz tone against the 400 Hz one): RNNoise's band gains are coarse.
      expect(Math.abs(result.balanceChangeDb)).toBeLessThanOrEqual(2);
      expect(Math.abs(result.lufs - -16)).toBeLessThanOrEqual(1);
    },
  );
});

const hasFlite = spawnSync("flite", ["-lv"]).status === 0;

describe.skipIf(skipUnlessEngine("flite", hasFlite))("flite speech over pink noise about 17 dB down", () => {
  // Noise only for 3 s, a sentence, a 2.5 s pause, a sentence, 1 s of noise.
  const c: Case = { file: "", voice: [0, 0], noise: { start: [0.5, 2.5], pause: [0, 0] }, balance: () => 0 };
  beforeAll(() => {
    const dir = mkdtempSync(path.join(tmpdir(), "e2e-flite-"));
    const say = (name: string, text: string) => {
      const file = path.join(dir, name);
      execFileSync("flite", ["-t", text, "-o", file]);
      return {
        file,
        seconds: Number(
          execFileSync("ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", file], {
            encoding: "utf8",
          }),
        ),
      };
    };
    const one = say(
      "clean-quality-1.wav",
      "The quick brown fox jumps over the lazy dog. Clean audio should keep the voice.",
    );
    const two = say("clean-quality-2.wav", "Noise only passages must become much quieter, while the words stay clear.");
    const total = 3 + one.seconds + 2.5 + two.seconds + 1;
    const speech = `aevalsrc=0:s=${RATE}:d=3[s0];aevalsrc=0:s=${RATE}:d=2.5[s1];aevalsrc=0:s=${RATE}:d=1[s2];[0]aresample=${RATE}[a];[1]aresample=${RATE}[b];[s0][a][s1][b][s2]concat=n=5:v=0:a=1,volume=0.7`;
    c.reference = generate("clean-quality-speech.wav", [
      "-i",
      one.file,
      "-i",
      two.file,
      "-filter_complex",
      speech,
      "-c:a",
      "pcm_s16le",
    ]);
    c.file = generate("clean-quality-noisy-speech.wav", [
      "-i",
      c.reference,
      "-f",
      "lavfi",
      "-i",
      `anoisesrc=a=0.05:c=pink:r=${RATE}:d=${total.toFixed(3)}:seed=3`,
      "-filter_complex",
      "[0][1]amix=inputs=2:normalize=0:duration=first",
      "-c:a",
      "pcm_s16le",
    ]);
    c.voice = [3.2, 3 + one.seconds - 0.2];
    c.noise.pause = [3 + one.seconds + 0.5, 3 + one.seconds + 2];
    const bands: [number, number][] = [
      [300, 1000],
      [1000, 3400],
    ];
    c.balance = (s) => {
      const [low, high] = bandLevelsDb(s, RATE, ...c.voice, bands);
      return high! - low!;
    };
  });

  it.each(["backend", "wasm"] as const)(
    "on %s: >= 10 dB less noise relative to the voice, voice band within 2 dB of the clean speech",
    async (engine) => {
      const result = await cleanOn(engine, "speech over pink noise", c);
      expectCleaned(result, 2);
      // flite's speech is very peaky (17 dB from loudness to peak): both engines measure first, then cut.
      expect(Math.abs(result.lufs - -16)).toBeLessThanOrEqual(1);
    },
  );
});
