/**
 * Speech configuration (environment) and the engines it selects, with what they can do for
 * /v1/capabilities. An engine whose programs are missing is left out (the ffmpeg-only
 * container image has none): its job kinds are then refused with a clear error.
 */
import { access } from "node:fs/promises";
import { CATALOGUE_VOICES, type Capabilities, type CatalogueVoice, type JobKind } from "@media-credits/wire/protocol";
import type { Synthesizer, Transcriber } from "./engines.ts";
import { LocalSynthesizer } from "./local-tts.ts";
import { DEFAULT_OPENAI_LANGUAGES, OpenAiSynthesizer, OpenAiTranscriber, type OpenAiOptions } from "./openai.ts";
import { PocketsphinxTranscriber } from "./pocketsphinx.ts";
import { hasProgram } from "./proc.ts";
import { checkWhisperModel, loadWhisperBinding, WhisperCppTranscriber, type WhisperVariant } from "./whisper-cpp.ts";
import { ConfigError } from "../config.ts";

export interface SpeechConfig {
  transcribeEngine: "pocketsphinx" | "openai" | "whisper-cpp" | "none";
  ttsEngine: "local" | "openai" | "none";
  pocketsphinxPath: string;
  pocketsphinxModelDir: string;
  pico2wavePath: string;
  rubberbandPath: string;
  openai?: Omit<OpenAiOptions, "ffmpeg" | "env">;
  /** TRANSCRIBE_ENGINE=whisper-cpp: the ggml model and the native variant (default = CPU). */
  whisper?: { modelPath: string; variant: WhisperVariant; threads?: number };
}

const DEFAULT_OPENAI_VOICES: Record<CatalogueVoice, string> = {
  lea: "nova",
  camille: "shimmer",
  thomas: "onyx",
  gilles: "echo",
};

function list(raw: string | undefined): string[] | undefined {
  const items = raw
    ?.split(",")
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  return items && items.length > 0 ? items : undefined;
}

