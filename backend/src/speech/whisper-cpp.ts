/**
 * In-process transcription with whisper.cpp through `@fugood/whisper.node` (an optional
 * dependency: prebuilt N-API binaries from npm platform packages, CPU `-linux-x64`, GPU
 * `-linux-x64-cuda` / `-vulkan`). The ggml model (`WHISPER_MODEL_PATH`, e.g. ggml-base.bin) is
 * loaded once, on the first job. Word times come from whisper.cpp's token timestamps:
 * `tokenTimestamps: true, maxLen: 1` makes every token its own segment (`{text, t0, t1}`, ms);
 * a token whose text starts with a space starts a word, the others (word pieces, punctuation)
 * extend the current one.
 */
import { open } from "node:fs/promises";
import { availableParallelism } from "node:os";
import path from "node:path";
import type { Transcriber, Transcript, Word } from "./engines.ts";
import { monotonicWords, resolveTranscriptionLanguage } from "./engines.ts";
import { SpeechError } from "./proc.ts";

/** The languages of whisper's multilingual models (whisper.cpp's g_lang, ISO 639-1 where it has one). */
export const WHISPER_LANGUAGES = [
  "en",
  "zh",
  "de",
  "es",
  "ru",
  "ko",
  "fr",
  "ja",
  "pt",
  "tr",
  "pl",
  "ca",
  "nl",
  "ar",
  "sv",
  "it",
  "id",
  "hi",
  "fi",
  "vi",
  "he",
  "uk",
  "el",
  "ms",
  "cs",
  "ro",
  "da",
  "hu",
  "ta",
  "no",
  "th",
  "ur",
  "hr",
  "bg",
  "lt",
  "la",
  "mi",
  "ml",
  "cy",
  "sk",
  "te",
  "fa",
  "lv",
  "bn",
  "sr",
  "az",
  "sl",
  "kn",
  "et",
  "mk",
  "br",
  "eu",
  "is",
  "hy",
  "ne",
  "mn",
  "bs",
  "kk",
  "sq",
  "sw",
  "gl",
  "mr",
  "pa",
  "si",
  "km",
  "sn",
  "yo",
  "so",
  "af",
  "oc",
  "ka",
  "be",
  "tg",
  "sd",
  "gu",
  "am",
  "yi",
  "lo",
  "uz",
  "fo",
  "ht",
  "ps",
  "tk",
  "nn",
  "mt",
  "sa",
  "lb",
  "my",
  "bo",
  "tl",
  "mg",
  "as",
  "tt",
  "haw",
  "ln",
  "ha",
  "ba",
  "jw",
  "su",
  "yue",
];

export type WhisperVariant = "default" | "cuda" | "vulkan";

/** The package the engine needs (optionalDependencies of backend/package.json). */
export const WHISPER_PACKAGE = "@fugood/whisper.node";

/**
 * Whether a ggml model file is multilingual, from its name: whisper.cpp's English-only models
 * are `ggml-<size>.en.bin` (and quantized `ggml-<size>.en-q5_1.bin`).
 */
export function isMultilingualModel(modelPath: string): boolean {
  return !/\.en([._-]|$)/i.test(path.basename(modelPath));
}

/**
 * Why the model at `modelPath` cannot be used (missing, unreadable, not a ggml file), or
 * undefined when it looks right. Reads only its first 4 bytes (the ggml magic "lmgg").
 */
export async function checkWhisperModel(modelPath: string): Promise<string | undefined> {
  let handle;
  try {
    handle = await open(modelPath, "r");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === "ENOENT"
        ? "does not exist"
        : code === "EACCES"
          ? "is not readable"
          : `cannot be opened (${code ?? "error"})`;
    return `WHISPER_MODEL_PATH ${modelPath} ${why}`;
  }
  try {
    const { bytesRead, buffer } = await handle.read(Buffer.alloc(4), 0, 4, 0);
    if (bytesRead < 4) return `WHISPER_MODEL_PATH ${modelPath} is not a ggml model (too short)`;
    if (buffer.readUInt32LE(0) !== 0x67676d6c) {
      return `WHISPER_MODEL_PATH ${modelPath} is not a whisper.cpp ggml model (bad magic; use a ggml-*.bin file)`;
    }
    return undefined;
  } catch (err) {
    return `WHISPER_MODEL_PATH ${modelPath} cannot be read (${(err as Error).message})`;
  } finally {
    await handle.close();
  }
}

interface TranscribeResult {
  language?: string;
  result: string;
  segments: Array<{ text: string; t0: number; t1: number }>;
  isAborted: boolean;
}

interface WhisperContext {
  transcribeFile(
    filePath: string,
    options: Record<string, unknown>,
  ): { stop: () => Promise<void>; promise: Promise<TranscribeResult> };
  release(): Promise<void>;
}

interface WhisperModule {
  initWhisper(
    options: { filePath: string; useGpu?: boolean; useFlashAttn?: boolean },
    variant?: WhisperVariant,
  ): Promise<WhisperContext>;
  loadWhisperModule(variant?: WhisperVariant): Promise<unknown>;
}

/**
 * Imports the binding and loads its native module (the platform package for `variant`, falling
 * back to the CPU one). Throws a clear error when the optional package is not installed or its
 * native module does not load on this system.
 */
