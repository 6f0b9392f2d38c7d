/**
 * CPU text to speech: SVOX Pico (`pico2wave`) for the words, rubberband for the male voices'
 * timbre, ffmpeg to resample; the four catalogue voices are made from Pico's one voice per
 * language, and `clone` is the nearest catalogue voice moved to the sample's pitch (no real
 * cloning on CPU). Long text is spoken sentence by sentence.
 * How each voice is made, and the measurements: docs/decisions/0010-cpu-speech-engines.md.
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { encodeWav, parseWav } from "./audio.ts";
import { CATALOGUE_VOICES, type CatalogueVoice, type VoiceProfile } from "@media-credits/wire/protocol";
import { baseLanguage, splitSentences, type Synthesizer } from "./engines.ts";
import { runTool, SpeechError } from "./proc.ts";

/** Pico language per ISO 639-1 code, and its voice's median f0 (Hz, measured). */
const PICO_LANGUAGES: Record<string, { pico: string; f0: number; and: string }> = {
  fr: { pico: "fr-FR", f0: 191, and: "et" },
  en: { pico: "en-US", f0: 164, and: "and" },
  de: { pico: "de-DE", f0: 163, and: "und" },
  es: { pico: "es-ES", f0: 205, and: "y" },
  it: { pico: "it-IT", f0: 178, and: "e" },
};
const PICO_VARIANTS: Record<string, { pico: string; f0: number }> = {
  "en-gb": { pico: "en-GB", f0: 174 },
  "en-us": { pico: "en-US", f0: 164 },
};

interface Recipe {
  /** Target median f0: a factor of Pico's own (female voices) or Hz (male voices). */
  f0Factor?: number;
  f0Hz?: number;
  /** Formant shift in semitones (rubberband -p without -F), 0 for none. */
  formants: number;
  /** Pico speed level (100 = normal). */
  speed: number;
}

export const RECIPES: Record<CatalogueVoice, Recipe> = {
  lea: { f0Factor: 1, formants: 0, speed: 100 },
  camille: { f0Factor: 1.2, formants: 0, speed: 93 },
  thomas: { f0Hz: 122, formants: -3, speed: 100 },
  gilles: { f0Hz: 100, formants: -4, speed: 92 },
};

export const OUTPUT_RATE = 24_000;
const PICO_RATE = 16_000;
const PAUSE_SECONDS = 0.15;

export interface LocalTtsOptions {
  pico2wave?: string;
  rubberband?: string;
  ffmpeg: string;
  env?: NodeJS.ProcessEnv;
}

/**
 * Longest run of non-space characters handed to Pico. Pico never returns on some long tokens
 * (measured: 128 x "é", or 64 x "éa", in one word spin at full CPU for good), while random
 * accented words of 48 characters take under 0.2 s; no word of a real language comes near this.
 */
export const PICO_MAX_WORD = 40;

/**
 * Bound on one pico2wave run: normal speech takes about 3 ms per character here (2,100
 * characters in 0.7 s), so this only ends a run that hangs.
 */
export function picoTimeoutMs(characters: number): number {
  return 10_000 + 20 * characters;
}

/** Text fit for Pico's markup parser: no `<`/`>`, `&` spoken as a word, no token past PICO_MAX_WORD. */
export function picoText(text: string, and: string): string {
  return text
    .replace(/[<>]/g, " ")
    .replace(/&/g, ` ${and} `)
    .replace(/\S+/gu, (word) => breakWord(word, PICO_MAX_WORD))
    .replace(/\s+/g, " ")
    .trim();
}

/** `word` cut into pieces of at most `max` code points, joined by spaces. */
function breakWord(word: string, max: number): string {
  const chars = Array.from(word);
  if (chars.length <= max) return word;
  const pieces: string[] = [];
  for (let i = 0; i < chars.length; i += max) pieces.push(chars.slice(i, i + max).join(""));
  return pieces.join(" ");
}

export class LocalSynthesizer implements Synthesizer {
  readonly name = "local";
  readonly voices = CATALOGUE_VOICES;
  readonly languages = Object.keys(PICO_LANGUAGES);
  readonly clone = "cpu-match";
  #pico: string;
  #rubberband: string;
  #ffmpeg: string;
  #env: NodeJS.ProcessEnv | undefined;

  constructor(options: LocalTtsOptions) {
    this.#pico = options.pico2wave ?? "pico2wave";
    this.#rubberband = options.rubberband ?? "rubberband";
    this.#ffmpeg = options.ffmpeg;
    this.#env = options.env;
  }

  describe(): string {
    return "SVOX Pico (pico2wave) + rubberband";
  }

