/**
 * The CPU speech engines themselves, for real: Pico TTS -> pocketsphinx word error rate, the
 * four catalogue voices (gender, distinctness, intelligibility), the f0 tracker, Debian's
 * pocketsphinx test recordings. Skipped when the Debian packages are missing.
 */
import { readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pitchStats, readWav, spectralCentroid } from "../src/speech/audio.ts";
import { CATALOGUE_VOICES, type CatalogueVoice } from "@media-credits/wire/protocol";
import { splitSentences, VOICE_F0 } from "../src/speech/engines.ts";
import { LocalSynthesizer, PICO_MAX_WORD, picoText } from "../src/speech/local-tts.ts";
import { parsePocketsphinxOutput, PocketsphinxTranscriber } from "../src/speech/pocketsphinx.ts";
import { runTool, SpeechError, toMonoWav } from "../src/speech/proc.ts";
import { ffmpeg, scratchDir } from "./helpers.ts";
import {
  HAS_PICO,
  HAS_POCKETSPHINX,
  HAS_TESTDATA,
  SENTENCE_EN,
  SENTENCE_EN_2,
  SENTENCE_FR,
  skipUnlessEngine,
  TESTDATA,
  wer,
} from "./speech-helpers.ts";

let scratch: string;
beforeAll(() => {
  scratch = scratchDir();
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("text helpers", () => {
  it("parses pocketsphinx -time output: fillers out, alternates stripped, times monotonic", () => {
    const out = [
      "go forward ten meters",
      "<s> 0.390 0.460 1.000100",
      "go 0.470 0.640 0.997303",
      "<sil> 0.640 0.700 1.0",
      "forward(2) 0.650 1.170 0.996705",
      "[NOISE] 1.170 1.180 1.0",
      "ten 1.180 1.530 0.236604",
      "</s> 2.130 2.610 1.000000",
    ].join("\n");
    expect(parsePocketsphinxOutput(out)).toEqual([
      { text: "go", start: 0.47, end: 0.64 },
      { text: "forward", start: 0.65, end: 1.17 },
      { text: "ten", start: 1.18, end: 1.53 },
    ]);
  });

  it("splits long text into sentences and bounded pieces", () => {
    expect(splitSentences("Bonjour. Ça va ? Oui!\n\nFin")).toEqual(["Bonjour.", "Ça va ?", "Oui!", "Fin"]);
    const long = `${"mot ".repeat(200)}fin.`;
    const pieces = splitSentences(long, 100);
    expect(pieces.every((p) => p.length <= 100)).toBe(true);
    expect(pieces.join(" ")).toBe(long.trim());
  });

  it("cuts every token past Pico's word bound, keeping all the characters in order", () => {
    const text = `Bonjour ${"é".repeat(300)} ${"éa".repeat(64)}, fin & 😀${"x".repeat(45)}.`;
    const out = picoText(text, "et");
    const tokens = out.split(" ");
    expect(Math.max(...tokens.map((t) => Array.from(t).length))).toBe(PICO_MAX_WORD);
    expect(out.replace(/ /g, "")).toBe(text.replace(/&/g, "et").replace(/ /g, ""));
    expect(picoText("un mot <b>court</b>", "et")).toBe("un mot b court /b");
  });

  it("kills a program that outlives its time bound and says so", async () => {
    const started = performance.now();
    const run = runTool("sleep", ["30"], { timeoutMs: 300, label: "sleeper" });
    await expect(run).rejects.toThrow(SpeechError);
    await expect(run).rejects.toThrow("sleeper did not finish within 1 s");
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it("measures the f0 of a synthetic tone within 2 %", async () => {
    const file = path.join(scratch, "tone.wav");
    await ffmpeg([
      "-f",
      "lavfi",
      "-i",
      "sine=frequency=147:duration=2",
      "-ar",
      "16000",
      "-ac",
      "1",
      "-c:a",
      "pcm_s16le",
      file,
    ]);
    const stats = pitchStats(await readWav(file));
    expect(Math.abs(stats.median - 147) / 147).toBeLessThan(0.02);
    expect(stats.voicedSeconds).toBeGreaterThan(1.5);
  });
});

describe.skipIf(skipUnlessEngine("pico", HAS_PICO) || skipUnlessEngine("pocketsphinx", HAS_POCKETSPHINX))(
  "local TTS + pocketsphinx",
  () => {
    const tts = new LocalSynthesizer({ ffmpeg: "ffmpeg" });
    const asr = new PocketsphinxTranscriber();
    const measured: Record<string, { f0: number; centroid: number; wer: number; seconds: number }> = {};

    async function speakAndHear(voice: CatalogueVoice, text: string, language = "en") {
      const out = path.join(scratch, `${voice}-${language}-${text.length}.wav`);
      let t = performance.now();
      await tts.synthesize(text, voice, language, out);
      const ttsSeconds = (performance.now() - t) / 1000;
      const pcm = await readWav(out);
      expect(pcm.sampleRate).toBe(24_000);
      const seconds = pcm.samples.length / pcm.sampleRate;
      const wav16 = `${out}.16k.wav`;
      await toMonoWav("ffmpeg", out, wav16, 16_000);
      t = performance.now();
      const transcript = await asr.transcribe(wav16, "en");
      const asrSeconds = (performance.now() - t) / 1000;
      return { out, pcm, seconds, transcript, ttsRtf: ttsSeconds / seconds, asrRtf: asrSeconds / seconds };
    }

    it("speaks an English sentence that pocketsphinx transcribes (WER, word times)", async () => {
      const { seconds, transcript, ttsRtf, asrRtf } = await speakAndHear("lea", SENTENCE_EN);
      const error = wer(SENTENCE_EN, transcript.text);
      console.log(
        `lea en: ${seconds.toFixed(2)} s, WER ${(error * 100).toFixed(0)} %, TTS RTF ${ttsRtf.toFixed(3)}, pocketsphinx RTF ${asrRtf.toFixed(3)}: "${transcript.text}"`,
      );
      expect(seconds).toBeGreaterThan(2.5);
      expect(seconds).toBeLessThan(7);
      expect(transcript.language).toBe("en");
      expect(error).toBeLessThanOrEqual(0.35);
      let last = 0;
      for (const w of transcript.words) {
        expect(w.start).toBeGreaterThanOrEqual(last);
        expect(w.end).toBeGreaterThanOrEqual(w.start);
        expect(w.end).toBeLessThanOrEqual(seconds + 0.05);
        last = w.end;
      }
      expect(transcript.text).toBe(transcript.words.map((w) => w.text).join(" "));
    });

    it("makes four distinct voices, female/male as sold, each intelligible", async () => {
      for (const voice of CATALOGUE_VOICES) {
        const texts = [SENTENCE_EN, SENTENCE_EN_2];
        let errors = 0;
        let f0 = 0;
        let centroid = 0;
        let seconds = 0;
        for (const text of texts) {
          const heard = await speakAndHear(voice, text);
          errors += wer(text, heard.transcript.text);
          f0 += pitchStats(heard.pcm).median / texts.length;
          centroid += spectralCentroid(heard.pcm) / texts.length;
          seconds += heard.seconds;
        }
        measured[voice] = { f0, centroid, wer: errors / texts.length, seconds };
      }
      console.log("voices (en):", JSON.stringify(measured));
      const { lea, camille, thomas, gilles } = measured as Record<CatalogueVoice, (typeof measured)[string]>;
      // Gender: both female voices well above both male voices (> 4 semitones apart).
      expect(Math.min(lea.f0, camille.f0)).toBeGreaterThan(Math.max(thomas.f0, gilles.f0) * 1.26);
      expect(Math.max(thomas.f0, gilles.f0)).toBeLessThan(140);
      expect(Math.min(lea.f0, camille.f0)).toBeGreaterThan(150);
      // Distinct within each gender (pitch at least ~2 semitones apart, or timbre).
      expect(camille.f0 / lea.f0).toBeGreaterThan(1.12);
      expect(thomas.f0 / gilles.f0).toBeGreaterThan(1.12);
      // Intelligible: mean WER over two sentences.
      for (const voice of CATALOGUE_VOICES) expect(measured[voice]!.wer, voice).toBeLessThanOrEqual(0.5);
    });

    it("speaks French in the four voices near their nominal pitch", async () => {
      const f0s: Record<string, number> = {};
      for (const voice of CATALOGUE_VOICES) {
        const out = path.join(scratch, `${voice}-fr.wav`);
        await tts.synthesize(SENTENCE_FR, voice, "fr", out);
        f0s[voice] = pitchStats(await readWav(out)).median;
        expect(Math.abs(f0s[voice] - VOICE_F0[voice].f0) / VOICE_F0[voice].f0, voice).toBeLessThan(0.15);
      }
      console.log("voices (fr) median f0:", JSON.stringify(f0s));
    });

    it("speaks long text sentence by sentence", async () => {
      const text = Array.from({ length: 6 }, (_, i) => `Phrase numéro ${i + 1}, courte et simple.`).join(" ");
      const out = path.join(scratch, "long.wav");
      await tts.synthesize(text, "thomas", "fr", out);
      const pcm = await readWav(out);
      expect(pcm.samples.length / pcm.sampleRate).toBeGreaterThan(8);
    });

    it("speaks words long enough to hang Pico whole (300 x é, 64 x éa), in about their length", async () => {
      const out = path.join(scratch, "long-words.wav");
      const started = performance.now();
      await tts.synthesize(`Début ${"é".repeat(300)} puis ${"éa".repeat(64)} fin.`, "lea", "fr", out);
      expect(performance.now() - started).toBeLessThan(30_000);
      const pcm = await readWav(out);
      // 300 + 128 spoken vowels: several seconds of speech, not an empty or clipped file.
      expect(pcm.samples.length / pcm.sampleRate).toBeGreaterThan(5);
    });

    it("refuses an unsupported TTS language", async () => {
      await expect(tts.synthesize("hello", "lea", "ja", path.join(scratch, "ja.wav"))).rejects.toThrow(
        /'ja' is not supported/,
      );
    });
  },
);

describe.skipIf(
  skipUnlessEngine("pocketsphinx", HAS_POCKETSPHINX) || skipUnlessEngine("pocketsphinx-testdata", HAS_TESTDATA),
)("pocketsphinx on Debian's pocketsphinx-testdata recordings", () => {
  it("transcribes goforward.raw", async () => {
    const wav = path.join(scratch, "goforward.wav");
    await ffmpeg(["-f", "s16le", "-ar", "16000", "-ac", "1", "-i", `${TESTDATA}/goforward.raw`, wav]);
    const transcript = await new PocketsphinxTranscriber().transcribe(wav, "auto");
    expect(wer("go forward ten meters", transcript.text)).toBeLessThanOrEqual(0.25);
  });

  it("transcribes a LibriVox read-speech recording (real voice) at a WER bound", async () => {
    const dir = `${TESTDATA}/librivox`;
    const lines = readFileSync(`${dir}/transcription`, "utf8").trim().split("\n");
    const line = lines[0]!; // "<text> (<fileid>)"
    const match = /^(.*)\(([^)]+)\)\s*$/.exec(line);
    if (!match) return;
    const reference = match[1]!.replace(/<\/?s>/g, "").trim();
    const file = `${dir}/${match[2]!.trim()}.wav`;
    const wav = path.join(scratch, "librivox.wav");
    await toMonoWav("ffmpeg", file, wav, 16_000);
    const t = performance.now();
    const transcript = await new PocketsphinxTranscriber().transcribe(wav, "en");
    const seconds = (await readWav(wav)).samples.length / 16_000;
    const error = wer(reference, transcript.text);
    console.log(
      `librivox ${seconds.toFixed(1)} s: WER ${(error * 100).toFixed(0)} %, RTF ${((performance.now() - t) / 1000 / seconds).toFixed(2)}`,
    );
    expect(error).toBeLessThanOrEqual(0.6);
  });
});