export async function loadWhisperBinding(variant: WhisperVariant = "default"): Promise<WhisperModule> {
  let mod: WhisperModule;
  try {
    const imported = (await import(WHISPER_PACKAGE)) as WhisperModule & { default?: WhisperModule };
    mod = typeof imported.initWhisper === "function" ? imported : imported.default!;
  } catch (err) {
    throw new Error(
      `${WHISPER_PACKAGE} is not installed (optional dependency of the backend; npm install failed or omitted it): ${(err as Error).message}`,
    );
  }
  try {
    await mod.loadWhisperModule(variant);
  } catch (err) {
    throw new Error(`the whisper.cpp native module does not load on this system: ${(err as Error).message}`);
  }
  return mod;
}

/** Bracketed or parenthesised annotations whisper emits for non-speech ([BLANK_AUDIO], (music)). */
const ANNOTATION = /^(\[[^\]]*\]|\([^)]*\)|\*[^*]*\*)$/;

/**
 * Words from whisper.cpp's one-token segments (t0/t1 in ms): a token starting with whitespace
 * starts a word, others extend it; annotations dropped; times in seconds, monotonic.
 */
export function tokensToWords(segments: Array<{ text: string; t0: number; t1: number }>): Word[] {
  const raw: Array<{ text: string; start: number; end: number }> = [];
  for (const segment of segments) {
    const text = segment.text;
    if (!text || !text.trim()) continue;
    const current = raw.at(-1);
    if (current && !/^\s/.test(text)) {
      current.text += text;
      current.end = Math.max(current.end, segment.t1 / 1000);
    } else {
      raw.push({ text: text.trim(), start: segment.t0 / 1000, end: segment.t1 / 1000 });
    }
  }
  return monotonicWords(
    raw
      .map((w) => ({ ...w, text: w.text.trim() }))
      .filter((w) => w.text && !ANNOTATION.test(w.text) && /[\p{L}\p{N}]/u.test(w.text)),
  );
}

export interface WhisperCppOptions {
  modelPath: string;
  variant?: WhisperVariant;
  threads?: number;
}

export class WhisperCppTranscriber implements Transcriber {
  readonly name = "whisper-cpp";
  readonly languages: string[];
  readonly detectsLanguage: boolean;
  #options: WhisperCppOptions;
  #context: Promise<WhisperContext> | undefined;
  /** One whisper_context runs one transcription at a time: later jobs wait their turn. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(options: WhisperCppOptions) {
    this.#options = options;
    const multilingual = isMultilingualModel(options.modelPath);
    this.languages = multilingual ? [...WHISPER_LANGUAGES] : ["en"];
    this.detectsLanguage = multilingual;
  }

  describe(): string {
    const variant = this.#options.variant ?? "default";
    return `whisper.cpp via ${WHISPER_PACKAGE} (${variant === "default" ? "CPU" : variant}), model ${path.basename(this.#options.modelPath)}`;
  }

  #load(): Promise<WhisperContext> {
    this.#context ??= (async () => {
      const variant = this.#options.variant ?? "default";
      const mod = await loadWhisperBinding(variant);
      try {
        return await mod.initWhisper({ filePath: this.#options.modelPath, useGpu: variant !== "default" }, variant);
      } catch (err) {
        throw new Error(
          `the whisper model ${path.basename(this.#options.modelPath)} could not be loaded: ${(err as Error).message}`,
        );
      }
    })();
    // A failed load is retried by the next job.
    this.#context.catch(() => {
      this.#context = undefined;
    });
    return this.#context;
  }

  /** `wavPath`: 16 kHz mono 16-bit PCM WAV. */
  async transcribe(wavPath: string, language: string, signal?: AbortSignal): Promise<Transcript> {
    const lang = resolveTranscriptionLanguage(this, language);
    const run = this.#queue.then(() => this.#run(wavPath, lang, signal));
    this.#queue = run.catch(() => {});
    return run;
  }

  async #run(wavPath: string, lang: string, signal?: AbortSignal): Promise<Transcript> {
    signal?.throwIfAborted();
    let context: WhisperContext;
    try {
      context = await this.#load();
    } catch (err) {
      throw new SpeechError(`whisper.cpp is not available: ${(err as Error).message}`);
    }
    signal?.throwIfAborted();
    const job = context.transcribeFile(wavPath, {
      language: lang,
      tokenTimestamps: true,
      maxLen: 1,
      maxThreads: this.#options.threads ?? Math.max(1, Math.min(8, availableParallelism())),
      temperature: 0,
    });
    const onAbort = () => void job.stop().catch(() => {});
    signal?.addEventListener("abort", onAbort, { once: true });
    let result: TranscribeResult;
    try {
      result = await job.promise;
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      throw new SpeechError(`whisper.cpp failed: ${(err as Error).message}`);
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
    if (signal?.aborted) throw signal.reason;
    if (result.isAborted) throw new SpeechError("whisper.cpp transcription was stopped");
    const words = tokensToWords(result.segments);
    const detected = result.language && this.languages.includes(result.language) ? result.language : undefined;
    return {
      language: lang === "auto" ? (detected ?? "en") : lang,
      text: words.map((w) => w.text).join(" "),
      words,
    };
  }

  /** Frees the model (tests, shutdown). */
  async close(): Promise<void> {
    const context = this.#context;
    this.#context = undefined;
    if (context) await (await context.catch(() => undefined))?.release();
  }
}