  #language(language: string): { pico: string; f0: number; and: string } {
    const lower = language.toLowerCase().replace("_", "-");
    const base = baseLanguage(lower);
    const entry = PICO_LANGUAGES[base];
    if (!entry) {
      throw new SpeechError(
        `text-to-speech language '${language}' is not supported by this backend (${this.languages.join(", ")})`,
      );
    }
    const variant = PICO_VARIANTS[lower];
    return variant ? { ...entry, ...variant } : entry;
  }

  async synthesize(
    text: string,
    voice: CatalogueVoice | "clone",
    language: string,
    outWav: string,
    profile?: VoiceProfile,
    signal?: AbortSignal,
  ): Promise<void> {
    const lang = this.#language(language);
    let recipe: Recipe;
    if (voice === "clone") {
      if (!profile) throw new SpeechError("voice 'clone' needs a cloneProfile (made by a voice-profile job)");
      recipe = { ...RECIPES[profile.nearestVoice], f0Factor: undefined, f0Hz: profile.f0Median };
    } else {
      recipe = RECIPES[voice];
    }
    const formantFactor = 2 ** (recipe.formants / 12);
    const targetF0 = recipe.f0Hz ?? lang.f0 * (recipe.f0Factor ?? 1);
    // Pico's pitch level moves f0 only; rubberband's shift moves f0 and formants together.
    let picoFactor = targetF0 / (lang.f0 * formantFactor);
    const clamped = Math.min(2, Math.max(0.5, picoFactor));
    const extraSemitones = 12 * Math.log2(picoFactor / clamped); // beyond Pico's range: rubberband -F
    picoFactor = clamped;
    const pitchLevel = Math.round(picoFactor * 100);

    const pieces = splitSentences(text);
    if (pieces.length === 0) throw new SpeechError("the text has nothing to speak");
    const dir = await mkdtemp(path.join(path.dirname(outWav), ".tts-"));
    try {
      const results: Float32Array[] = new Array(pieces.length);
      let next = 0;
      const worker = async () => {
        while (next < pieces.length) {
          const index = next++;
          const file = path.join(dir, `piece-${index}.wav`);
          const words = picoText(pieces[index]!, lang.and);
          const markup = `<pitch level="${pitchLevel}"><speed level="${recipe.speed}">${words}</speed></pitch>`;
          await runTool(this.#pico, ["-l", lang.pico, "-w", file, markup], {
            signal,
            env: this.#env,
            label: "pico2wave",
            timeoutMs: picoTimeoutMs(words.length),
          });
          const pcm = parseWav(await readFile(file));
          if (pcm.sampleRate !== PICO_RATE) throw new SpeechError(`pico2wave wrote ${pcm.sampleRate} Hz audio`);
          results[index] = trimSilence(pcm.samples, PICO_RATE);
          await rm(file, { force: true });
        }
      };
      await Promise.all([worker(), worker()]);
      const pause = Math.round(PICO_RATE * PAUSE_SECONDS);
      const total = results.reduce((sum, r) => sum + r.length, 0) + pause * (results.length + 1);
      const joined = new Float32Array(total);
      let offset = pause;
      for (const r of results) {
        joined.set(r, offset);
        offset += r.length + pause;
      }
      let current = path.join(dir, "joined.wav");
      await writeFile(current, encodeWav({ sampleRate: PICO_RATE, samples: joined }));
      if (recipe.formants !== 0) {
        const shifted = path.join(dir, "formants.wav");
        await runTool(this.#rubberband, ["-q", "-p", String(recipe.formants), current, shifted], {
          signal,
          env: this.#env,
          label: "rubberband",
        });
        current = shifted;
      }
      if (Math.abs(extraSemitones) > 0.05) {
        const shifted = path.join(dir, "pitch.wav");
        await runTool(this.#rubberband, ["-q", "-F", "-p", extraSemitones.toFixed(3), current, shifted], {
          signal,
          env: this.#env,
          label: "rubberband",
        });
        current = shifted;
      }
      await runTool(
        this.#ffmpeg,
        [
          "-nostdin",
          "-hide_banner",
          "-loglevel",
          "error",
          "-y",
          "-i",
          current,
          "-ac",
          "1",
          "-ar",
          String(OUTPUT_RATE),
          "-c:a",
          "pcm_s16le",
          "-f",
          "wav",
          outWav,
        ],
        { signal, env: this.#env, label: "ffmpeg" },
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
}

/** Drops leading and trailing silence (below -45 dBFS), keeping 30 ms of margin. */
export function trimSilence(samples: Float32Array, rate: number): Float32Array {
  const threshold = 10 ** (-45 / 20);
  let first = 0;
  while (first < samples.length && Math.abs(samples[first]!) < threshold) first++;
  let last = samples.length - 1;
  while (last > first && Math.abs(samples[last]!) < threshold) last--;
  if (first >= last) return new Float32Array(0);
  const margin = Math.round(rate * 0.03);
  return samples.slice(Math.max(0, first - margin), Math.min(samples.length, last + margin + 1));
}
