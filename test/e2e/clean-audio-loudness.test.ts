/**
 * clean-audio's loudness targets (`targetLufs`, `truePeak`), on both engines, through the public
 * API: each result, measured by native ffmpeg's EBU R128 meter, must be within 0.5 LU of the
 * target with its true peak at or under the target's, for -23 (EBU R128), -16 (the default, a call
 * without the fields) and -14 LUFS (streaming). The price is the same whatever the target (billed
 * on the input's duration). Why the graph reaches them so: docs/decisions/0006-clean-audio-chain.md.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { skipUnlessEngine } from "../helpers/engines";
import { download, ebur128, generate, newClient, runTool, upload, type Client } from "./client";

const RATE = 48_000;

const engines = { wasm: "wasm (ffmpeg.wasm)", backend: "forced (native backend)" } as const;
type EngineName = keyof typeof engines;
const clients = {} as Record<EngineName, Client>;
const report: string[] = [];

beforeAll(async () => {
  clients.wasm = await newClient(inject("e2eWasmUrl"));
  clients.backend = await newClient(inject("e2eForcedBackendUrl"));
});
afterAll(() => console.log(`clean-audio loudness targets, both engines:\n${report.join("\n")}`));

/** The targets tested: the request's fields (none for the default) and what they mean. */
const targets = [
  { label: "-23 LUFS, -1 dBTP (EBU R128)", fields: { targetLufs: -23, truePeak: -1 }, lufs: -23, peak: -1 },
  { label: "-16 LUFS, -1.5 dBTP (the default)", fields: {}, lufs: -16, peak: -1.5 },
  { label: "-14 LUFS, -1.5 dBTP (streaming)", fields: { targetLufs: -14, truePeak: -1.5 }, lufs: -14, peak: -1.5 },
];

async function check(engine: EngineName, label: string, file: string, target: (typeof targets)[number]) {
  const client = clients[engine];
  const source = await upload(client, file);
  const job = await runTool(client, "clean-audio", { uploadId: source.uploadId, ...target.fields });
  const measured = ebur128(await download(client, job));
  report.push(
    `  ${label}, ${target.label} on ${engines[engine]}: ${measured.integrated.toFixed(1)} LUFS, ${measured.truePeak.toFixed(1)} dBTP (input ${ebur128(file).integrated.toFixed(1)} LUFS); ${job.creditsUsed} credits`,
  );
  expect(Math.abs(measured.integrated - target.lufs)).toBeLessThanOrEqual(0.5);
  expect(measured.truePeak).toBeLessThanOrEqual(target.peak);
  return job.creditsUsed;
}

describe("a voice stand-in (400 Hz + 3 kHz tones) over white noise", () => {
  let file = "";
  const credits = new Set<number>();
  beforeAll(() => {
    file = generate("clean-loudness-tones.wav", [
      "-f",
      "lavfi",
      "-i",
      `aevalsrc='(0.1*sin(2*PI*400*t)+0.05*sin(2*PI*3000*t))*(between(t,3,7)+between(t,9.5,14))':s=${RATE}:d=14`,
      "-f",
      "lavfi",
      "-i",
      `anoisesrc=a=0.01:c=white:r=${RATE}:d=14:seed=5`,
      "-filter_complex",
      "[0][1]amix=inputs=2:normalize=0",
      "-c:a",
      "pcm_s16le",
    ]);
  });
  afterAll(() => expect(credits.size).toBeLessThanOrEqual(1));

  for (const target of targets) {
    it.each(["backend", "wasm"] as const)(`on %s: ${target.label}`, async (engine) => {
      credits.add(await check(engine, "tones", file, target));
    });
  }
});

const hasFlite = spawnSync("flite", ["-lv"]).status === 0;

/**
 * flite's speech is peaky (17 dB from loudness to peak): -14 LUFS under -1.5 dBTP takes the
 * limiter's extra drive. The default is left out here: a call without the fields is today's
 * command, and on ffmpeg.wasm such speech ends at -16.5 (the largest gain that keeps the peak;
 * test/e2e/clean-audio-quality.test.ts checks it within 1 LU).
 */
// Skips only on a developer's machine without flite (the speech source); on CI, where
// scripts/setup-system.sh installs it, a missing flite fails the file (test/helpers/engines.ts).
describe.skipIf(skipUnlessEngine("flite", hasFlite))("flite speech over pink noise", () => {
  let file = "";
  beforeAll(() => {
    const dir = mkdtempSync(path.join(tmpdir(), "e2e-flite-loudness-"));
    const speech = path.join(dir, "speech.wav");
    execFileSync("flite", [
      "-t",
      "The quick brown fox jumps over the lazy dog. Clean audio should keep the voice at the loudness asked for.",
      "-o",
      speech,
    ]);
    file = generate("clean-loudness-speech.wav", [
      "-i",
      speech,
      "-f",
      "lavfi",
      "-i",
      `anoisesrc=a=0.05:c=pink:r=${RATE}:d=12:seed=3`,
      "-filter_complex",
      `[0]aresample=${RATE},volume=0.7,adelay=2000:all=1,apad=pad_dur=1[a];[a][1]amix=inputs=2:normalize=0:duration=first`,
      "-c:a",
      "pcm_s16le",
    ]);
  });

  for (const target of targets.filter((t) => t.lufs !== -16)) {
    it.each(["backend", "wasm"] as const)(`on %s: ${target.label}`, async (engine) => {
      await check(engine, "flite speech", file, target);
    });
  }
});