export function loadSpeechConfig(env: NodeJS.ProcessEnv = process.env): SpeechConfig {
  const transcribeEngine = (env.TRANSCRIBE_ENGINE?.trim() || "pocketsphinx") as SpeechConfig["transcribeEngine"];
  if (!["pocketsphinx", "openai", "whisper-cpp", "none"].includes(transcribeEngine)) {
    throw new ConfigError(
      `TRANSCRIBE_ENGINE must be pocketsphinx, openai, whisper-cpp or none (got "${transcribeEngine}")`,
    );
  }
  let whisper: SpeechConfig["whisper"];
  if (transcribeEngine === "whisper-cpp") {
    const modelPath = env.WHISPER_MODEL_PATH?.trim() ?? "";
    if (!modelPath) {
      throw new ConfigError(
        "TRANSCRIBE_ENGINE=whisper-cpp needs WHISPER_MODEL_PATH, the path of a whisper.cpp ggml model (e.g. ggml-base.bin)",
      );
    }
    const variant = (env.WHISPER_VARIANT?.trim() || "default") as WhisperVariant;
    if (!["default", "cuda", "vulkan"].includes(variant)) {
      throw new ConfigError(`WHISPER_VARIANT must be default, cuda or vulkan (got "${variant}")`);
    }
    const rawThreads = env.WHISPER_THREADS?.trim();
    const threads = rawThreads ? Number(rawThreads) : undefined;
    if (threads !== undefined && (!Number.isInteger(threads) || threads < 1 || threads > 256)) {
      throw new ConfigError(`WHISPER_THREADS must be an integer between 1 and 256 (got "${rawThreads}")`);
    }
    whisper = { modelPath, variant, threads };
  }
  const ttsEngine = (env.TTS_ENGINE?.trim() || "local") as SpeechConfig["ttsEngine"];
  if (!["local", "openai", "none"].includes(ttsEngine)) {
    throw new ConfigError(`TTS_ENGINE must be local, openai or none (got "${ttsEngine}")`);
  }
  let openai: SpeechConfig["openai"];
  if (transcribeEngine === "openai" || ttsEngine === "openai") {
    const baseUrl = env.OPENAI_AUDIO_BASE_URL?.trim() ?? "";
    try {
      const { protocol } = new URL(baseUrl);
      if (protocol !== "http:" && protocol !== "https:") throw new Error();
    } catch {
      throw new ConfigError("OPENAI_AUDIO_BASE_URL must be an http(s) URL when an engine is 'openai'");
    }
    const voices = { ...DEFAULT_OPENAI_VOICES };
    for (const pair of (env.OPENAI_TTS_VOICES ?? "").split(",").filter((s) => s.includes("="))) {
      const [ours, theirs] = pair.split("=").map((s) => s.trim());
      if (!CATALOGUE_VOICES.includes(ours as CatalogueVoice) || !theirs) {
        throw new ConfigError(`OPENAI_TTS_VOICES: "${pair}" is not <catalogue voice>=<server voice>`);
      }
      voices[ours as CatalogueVoice] = theirs;
    }
    openai = {
      baseUrl,
      apiKey: env.OPENAI_AUDIO_API_KEY?.trim() || undefined,
      transcribeModel: env.OPENAI_TRANSCRIBE_MODEL?.trim() || "whisper-1",
      ttsModel: env.OPENAI_TTS_MODEL?.trim() || "tts-1",
      voices,
      transcribeLanguages: list(env.OPENAI_TRANSCRIBE_LANGUAGES) ?? DEFAULT_OPENAI_LANGUAGES,
      ttsLanguages: list(env.OPENAI_TTS_LANGUAGES) ?? ["fr", "en"],
    };
  }
  return {
    transcribeEngine,
    ttsEngine,
    pocketsphinxPath: env.POCKETSPHINX_PATH?.trim() || "pocketsphinx_continuous",
    pocketsphinxModelDir: env.POCKETSPHINX_MODEL_DIR?.trim() || "/usr/share/pocketsphinx/model/en-us/en-us",
    pico2wavePath: env.PICO2WAVE_PATH?.trim() || "pico2wave",
    rubberbandPath: env.RUBBERBAND_PATH?.trim() || "rubberband",
    openai,
    whisper,
  };
}

export interface SpeechRuntime {
  transcriber?: Transcriber;
  synthesizer?: Synthesizer;
  /** For voice-change's signal-level path (pitch and formant shifts). */
  rubberband?: string;
  ffmpeg: string;
  /** Environment of the engines' child processes (no secrets). */
  env: NodeJS.ProcessEnv;
  /** Why an engine is missing, for the job error and the log. */
  missing: { transcription?: string; tts?: string; rubberband?: string };
}

