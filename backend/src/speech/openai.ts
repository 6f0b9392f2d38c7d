/**
 * Adapter to any OpenAI-compatible audio server (OpenAI, or a self-hosted one on a GPU host:
 * faster-whisper / whisper.cpp servers, TTS servers speaking the same wire format):
 *   POST {base}/v1/audio/transcriptions  multipart: file, model, response_format=verbose_json,
 *                                        timestamp_granularities[]=word, language?
 *                                        -> {language, text, words: [{word, start, end}]}
 *   POST {base}/v1/audio/speech          JSON {model, input, voice, response_format: "wav"}
 *                                        -> WAV bytes
 * The catalogue voices map to the server's voice names (OPENAI_TTS_VOICES).
 */
import { readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { encodeWav, parseWav, type Pcm } from "./audio.ts";
import { CATALOGUE_VOICES, type CatalogueVoice, type VoiceProfile } from "@media-credits/wire/protocol";
import {
  baseLanguage,
  resolveTranscriptionLanguage,
  splitSentences,
  type Synthesizer,
  type Transcriber,
  type Transcript,
  type Word,
} from "./engines.ts";
import { runTool, SpeechError } from "./proc.ts";
import { networkReason } from "../transfer.ts";

/** Whisper's language names (verbose_json's `language`) for the usual ISO 639-1 codes. */
const LANGUAGE_NAMES: Record<string, string> = {
  english: "en",
  french: "fr",
  german: "de",
  spanish: "es",
  italian: "it",
  portuguese: "pt",
  dutch: "nl",
  polish: "pl",
  russian: "ru",
  ukrainian: "uk",
  turkish: "tr",
  arabic: "ar",
  chinese: "zh",
  japanese: "ja",
  korean: "ko",
  hindi: "hi",
  swedish: "sv",
  danish: "da",
  norwegian: "no",
  finnish: "fi",
  czech: "cs",
  romanian: "ro",
  greek: "el",
  catalan: "ca",
  hungarian: "hu",
  vietnamese: "vi",
  indonesian: "id",
  hebrew: "he",
};

export const DEFAULT_OPENAI_LANGUAGES = [...new Set(Object.values(LANGUAGE_NAMES))];

export interface OpenAiOptions {
  baseUrl: string;
  apiKey?: string;
  transcribeModel: string;
  ttsModel: string;
  /** Catalogue voice -> the server's voice name. */
  voices: Record<CatalogueVoice, string>;
  transcribeLanguages: string[];
  ttsLanguages: string[];
  ffmpeg: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
}

function endpoint(base: string, route: string): string {
  return `${base.replace(/\/+$/, "").replace(/\/v1$/, "")}/v1/${route}`;
}

async function request(
  options: OpenAiOptions,
  route: string,
  init: RequestInit,
  signal?: AbortSignal,
): Promise<Response> {
  const headers = new Headers(init.headers);
  if (options.apiKey) headers.set("authorization", `Bearer ${options.apiKey}`);
  const timeout = AbortSignal.timeout(options.timeoutMs ?? 10 * 60 * 1000);
  let response: Response;
  try {
    response = await fetch(endpoint(options.baseUrl, route), {
      ...init,
      headers,
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    throw new SpeechError(`the speech server could not be reached: ${networkReason(err)}`);
  }
  if (!response.ok) {
    let detail = "";
    try {
      const body = (await response.json()) as { error?: { message?: string } | string };
      const message = typeof body.error === "string" ? body.error : body.error?.message;
      if (message) detail = `: ${message.replace(/https?:\/\/\S+/g, "<url>").slice(0, 300)}`;
    } catch {
      // not JSON
    }
    throw new SpeechError(`the speech server answered HTTP ${response.status}${detail}`);
  }
  return response;
}

export class OpenAiTranscriber implements Transcriber {
  readonly name = "openai";
  readonly detectsLanguage = true;
  readonly languages: string[];
  #options: OpenAiOptions;

  constructor(options: OpenAiOptions) {
    this.#options = options;
    this.languages = options.transcribeLanguages;
  }

  describe(): string {
    return `OpenAI-compatible (${this.#options.transcribeModel})`;
  }

  async transcribe(wavPath: string, language: string, signal?: AbortSignal): Promise<Transcript> {
    const lang = resolveTranscriptionLanguage(this, language);
    const form = new FormData();
    form.append("file", new Blob([await readFile(wavPath)], { type: "audio/wav" }), path.basename(wavPath));
    form.append("model", this.#options.transcribeModel);
    form.append("response_format", "verbose_json");
    form.append("timestamp_granularities[]", "word");
    if (lang !== "auto") form.append("language", lang);
    const response = await request(this.#options, "audio/transcriptions", { method: "POST", body: form }, signal);
    let body: {
      language?: string;
      text?: string;
      words?: { word?: string; text?: string; start?: number; end?: number }[];
      segments?: { words?: { word?: string; text?: string; start?: number; end?: number }[] }[];
    };
    try {
      body = (await response.json()) as typeof body;
    } catch {
      throw new SpeechError("the speech server's transcription is not JSON (verbose_json expected)");
    }
    const raw = body.words ?? body.segments?.flatMap((s) => s.words ?? []) ?? [];
    const words: Word[] = [];
    let lastEnd = 0;
    for (const w of raw) {
      const text = String(w.word ?? w.text ?? "").trim();
      if (!text || typeof w.start !== "number" || typeof w.end !== "number") continue;
      const start = Math.max(w.start, lastEnd);
      const end = Math.max(w.end, start);
      words.push({ text, start, end });
      lastEnd = end;
    }
    const detected = (body.language ?? "").toLowerCase();
    const code =
      LANGUAGE_NAMES[detected] ?? (/^[a-z]{2}$/.test(detected) ? detected : lang === "auto" ? detected || "und" : lang);
    return { language: code, text: (body.text ?? words.map((w) => w.text).join(" ")).trim(), words };
  }
}

export class OpenAiSynthesizer implements Synthesizer {
  readonly name = "openai";
  readonly voices = CATALOGUE_VOICES;
  readonly languages: string[];
  readonly clone = "nearest-voice";
  #options: OpenAiOptions;

  constructor(options: OpenAiOptions) {
    this.#options = options;
    this.languages = options.ttsLanguages;
  }

  describe(): string {
    return `OpenAI-compatible (${this.#options.ttsModel})`;
  }

  async synthesize(
    text: string,
    voice: CatalogueVoice | "clone",
    language: string,
    outWav: string,
    profile?: VoiceProfile,
    signal?: AbortSignal,
  ): Promise<void> {
    if (!this.languages.includes(baseLanguage(language))) {
      throw new SpeechError(
        `text-to-speech language '${language}' is not supported by this backend (${this.languages.join(", ")})`,
      );
    }
    let catalogue: CatalogueVoice;
    if (voice === "clone") {
      if (!profile) throw new SpeechError("voice 'clone' needs a cloneProfile (made by a voice-profile job)");
      catalogue = profile.nearestVoice;
    } else catalogue = voice;
    // OpenAI's speech endpoint takes at most 4096 characters per request.
    const pieces = splitSentences(text, 4000);
    const chunks: string[] = [];
    let current = "";
    for (const piece of pieces) {
      if (current && current.length + 1 + piece.length > 4000) {
        chunks.push(current);
        current = "";
      }
      current = current ? `${current} ${piece}` : piece;
    }
    if (current) chunks.push(current);
    if (chunks.length === 0) throw new SpeechError("the text has nothing to speak");
    const parts: Pcm[] = [];
    for (const [index, input] of chunks.entries()) {
      const response = await request(
        this.#options,
        "audio/speech",
        {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            model: this.#options.ttsModel,
            input,
            voice: this.#options.voices[catalogue],
            response_format: "wav",
          }),
        },
        signal,
      );
      const bytes = Buffer.from(await response.arrayBuffer());
      // Normalise whatever WAV the server sent (rate, channels, float) to 24 kHz mono s16.
      const raw = `${outWav}.part${index}.wav`;
      const norm = `${outWav}.part${index}.norm.wav`;
      await writeFile(raw, bytes);
      try {
        await runTool(
          this.#options.ffmpeg,
          [
            "-nostdin",
            "-hide_banner",
            "-loglevel",
            "error",
            "-y",
            "-i",
            raw,
            "-ac",
            "1",
            "-ar",
            "24000",
            "-c:a",
            "pcm_s16le",
            "-f",
            "wav",
            norm,
          ],
          { signal, env: this.#options.env, label: "ffmpeg" },
        ).catch((err: unknown) => {
          if (err instanceof SpeechError)
            throw new SpeechError(`the speech server's audio could not be decoded: ${err.message}`);
          throw err;
        });
        parts.push(parseWav(await readFile(norm)));
      } finally {
        await rm(raw, { force: true });
        await rm(norm, { force: true });
      }
    }
    const total = parts.reduce((sum, p) => sum + p.samples.length, 0);
    const samples = new Float32Array(total);
    let offset = 0;
    for (const p of parts) {
      samples.set(p.samples, offset);
      offset += p.samples.length;
    }
    await writeFile(outWav, encodeWav({ sampleRate: 24_000, samples }));
  }
}
