/**
 * Speech engine benchmark: the real-time factor (processing s / audio s) of the backend's CPU
 * speech engines on this machine, through the backend's own code (backend/src/speech/*.ts,
 * `runSpeechJob` of jobs.ts with the LocalSynthesizer and PocketsphinxTranscriber that
 * createSpeechRuntime would pick by default), against native ffmpeg decoding the same audio to
 * 16 kHz mono (what every speech job does first), measured in the same run.
 *
 * Called at the end of run.ts; `BENCH_ONLY=speech` runs only this part, a BENCH_ONLY list
 * without `speech` skips it.
 */
import { existsSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pitchStats, readWav } from "../backend/src/speech/audio.ts";
import { CATALOGUE_VOICES, type CatalogueVoice } from "@media-credits/wire/protocol";
import { VOICE_F0 } from "../backend/src/speech/engines.ts";
import { runSpeechJob, type SpeechJob } from "../backend/src/speech/speech-job.ts";
import { LocalSynthesizer, RECIPES } from "../backend/src/speech/local-tts.ts";
import { PocketsphinxTranscriber } from "../backend/src/speech/pocketsphinx.ts";
import { hasProgram } from "../backend/src/speech/proc.ts";
import type { SpeechRuntime } from "../backend/src/speech/runtime.ts";
import { FFMPEG, run } from "./media";

/** ~10 s of speech each with the local engine (checked: 9-12 s depending on the voice). */
const TEXTS: Record<"fr" | "en", string> = {
  fr:
    "Bonjour à tous. Aujourd'hui, nous vous présentons notre nouveau projet. " +
    "L'équipe a travaillé pendant tout l'hiver pour préparer cette version, et nous espérons qu'elle vous plaira.",
  en:
    "Good morning everyone. Today we are going to show you our new project. " +
    "The team worked through the whole winter to prepare this version, and we hope that you will like it.",
};

const TESTDATA = "/usr/share/pocketsphinx/test/data";
const POCKETSPHINX_MODEL = "/usr/share/pocketsphinx/model/en-us/en-us";

/**
 * The f0 the local engine aims at for a voice in a language: the recipe's Hz for the male voices,
 * a factor of Pico's own median f0 for the female ones (PICO_LANGUAGES of local-tts.ts, not
 * exported: fr 191 Hz, en-US 164 Hz). VOICE_F0 (engines.ts) holds the French figures.
 */
function targetF0(voice: CatalogueVoice, language: "fr" | "en"): number {
  const recipe = RECIPES[voice];
  return recipe.f0Hz ?? (language === "fr" ? 191 : 164) * (recipe.f0Factor ?? 1);
}

export interface SpeechRow {
  engine: string;
  input: string;
  audioSeconds?: number;
  seconds?: number;
  /** Native ffmpeg decode of the same audio to 16 kHz mono WAV (best of 3). */
  baselineSeconds?: number;
  quality: string;
  skipped?: string;
}

const fmt = (value: number | undefined, digits = 2) =>
  value === undefined || !Number.isFinite(value) ? "-" : value.toFixed(digits);

/** Lower-case words without punctuation, for the word error rate. */
function words(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}' ]+/gu, " ")
    .split(/\s+/)
    .filter(Boolean);
}

