/**
 * CPU transcription with Debian's pocketsphinx (`pocketsphinx_continuous` and the
 * `pocketsphinx-en-us` model): English only, per-word times, no punctuation.
 * `pocketsphinx_continuous -infile x.wav -time yes` prints, per utterance, the hypothesis and
 * then one line per word: `<word> <start s> <end s> <confidence>`.
 */
import type { Transcriber, Transcript, Word } from "./engines.ts";
import { monotonicWords, resolveTranscriptionLanguage } from "./engines.ts";
import { runTool } from "./proc.ts";

/** Fillers and markers that are not words. */
const NOT_WORDS = /^(<s>|<\/s>|<sil>|\[[A-Z_]+\]|\+\+[A-Z_]+\+\+)$/i;
const WORD_LINE = /^(\S+) (\d+(?:\.\d+)?) (\d+(?:\.\d+)?) (-?\d+(?:\.\d+)?(?:e-?\d+)?)$/;

/** Words of pocketsphinx_continuous's `-time yes` output: fillers dropped, `word(2)` -> `word`, times monotonic. */
export function parsePocketsphinxOutput(stdout: string): Word[] {
  const raw: Word[] = [];
  for (const line of stdout.split(/\r?\n/)) {
    const match = WORD_LINE.exec(line.trim());
    if (!match) continue;
    const token = match[1]!;
    if (NOT_WORDS.test(token)) continue;
    const text = token.replace(/\(\d+\)$/, "");
    if (text) raw.push({ text, start: Number(match[2]), end: Number(match[3]) });
  }
  return monotonicWords(raw);
}

export interface PocketsphinxOptions {
  program?: string;
  env?: NodeJS.ProcessEnv;
}

export class PocketsphinxTranscriber implements Transcriber {
  readonly name = "pocketsphinx";
  readonly languages = ["en"];
  readonly detectsLanguage = false;
  #program: string;
  #env: NodeJS.ProcessEnv | undefined;

  constructor(options: PocketsphinxOptions = {}) {
    this.#program = options.program ?? "pocketsphinx_continuous";
    this.#env = options.env;
  }

  describe(): string {
    return "pocketsphinx 5prealpha (en-us acoustic model, CMU dictionary)";
  }

  /** `wavPath`: 16 kHz mono 16-bit PCM (what pocketsphinx's en-us model expects). */
  async transcribe(wavPath: string, language: string, signal?: AbortSignal): Promise<Transcript> {
    const lang = resolveTranscriptionLanguage(this, language);
    const run = await runTool(this.#program, ["-infile", wavPath, "-time", "yes"], {
      signal,
      env: this.#env,
      label: "pocketsphinx",
    });
    const words = parsePocketsphinxOutput(run.stdout);
    return { language: lang, text: words.map((w) => w.text).join(" "), words };
  }
}
