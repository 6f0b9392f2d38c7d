/**
 * Speech engines behind two interfaces, picked by configuration:
 *   Transcriber  pocketsphinx (CPU, English) | openai (any OpenAI-compatible server)
 *   Synthesizer  local (SVOX Pico + rubberband, CPU) | openai
 * and the catalogue voices the product sells.
 */
import { CATALOGUE_VOICES, type CatalogueVoice, type VoiceProfile } from "@media-credits/wire/protocol";
import { SpeechError } from "./proc.ts";

export interface Word {
  text: string;
  /** Seconds from the start of the audio. */
  start: number;
  end: number;
}

export interface Transcript {
  language: string;
  text: string;
  words: Word[];
}

export interface Transcriber {
  readonly name: string;
  /** ISO 639-1 codes it transcribes ("auto" is accepted on top when it can detect). */
  readonly languages: string[];
  /** Whether `language: "auto"` is meaningful (else "auto" means its only/first language). */
  readonly detectsLanguage: boolean;
  /** Short description (version, model) for /v1/capabilities. */
  describe(): string;
  transcribe(wavPath: string, language: string, signal?: AbortSignal): Promise<Transcript>;
}

export interface Synthesizer {
  readonly name: string;
  readonly voices: readonly CatalogueVoice[];
  readonly languages: string[];
  /** How "clone" is done ("cpu-match": nearest catalogue voice moved to the sample's pitch). */
  readonly clone: string;
  describe(): string;
  /** Writes a 16-bit PCM mono WAV at 24 kHz to `outWav`. */
  synthesize(
    text: string,
    voice: CatalogueVoice | "clone",
    language: string,
    outWav: string,
    profile?: VoiceProfile,
    signal?: AbortSignal,
  ): Promise<void>;
}

/**
 * Nominal median f0 of each catalogue voice (Hz), for French and for English text, measured on
 * the local engine's output (test/speech-engines.test.ts checks them within 15 %). Used to pick
 * a clone's nearest voice and the target pitch of signal-level voice change.
 */
export const VOICE_F0: Record<CatalogueVoice, { gender: "female" | "male"; f0: number }> = {
  lea: { gender: "female", f0: 190 },
  camille: { gender: "female", f0: 228 },
  thomas: { gender: "male", f0: 122 },
  gilles: { gender: "male", f0: 100 },
};

/** The catalogue voice whose nominal f0 is closest (in semitones) to `f0`. */
export function nearestVoice(f0: number): CatalogueVoice {
  let best: CatalogueVoice = "lea";
  let bestDistance = Infinity;
  for (const voice of CATALOGUE_VOICES) {
    const distance = Math.abs(Math.log2(f0 / VOICE_F0[voice].f0));
    if (distance < bestDistance) {
      best = voice;
      bestDistance = distance;
    }
  }
  return best;
}

/** "en-US" -> "en", "auto" stays. */
export function baseLanguage(language: string): string {
  return language === "auto" ? "auto" : (language.toLowerCase().split(/[-_]/)[0] ?? language);
}

/** The language to transcribe in, or a SpeechError telling which ones are supported. */
export function resolveTranscriptionLanguage(transcriber: Transcriber, language: string): string {
  const base = baseLanguage(language);
  if (base === "auto") return transcriber.detectsLanguage ? "auto" : transcriber.languages[0]!;
  if (!transcriber.languages.includes(base)) {
    throw new SpeechError(
      `transcription language '${language}' is not supported by this backend (engine ${transcriber.name}: ${transcriber.languages.join(", ")})`,
    );
  }
  return base;
}

/** Sentences (and pieces of at most `maxChars`) of a text, for engines with input limits. */
export function splitSentences(text: string, maxChars = 300): string[] {
  const normalized = text.replace(/\r\n?/g, "\n").replace(/[ \t\f\v\u00a0]+/g, " ");
  const rough = normalized
    .split(/(?<=[.!?…;:])\s+|\n+/u)
    .map((s) => s.trim())
    .filter((s) => /[\p{L}\p{N}]/u.test(s));
  const pieces: string[] = [];
  for (const sentence of rough) {
    if (sentence.length <= maxChars) {
      pieces.push(sentence);
      continue;
    }
    // Too long: cut after commas, then between words.
    let current = "";
    for (const part of sentence.split(/(?<=,)\s+|\s+/)) {
      if (current && current.length + 1 + part.length > maxChars) {
        pieces.push(current);
        current = "";
      }
      if (part.length > maxChars) {
        for (let i = 0; i < part.length; i += maxChars) pieces.push(part.slice(i, i + maxChars));
        continue;
      }
      current = current ? `${current} ${part}` : part;
    }
    if (current) pieces.push(current);
  }
  return pieces;
}

/**
 * Engines' timed words as a transcript wants them: in order, never overlapping the previous
 * word (a start before the last end moves to it), times rounded to the millisecond.
 */
export function monotonicWords(raw: Iterable<Word>): Word[] {
  const words: Word[] = [];
  let lastEnd = 0;
  for (const word of raw) {
    const start = Math.max(word.start, lastEnd);
    const end = Math.max(word.end, start);
    words.push({ text: word.text, start: Math.round(start * 1000) / 1000, end: Math.round(end * 1000) / 1000 });
    lastEnd = end;
  }
  return words;
}