/** Word error rate: word-level Levenshtein distance / reference length. */
export function wordErrorRate(reference: string, hypothesis: string): { wer: number; errors: number; n: number } {
  const ref = words(reference);
  const hyp = words(hypothesis);
  let prev = Array.from({ length: hyp.length + 1 }, (_, j) => j);
  for (let i = 1; i <= ref.length; i++) {
    const cur = [i];
    for (let j = 1; j <= hyp.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (ref[i - 1] === hyp[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  const errors = prev[hyp.length]!;
  return { wer: ref.length ? errors / ref.length : 0, errors, n: ref.length };
}

async function must(program: string, args: string[]): Promise<void> {
  const result = await run(program, args);
  if (result.code !== 0)
    throw new Error(`${program} ${args.join(" ")} failed (${result.code}):\n${result.stderr.slice(-1500)}`);
}

/** Seconds of a WAV file's audio. */
async function wavSeconds(file: string): Promise<number> {
  const pcm = await readWav(file);
  return pcm.samples.length / pcm.sampleRate;
}

/** Median f0 (Hz) of any media file's audio, through a 16 kHz mono WAV (not timed). */
async function medianF0(file: string, scratch: string): Promise<number> {
  await must(FFMPEG, [
    "-nostdin",
    "-hide_banner",
    "-loglevel",
    "error",
    "-y",
    "-i",
    file,
    "-map",
    "0:a:0",
    "-vn",
    "-ac",
    "1",
    "-ar",
    "16000",
    "-c:a",
    "pcm_s16le",
    scratch,
  ]);
  return pitchStats(await readWav(scratch)).median;
}

/**
 * The baseline: native ffmpeg decoding/resampling `file` to a 16 kHz mono 16-bit WAV with the
 * arguments of toMonoWav (proc.ts), wall time including process start, best of 3.
 */
async function decodeBaseline(file: string, dir: string): Promise<number> {
  const out = path.join(dir, `.baseline-${path.basename(file)}.wav`);
  let best = Infinity;
  for (let i = 0; i < 3; i++) {
    const t = performance.now();
    await must(FFMPEG, [
      "-nostdin",
      "-hide_banner",
      "-loglevel",
      "error",
      "-y",
      "-protocol_whitelist",
      "file",
      "-i",
      file,
      "-map",
      "0:a:0",
      "-vn",
      "-ac",
      "1",
      "-ar",
      "16000",
      "-c:a",
      "pcm_s16le",
      "-f",
      "wav",
      out,
    ]);
    best = Math.min(best, (performance.now() - t) / 1000);
  }
  await rm(out, { force: true });
  return best;
}

/** Runs one job of jobs.ts in a fresh work directory holding `inputs`; wall time in seconds. */
async function timeJob(
  runtime: SpeechRuntime,
  root: string,
  id: string,
  job: SpeechJob,
  inputs: Record<string, string> = {},
): Promise<{ seconds: number; workDir: string; stats: Record<string, number> }> {
  const workDir = path.join(root, id);
  await mkdir(workDir, { recursive: true });
  for (const [name, source] of Object.entries(inputs)) await copyFile(source, path.join(workDir, name));
  const controller = new AbortController();
  const t = performance.now();
  const stats = await runSpeechJob(job, { workDir, signal: controller.signal, runtime, setPhase: () => {} });
  return { seconds: (performance.now() - t) / 1000, workDir, stats };
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  return [line(header), `| ${widths.map((w) => "-".repeat(w)).join(" | ")} |`, ...rows.map(line)].join("\n");
}

export function speechTable(rows: SpeechRow[]): string {
  return table(
    ["engine", "input", "audio s", "processing s", "RTF", "ratio to ffmpeg decode", "quality"],
    rows.map((r) =>
      r.skipped
        ? [r.engine, r.input, "-", "-", "-", "-", r.skipped]
        : [
            r.engine,
            r.input,
            fmt(r.audioSeconds),
            fmt(r.seconds),
            r.seconds !== undefined && r.audioSeconds ? fmt(r.seconds / r.audioSeconds, 3) : "-",
            r.seconds !== undefined && r.baselineSeconds
              ? `${(r.seconds / r.baselineSeconds).toFixed(1)}x (${fmt(r.baselineSeconds, 3)} s)`
              : "-",
            r.quality,
          ],
    ),
  );
}

/** The speech part of the bench; returns the problems found (empty when all went well). */
export async function runSpeechBench(): Promise<string[]> {
  const started = performance.now();
  const problems: string[] = [];
  const rows: SpeechRow[] = [];
  const cpus = os.cpus();
  console.log(`\nspeech engines bench ${new Date().toISOString()}`);
  console.log(
    `machine: ${cpus.length} cores (${cpus[0]?.model.trim() ?? "?"}), ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB; Node ${process.version}`,
  );

  // What createSpeechRuntime (runtime.ts) builds with the default configuration
  // (TRANSCRIBE_ENGINE=pocketsphinx, TTS_ENGINE=local), built here directly so that the bench
  // does not depend on the optional engines runtime.ts may import.
  const env = process.env;
  const runtime: SpeechRuntime = { ffmpeg: FFMPEG, env, missing: {} };
  const [pico, rubberband, sphinx] = await Promise.all([
    hasProgram("pico2wave", env),
    hasProgram("rubberband", env),
    hasProgram("pocketsphinx_continuous", env),
  ]);
  if (rubberband) runtime.rubberband = "rubberband";
  else runtime.missing.rubberband = "rubberband not found (Debian package rubberband-cli)";
  if (pico && rubberband)
    runtime.synthesizer = new LocalSynthesizer({
      pico2wave: "pico2wave",
      rubberband: "rubberband",
      ffmpeg: FFMPEG,
      env,
    });
  else
    runtime.missing.tts = pico ? runtime.missing.rubberband : "pico2wave not found (Debian non-free libttspico-utils)";
  if (sphinx && existsSync(POCKETSPHINX_MODEL))
    runtime.transcriber = new PocketsphinxTranscriber({ program: "pocketsphinx_continuous", env });
  else
    runtime.missing.transcription = sphinx
      ? "pocketsphinx-en-us model not installed"
      : "pocketsphinx_continuous not found (Debian pocketsphinx)";
  const versions = (await run(FFMPEG, ["-hide_banner", "-version"])).stdout.split("\n")[0] ?? "?";
  console.log(
    `engines: tts ${runtime.synthesizer ? runtime.synthesizer.describe() : `missing (${runtime.missing.tts})`}; ` +
      `transcription ${runtime.transcriber ? runtime.transcriber.describe() : `missing (${runtime.missing.transcription})`}; ${versions}`,
  );

  const root = await mkdtemp(path.join(os.tmpdir(), "speech-bench-"));
  try {
    // --- TTS: four voices x two languages --------------------------------------------------
    const ttsOut: Partial<Record<string, string>> = {};
    for (const language of ["fr", "en"] as const) {
      for (const voice of CATALOGUE_VOICES) {
        const row: SpeechRow = {
          engine: "tts local (Pico+rubberband)",
          input: `${voice} ${language} (${words(TEXTS[language]).length} words)`,
          quality: "-",
        };
        rows.push(row);
        if (!runtime.synthesizer) {
          row.skipped = `skipped: ${runtime.missing.tts}`;
          continue;
        }
        process.stdout.write(`tts ${voice} ${language} ...`);
        try {
          const job: SpeechJob = { kind: "tts", text: TEXTS[language], voice, language, output: { name: "out.wav" } };
          const { seconds, workDir } = await timeJob(runtime, root, `tts-${voice}-${language}`, job);
          const out = path.join(workDir, "out.wav");
          ttsOut[`${voice}-${language}`] = out;
          row.seconds = seconds;
          row.audioSeconds = await wavSeconds(out);
          row.baselineSeconds = await decodeBaseline(out, root);
          const f0 = pitchStats(await readWav(out)).median;
          row.quality = `f0 ${f0.toFixed(0)} Hz (target ${targetF0(voice, language).toFixed(0)})`;
          console.log(` ${fmt(seconds)} s for ${fmt(row.audioSeconds)} s of audio`);
        } catch (error) {
          row.skipped = `FAILED: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`;
          problems.push(`tts ${voice} ${language}: ${error instanceof Error ? error.message : String(error)}`);
          console.log(` ${row.skipped}`);
        }
      }
    }

    // --- Transcription: the English TTS outputs and pocketsphinx-testdata ----------------
    const transcribeInputs: { label: string; file?: string; reference: string; missing?: string }[] = [];
    for (const voice of CATALOGUE_VOICES) {
      transcribeInputs.push({
        label: `tts ${voice} en`,
        file: ttsOut[`${voice}-en`],
        reference: TEXTS.en,
        missing: "no TTS output",
      });
    }
    const goforward = path.join(TESTDATA, "goforward.raw");
    if (existsSync(goforward)) {
      // 16 kHz mono s16le raw: wrapped in a WAV header (lossless, untimed) so that the job can read it.
      const wav = path.join(root, "goforward.wav");
      await must(FFMPEG, [
        "-nostdin",
        "-hide_banner",
        "-loglevel",
        "error",
        "-y",
        "-f",
        "s16le",
        "-ar",
        "16000",
        "-ac",
        "1",
        "-i",
        goforward,
        "-c:a",
        "pcm_s16le",
        wav,
      ]);
      transcribeInputs.push({ label: "testdata goforward.raw", file: wav, reference: "go forward ten meters" });
    } else {
      transcribeInputs.push({
        label: "testdata goforward.raw",
        reference: "",
        missing: "pocketsphinx-testdata not installed",
      });
    }
    const librivox = path.join(TESTDATA, "librivox");
    if (existsSync(path.join(librivox, "transcription"))) {
      // The five LibriVox utterances of the test data joined into one file, their transcriptions as reference.
      const lines = (await readFile(path.join(librivox, "transcription"), "utf8"))
        .split("\n")
        .filter((l) => l.includes("("));
      const parts = lines.map((l) => ({
        id: /\(([^)]+)\)\s*$/.exec(l)![1]!,
        text: l
          .replace(/<\/?s>/g, "")
          .replace(/\([^)]*\)\s*$/, "")
          .trim(),
      }));
      const present = parts.filter((p) => existsSync(path.join(librivox, `${p.id}.wav`)));
      if (present.length > 0) {
        const joined = path.join(root, "librivox.wav");
        const list = path.join(root, "librivox.txt");
        await writeFile(list, present.map((p) => `file '${path.join(librivox, `${p.id}.wav`)}'`).join("\n"));
        await must(FFMPEG, [
          "-nostdin",
          "-hide_banner",
          "-loglevel",
          "error",
          "-y",
          "-f",
          "concat",
          "-safe",
          "0",
          "-i",
          list,
          "-c:a",
          "pcm_s16le",
          joined,
        ]);
        transcribeInputs.push({
          label: `testdata librivox (${present.length} utterances)`,
          file: joined,
          reference: present.map((p) => p.text).join(" "),
        });
      }
    }
    for (const item of transcribeInputs) {
      const row: SpeechRow = { engine: "transcribe pocketsphinx", input: item.label, quality: "-" };
      rows.push(row);
      if (!runtime.transcriber) {
        row.skipped = `skipped: ${runtime.missing.transcription}`;
        continue;
      }
      if (!item.file) {
        row.skipped = `skipped: ${item.missing}`;
        continue;
      }
      process.stdout.write(`transcribe ${item.label} ...`);
      try {
        const name = `in${path.extname(item.file)}`;
        const job: SpeechJob = { kind: "transcribe", inputs: [{ name }], language: "en", output: { name: "out.json" } };
        const { seconds, workDir, stats } = await timeJob(runtime, root, `transcribe-${rows.length}`, job, {
          [name]: item.file,
        });
        const transcript = JSON.parse(await readFile(path.join(workDir, "out.json"), "utf8")) as { text: string };
        const { wer, errors, n } = wordErrorRate(item.reference, transcript.text);
        row.seconds = seconds;
        row.audioSeconds = (stats.audioMs ?? 0) / 1000;
        row.baselineSeconds = await decodeBaseline(item.file, root);
        row.quality = `WER ${(wer * 100).toFixed(0)} % (${errors}/${n}); pocketsphinx alone ${fmt((stats.transcribeMs ?? 0) / 1000)} s`;
        console.log(` ${fmt(seconds)} s, WER ${(wer * 100).toFixed(0)} %: "${transcript.text}"`);
      } catch (error) {
        row.skipped = `FAILED: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`;
        problems.push(`transcribe ${item.label}: ${error instanceof Error ? error.message : String(error)}`);
        console.log(` ${row.skipped}`);
      }
    }

    // --- Voice change: a talking clip (TTS audio + black 320x240 video) -------------------
    const changes: { label: string; language: "en" | "fr"; voice: CatalogueVoice; source?: string }[] = [
      // en: pocketsphinx + local TTS available -> resynthesis (transcribe, speak each phrase, mix)
      { label: "resynthesis: clip lea en -> thomas", language: "en", voice: "thomas", source: ttsOut["lea-en"] },
      // fr: no French transcriber -> signal level (rubberband pitch + formants)
      { label: "signal level: clip lea fr -> thomas", language: "fr", voice: "thomas", source: ttsOut["lea-fr"] },
    ];
    for (const change of changes) {
      const row: SpeechRow = { engine: "voice-change", input: change.label, quality: "-" };
      rows.push(row);
      if (!change.source) {
        row.skipped = "skipped: no TTS output to make the clip from";
        continue;
      }
      process.stdout.write(`voice-change ${change.label} ...`);
      try {
        const clip = path.join(root, `talk-${change.language}.mp4`);
        await must(FFMPEG, [
          "-nostdin",
          "-hide_banner",
          "-loglevel",
          "error",
          "-y",
          "-f",
          "lavfi",
          "-i",
          "color=c=black:s=320x240:r=25",
          "-i",
          change.source,
          "-map",
          "0:v",
          "-map",
          "1:a",
          "-c:v",
          "libx264",
          "-preset",
          "veryfast",
          "-pix_fmt",
          "yuv420p",
          "-c:a",
          "aac",
          "-b:a",
          "128k",
          "-shortest",
          "-movflags",
          "+faststart",
          clip,
        ]);
        const job: SpeechJob = {
          kind: "voice-change",
          inputs: [{ name: "in.mp4" }],
          voice: change.voice,
          language: change.language,
          output: { name: "out.mp4" },
        };
        const { seconds, workDir, stats } = await timeJob(runtime, root, `voice-change-${change.language}`, job, {
          "in.mp4": clip,
        });
        row.seconds = seconds;
        row.audioSeconds = (stats.audioMs ?? 0) / 1000;
        row.baselineSeconds = await decodeBaseline(clip, root);
        const mode =
          stats.voiceChangeMode === 1
            ? "resynthesis"
            : stats.voiceChangeMode === 2
              ? "signal level"
              : `mode ${stats.voiceChangeMode}`;
        const before = await medianF0(clip, path.join(root, "f0-before.wav"));
        const after = await medianF0(path.join(workDir, "out.mp4"), path.join(root, "f0-after.wav"));
        row.quality = `f0 ${before.toFixed(0)} -> ${after.toFixed(0)} Hz (target ${VOICE_F0[change.voice].f0}); ran ${mode}`;
        if ((change.language === "en") !== (stats.voiceChangeMode === 1))
          problems.push(`voice-change ${change.label}: ran ${mode}`);
        console.log(` ${fmt(seconds)} s, ${mode}`);
      } catch (error) {
        row.skipped = `FAILED: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`;
        problems.push(`voice-change ${change.label}: ${error instanceof Error ? error.message : String(error)}`);
        console.log(` ${row.skipped}`);
      }
    }

    console.log("\n" + speechTable(rows));
    console.log(
      "\nprocessing s = wall time of runSpeechJob (backend/src/speech/speech-job.ts), child processes included; transcribe" +
        " and voice-change include their own ffmpeg decode to 16 kHz. RTF = processing s / audio s (output audio for tts," +
        " input audio otherwise). Ratio = processing s / native ffmpeg decoding the same file to 16 kHz mono WAV" +
        " (toMonoWav's arguments, best of 3, in brackets). f0 = median of backend/src/speech/audio.ts pitchStats.",
    );
    console.log(`speech bench finished in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  } finally {
    if (process.env.BENCH_KEEP === "1") console.log(`kept ${root}`);
    else await rm(root, { recursive: true, force: true });
  }
  return problems;
}
