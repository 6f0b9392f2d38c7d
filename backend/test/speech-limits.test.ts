/**
 * The speech engines' ffmpeg runs read the customer's upload like the backend's own ffmpeg jobs:
 * under the same address-space limit (FFMPEG_MEMORY_LIMIT_BYTES), applied with prlimit.
 */
import { rmSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runSpeechJob } from "../src/speech/speech-job.ts";
import { SpeechError } from "../src/speech/proc.ts";
import { ffmpeg, scratchDir } from "./helpers.ts";

let dir: string;
beforeAll(async () => {
  dir = scratchDir();
  await ffmpeg(["-f", "lavfi", "-i", "sine=frequency=200:duration=2", "-c:a", "aac", path.join(dir, "in.m4a")]);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const profileOf = (memoryLimitBytes?: number) =>
  runSpeechJob(
    { kind: "voice-profile", language: "en", inputs: [{ name: "in.m4a" }], output: { name: "profile.json" } },
    {
      workDir: dir,
      signal: new AbortController().signal,
      runtime: { ffmpeg: "ffmpeg", env: process.env, missing: {} },
      memoryLimitBytes,
      setPhase: () => {},
    },
  );

describe("speech decodes under the memory limit", () => {
  it("runs the decode of an upload under the job's limit", async () => {
    // 16 MiB of address space cannot even map ffmpeg's libraries: the decode fails, as an oversized one would.
    const limited = profileOf(16 * 1024 * 1024);
    await expect(limited).rejects.toBeInstanceOf(SpeechError);
    await expect(limited).rejects.toThrow(/the audio of the input could not be decoded/);
    // Under the default 3 GiB the same decode runs (the 2 s sample is then too short for a profile).
    await expect(profileOf(3 * 1024 ** 3)).rejects.toThrow(/is 2\.0 s long: a voice profile needs at least 10 s/);
  });
});
