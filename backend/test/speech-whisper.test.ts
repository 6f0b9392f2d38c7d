/**
 * whisper.cpp in process (TRANSCRIBE_ENGINE=whisper-cpp, @fugood/whisper.node). Without a ggml
 * model at WHISPER_MODEL_PATH only the binding and the start-up checks are exercised; with one,
 * Pico TTS -> whisper.cpp word error rate and word times.
 */
import { spawnSync } from "node:child_process";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readWav } from "../src/speech/audio.ts";
import { LocalSynthesizer } from "../src/speech/local-tts.ts";
import { toMonoWav } from "../src/speech/proc.ts";
import { createSpeechRuntime, loadSpeechConfig } from "../src/speech/runtime.ts";
import {
  isMultilingualModel,
  loadWhisperBinding,
  tokensToWords,
  WHISPER_LANGUAGES,
  WhisperCppTranscriber,
} from "../src/speech/whisper-cpp.ts";
import { BACKEND_DIR, scratchDir, SECRET } from "./helpers.ts";
import { HAS_PICO, SENTENCE_EN, skipUnlessEngine, wer } from "./speech-helpers.ts";

const MODEL = process.env.WHISPER_MODEL_PATH?.trim() ?? "";
const HAS_MODEL = MODEL !== "" && existsSync(MODEL);

let scratch: string;
beforeAll(() => {
  scratch = scratchDir();
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("whisper.cpp binding and start-up checks (no model needed)", () => {
  it("imports @fugood/whisper.node and loads its native module on this platform", async () => {
    const mod = (await loadWhisperBinding("default")) as unknown as {
      loadWhisperModule: () => Promise<{ WhisperContext: unknown }>;
    };
    const native = await mod.loadWhisperModule();
    expect(typeof native.WhisperContext).toBe("function");
  });

  it("maps one-token segments to words with monotonic times, annotations dropped", () => {
    const words = tokensToWords([
      { text: " [BLANK_AUDIO]", t0: 0, t1: 100 },
      { text: " The", t0: 120, t1: 300 },
      { text: " qu", t0: 300, t1: 420 },
      { text: "ick", t0: 420, t1: 560 },
      { text: " fox", t0: 500, t1: 800 },
      { text: ".", t0: 800, t1: 810 },
    ]);
    expect(words).toEqual([
      { text: "The", start: 0.12, end: 0.3 },
      { text: "quick", start: 0.3, end: 0.56 },
      { text: "fox.", start: 0.56, end: 0.81 },
    ]);
  });

  it("tells multilingual models from English-only ones by name", () => {
    expect(isMultilingualModel("/m/ggml-base.bin")).toBe(true);
    expect(isMultilingualModel("/m/ggml-large-v3-turbo-q5_0.bin")).toBe(true);
    expect(isMultilingualModel("/m/ggml-base.en.bin")).toBe(false);
    expect(isMultilingualModel("/m/ggml-tiny.en-q5_1.bin")).toBe(false);
    expect(new WhisperCppTranscriber({ modelPath: "/m/ggml-base.bin" }).languages).toEqual(WHISPER_LANGUAGES);
    expect(new WhisperCppTranscriber({ modelPath: "/m/ggml-base.en.bin" }).languages).toEqual(["en"]);
  });

  it("refuses TRANSCRIBE_ENGINE=whisper-cpp without WHISPER_MODEL_PATH", () => {
    expect(() => loadSpeechConfig({ TRANSCRIBE_ENGINE: "whisper-cpp" })).toThrow(
      /TRANSCRIBE_ENGINE=whisper-cpp needs WHISPER_MODEL_PATH/,
    );
  });

  it("refuses to start the engine when the model is absent or not a ggml file", async () => {
    const absent = loadSpeechConfig({
      TRANSCRIBE_ENGINE: "whisper-cpp",
      WHISPER_MODEL_PATH: path.join(scratch, "nope.bin"),
    });
    await expect(createSpeechRuntime(absent, "ffmpeg", {})).rejects.toThrow(
      /WHISPER_MODEL_PATH .*nope\.bin does not exist/,
    );
    const junk = path.join(scratch, "junk.bin");
    writeFileSync(junk, "not a model at all");
    const bad = loadSpeechConfig({ TRANSCRIBE_ENGINE: "whisper-cpp", WHISPER_MODEL_PATH: junk });
    await expect(createSpeechRuntime(bad, "ffmpeg", {})).rejects.toThrow(/not a whisper\.cpp ggml model/);
  });

  it("the server process exits 1 with the reason when the model is missing", () => {
    const base = {
      PATH: process.env.PATH,
      BACKEND_SECRET: SECRET,
      PORT: "0",
      HOST: "127.0.0.1",
      TRANSCRIBE_ENGINE: "whisper-cpp",
    };
    for (const [env, reason] of [
      [{ ...base }, /needs WHISPER_MODEL_PATH/],
      [{ ...base, WHISPER_MODEL_PATH: path.join(scratch, "absent.bin") }, /absent\.bin does not exist/],
    ] as const) {
      const run = spawnSync(process.execPath, ["src/server.ts"], {
        cwd: BACKEND_DIR,
        env,
        encoding: "utf8",
        timeout: 20_000,
      });
      expect(run.status).toBe(1);
      expect(run.stderr).toMatch(reason);
    }
  });
});

describe("whisper.cpp transcription with a model", () => {
  // CI may lack the model (CI_MAY_LACK in test/helpers/engines.ts), not Pico, which makes the sentence.
  if (skipUnlessEngine("whisper-model", HAS_MODEL) || skipUnlessEngine("pico", HAS_PICO)) {
    it.skip("needs a ggml model at WHISPER_MODEL_PATH and pico2wave/rubberband", () => {});
    return;
  }
  const tts = new LocalSynthesizer({ ffmpeg: "ffmpeg" });
  const asr = new WhisperCppTranscriber({ modelPath: MODEL });
  afterAll(() => asr.close());

  it("transcribes a synthetic English sentence (WER < 30 %, monotonic word times)", { timeout: 300_000 }, async () => {
    const out = path.join(scratch, "lea-en.wav");
    await tts.synthesize(SENTENCE_EN, "lea", "en", out);
    const wav16 = `${out}.16k.wav`;
    await toMonoWav("ffmpeg", out, wav16, 16_000);
    const pcm = await readWav(wav16);
    const seconds = pcm.samples.length / pcm.sampleRate;
    const t = performance.now();
    const transcript = await asr.transcribe(wav16, "en");
    const rtf = (performance.now() - t) / 1000 / seconds;
    const error = wer(SENTENCE_EN, transcript.text);
    console.log(
      `whisper.cpp (${path.basename(MODEL)}): ${seconds.toFixed(2)} s, WER ${(error * 100).toFixed(0)} %, RTF ${rtf.toFixed(3)} (incl. model load): "${transcript.text}"`,
    );
    expect(transcript.language).toBe("en");
    expect(error).toBeLessThan(0.3);
    expect(transcript.words.length).toBeGreaterThan(5);
    let last = 0;
    for (const w of transcript.words) {
      expect(w.start).toBeGreaterThanOrEqual(last);
      expect(w.end).toBeGreaterThanOrEqual(w.start);
      expect(w.end).toBeLessThanOrEqual(seconds + 0.5);
      last = w.end;
    }
    expect(transcript.text).toBe(transcript.words.map((w) => w.text).join(" "));

    if (asr.detectsLanguage) {
      const auto = await asr.transcribe(wav16, "auto");
      expect(auto.language).toBe("en");
    }
  });
});