export async function createSpeechRuntime(
  config: SpeechConfig,
  ffmpeg: string,
  env: NodeJS.ProcessEnv,
): Promise<SpeechRuntime> {
  const runtime: SpeechRuntime = { ffmpeg, env, missing: {} };
  const rubberbandOk = await hasProgram(config.rubberbandPath, env);
  if (rubberbandOk) runtime.rubberband = config.rubberbandPath;
  else runtime.missing.rubberband = `${config.rubberbandPath} not found (Debian package rubberband-cli)`;

  if (config.transcribeEngine === "pocketsphinx") {
    const model = await access(config.pocketsphinxModelDir).then(
      () => true,
      () => false,
    );
    if (!(await hasProgram(config.pocketsphinxPath, env))) {
      runtime.missing.transcription = `${config.pocketsphinxPath} not found (Debian package pocketsphinx)`;
    } else if (!model) {
      runtime.missing.transcription = `pocketsphinx model not found (Debian package pocketsphinx-en-us)`;
    } else {
      runtime.transcriber = new PocketsphinxTranscriber({ program: config.pocketsphinxPath, env });
    }
  } else if (config.transcribeEngine === "openai") {
    runtime.transcriber = new OpenAiTranscriber({ ...config.openai!, ffmpeg, env });
  } else if (config.transcribeEngine === "whisper-cpp") {
    // Chosen explicitly: a missing model or binding stops the start instead of dropping the kind.
    const whisper = config.whisper;
    if (!whisper?.modelPath) {
      throw new ConfigError("TRANSCRIBE_ENGINE=whisper-cpp needs WHISPER_MODEL_PATH (a whisper.cpp ggml model)");
    }
    const problem = await checkWhisperModel(whisper.modelPath);
    if (problem) throw new ConfigError(`TRANSCRIBE_ENGINE=whisper-cpp: ${problem}`);
    try {
      await loadWhisperBinding(whisper.variant);
    } catch (err) {
      throw new ConfigError(`TRANSCRIBE_ENGINE=whisper-cpp: ${(err as Error).message}`);
    }
    // The model itself is loaded on the first transcription.
    runtime.transcriber = new WhisperCppTranscriber(whisper);
  } else {
    runtime.missing.transcription = "TRANSCRIBE_ENGINE=none";
  }

  if (config.ttsEngine === "local") {
    if (!(await hasProgram(config.pico2wavePath, env))) {
      runtime.missing.tts = `${config.pico2wavePath} not found (Debian non-free package libttspico-utils)`;
    } else if (!rubberbandOk) {
      runtime.missing.tts = runtime.missing.rubberband;
    } else {
      runtime.synthesizer = new LocalSynthesizer({
        pico2wave: config.pico2wavePath,
        rubberband: config.rubberbandPath,
        ffmpeg,
        env,
      });
    }
  } else if (config.ttsEngine === "openai") {
    runtime.synthesizer = new OpenAiSynthesizer({ ...config.openai!, ffmpeg, env });
  } else {
    runtime.missing.tts = "TTS_ENGINE=none";
  }
  return runtime;
}

/** Job kinds the runtime can run (besides "ffmpeg"). */
export function speechKinds(runtime: SpeechRuntime): JobKind[] {
  const kinds: JobKind[] = [];
  if (runtime.transcriber) kinds.push("transcribe");
  if (runtime.synthesizer) kinds.push("tts");
  if (runtime.synthesizer && (runtime.rubberband || runtime.transcriber)) kinds.push("voice-change");
  kinds.push("voice-profile"); // measured with ffmpeg and our own f0 tracker
  return kinds;
}

/** The speech part of the capabilities document (protocol.ts: Capabilities), engines without ffmpeg. */
export function speechCapabilities(
  runtime: SpeechRuntime,
): Pick<Capabilities, "transcription" | "tts" | "voiceChange"> & { engines: Omit<Capabilities["engines"], "ffmpeg"> } {
  const { transcriber, synthesizer } = runtime;
  const resynthesisLanguages =
    transcriber && synthesizer ? transcriber.languages.filter((l) => synthesizer.languages.includes(l)) : [];
  return {
    engines: {
      ...(transcriber ? { transcription: `${transcriber.name}: ${transcriber.describe()}` } : {}),
      ...(synthesizer ? { tts: `${synthesizer.name}: ${synthesizer.describe()}` } : {}),
      ...(runtime.rubberband ? { rubberband: runtime.rubberband } : {}),
    },
    transcription: transcriber
      ? { languages: transcriber.languages, engine: transcriber.name, detectsLanguage: transcriber.detectsLanguage }
      : { languages: [] },
    tts: synthesizer
      ? {
          voices: [...synthesizer.voices],
          languages: synthesizer.languages,
          clone: synthesizer.clone,
          engine: synthesizer.name,
        }
      : { voices: [] },
    voiceChange: {
      resynthesisLanguages,
      signalLevel: Boolean(runtime.rubberband),
    },
  };
}
