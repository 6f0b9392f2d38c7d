/**
 * The speech job kinds, run in the job's work directory once its inputs are downloaded; each
 * writes `output.name` there (the runner uploads it and sends the callback):
 *   transcribe     input -> 16 kHz mono WAV -> engine -> {language, text, words}
 *   tts            text -> WAV (24 kHz mono 16-bit)
 *   voice-change   video -> same video stream (copied), voice replaced (resynthesis or signal-level)
 *   voice-profile  speech sample -> {f0Median, f0Range, speakingRate?, nearestVoice, engine}
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { encodeWav, pitchStats, readWav, semitones } from "./audio.ts";
import {
  type TranscribeJobRequest,
  type TtsJobRequest,
  UPLOAD_INPUT_OPTIONS,
  type VoiceChangeJobRequest,
  type VoiceProfile,
  type VoiceProfileJobRequest,
} from "@media-credits/wire/protocol";
import { nearestVoice, resolveTranscriptionLanguage, VOICE_F0, type Word } from "./engines.ts";
import { probeMedia, runTool, SpeechError, toMonoWav } from "./proc.ts";
import { inputBoundSeconds, maxProcessedMs, overrunMessage } from "@media-credits/wire/billed-duration";
import type { SpeechRuntime } from "./runtime.ts";

export interface SpeechContext {
  workDir: string;
  signal: AbortSignal;
  runtime: SpeechRuntime;
  /** Address space each program reading the upload may reserve (FFMPEG_MEMORY_LIMIT_BYTES). */
  memoryLimitBytes?: number;
  /** Names what runs now (used in deadline messages). */
  setPhase(phase: string): void;
}

/** The work directory's file names (the runner downloads the inputs and uploads the output). */
interface Files {
  inputs: { name: string }[];
  output: { name: string };
}
/** What each speech job reads of its request (protocol.ts). */
export type TranscribeJob = Pick<TranscribeJobRequest, "kind" | "language"> &
  Partial<Pick<TranscribeJobRequest, "billedMs">> &
  Files;
export type TtsJob = Pick<TtsJobRequest, "kind" | "text" | "voice" | "language" | "cloneProfile"> &
  Pick<Files, "output">;
export type VoiceChangeJob = Pick<VoiceChangeJobRequest, "kind" | "voice" | "language" | "cloneProfile"> &
  Partial<Pick<VoiceChangeJobRequest, "billedMs">> &
  Files;
export type VoiceProfileJob = Pick<VoiceProfileJobRequest, "kind" | "language"> & Files;
export type SpeechJob = TranscribeJob | TtsJob | VoiceChangeJob | VoiceProfileJob;

export const MIN_PROFILE_SECONDS = 10;

function need<T>(value: T | undefined, what: string, why: string | undefined): T {
  if (!value) throw new SpeechError(`${what} is not available on this media backend${why ? ` (${why})` : ""}`);
  return value;
}

export async function runSpeechJob(job: SpeechJob, ctx: SpeechContext): Promise<Record<string, number>> {
  switch (job.kind) {
    case "transcribe":
      return transcribeJob(job, ctx);
    case "tts":
      return ttsJob(job, ctx);
    case "voice-change":
      return voiceChangeJob(job, ctx);
    case "voice-profile":
      return voiceProfileJob(job, ctx);
  }
}

/** `-t` for an input billed for `billedMs` (undefined: not bounded, e.g. a voice sample). */
const boundOf = (billedMs: number | undefined) => (billedMs === undefined ? undefined : inputBoundSeconds(billedMs));

/**
 * Fails the job when the decoded audio runs past what the input was billed for: its header
 * understated its length (packages/wire/src/billed-duration.ts). The decode itself was bounded.
 */
function checkDecoded(billedMs: number | undefined, decodedSeconds: number): void {
  const decodedMs = Math.round(decodedSeconds * 1000);
  if (billedMs !== undefined && decodedMs > maxProcessedMs([billedMs]))
    throw new SpeechError(overrunMessage(billedMs, decodedMs));
}

async function transcribeJob(job: TranscribeJob, ctx: SpeechContext): Promise<Record<string, number>> {
  const transcriber = need(ctx.runtime.transcriber, "transcription", ctx.runtime.missing.transcription);
  resolveTranscriptionLanguage(transcriber, job.language); // fail before decoding
  const wav = path.join(ctx.workDir, ".speech-16k.wav");
  ctx.setPhase("decoding the audio");
  await toMonoWav(
    ctx.runtime.ffmpeg,
    path.join(ctx.workDir, job.inputs[0]!.name),
    wav,
    16_000,
    {
      signal: ctx.signal,
      env: ctx.runtime.env,
      memoryLimitBytes: ctx.memoryLimitBytes,
    },
    boundOf(job.billedMs),
  );
  const audioSeconds = (await readWav(wav)).samples.length / 16_000;
  checkDecoded(job.billedMs, audioSeconds);
  ctx.setPhase("transcribing");
  const t = Date.now();
  const transcript = await transcriber.transcribe(wav, job.language, ctx.signal);
  const transcribeMs = Date.now() - t;
  await writeFile(path.join(ctx.workDir, job.output.name), JSON.stringify(transcript));
  return { audioMs: Math.round(audioSeconds * 1000), transcribeMs, words: transcript.words.length };
}

async function ttsJob(job: TtsJob, ctx: SpeechContext): Promise<Record<string, number>> {
  const synthesizer = need(ctx.runtime.synthesizer, "text to speech", ctx.runtime.missing.tts);
  ctx.setPhase("synthesizing speech");
  const t = Date.now();
  const out = path.join(ctx.workDir, job.output.name);
  await synthesizer.synthesize(job.text, job.voice, job.language, out, job.cloneProfile, ctx.signal);
  const pcm = await readWav(out);
  return { ttsMs: Date.now() - t, audioMs: Math.round((pcm.samples.length / pcm.sampleRate) * 1000) };
}

async function voiceProfileJob(job: VoiceProfileJob, ctx: SpeechContext): Promise<Record<string, number>> {
  const wav = path.join(ctx.workDir, ".speech-16k.wav");
  ctx.setPhase("decoding the audio");
  await toMonoWav(ctx.runtime.ffmpeg, path.join(ctx.workDir, job.inputs[0]!.name), wav, 16_000, {
    signal: ctx.signal,
    env: ctx.runtime.env,
    memoryLimitBytes: ctx.memoryLimitBytes,
  });
  const pcm = await readWav(wav);
  const seconds = pcm.samples.length / pcm.sampleRate;
  if (seconds < MIN_PROFILE_SECONDS) {
    throw new SpeechError(
      `the speech sample is ${seconds.toFixed(1)} s long: a voice profile needs at least ${MIN_PROFILE_SECONDS} s of speech`,
    );
  }
  ctx.setPhase("measuring the voice");
  const pitch = pitchStats(pcm);
  if (pitch.voicedSeconds < 2) {
    throw new SpeechError(
      `the sample has ${pitch.voicedSeconds.toFixed(1)} s of voiced speech: at least 2 s are needed`,
    );
  }
  const profile: VoiceProfile = {
    f0Median: round1(pitch.median),
    f0Range: [round1(pitch.p10), round1(pitch.p90)],
    nearestVoice: nearestVoice(pitch.median),
    engine: "cpu-match",
  };
  const transcriber = ctx.runtime.transcriber;
  if (job.language && transcriber) {
    let lang: string | undefined;
    try {
      lang = resolveTranscriptionLanguage(transcriber, job.language);
    } catch {
      lang = undefined; // speaking rate is optional
    }
    if (lang) {
      ctx.setPhase("transcribing (speaking rate)");
      const { words } = await transcriber.transcribe(wav, lang, ctx.signal);
      const span = words.length > 1 ? words.at(-1)!.end - words[0]!.start : 0;
      if (span > 1) profile.speakingRate = Math.round((words.length / span) * 100) / 100;
    }
  }
  await writeFile(path.join(ctx.workDir, job.output.name), JSON.stringify(profile));
  return { audioMs: Math.round(seconds * 1000) };
}

function round1(x: number): number {
  return Math.round(x * 10) / 10;
}

/** Phrases of consecutive words: a new one after a pause of 0.35 s, 14 words or 6 s. */
export function groupPhrases(words: Word[]): { text: string; start: number; end: number }[] {
  const phrases: { text: string; start: number; end: number }[] = [];
  let current: Word[] = [];
  const flush = () => {
    if (current.length === 0) return;
    phrases.push({
      text: current.map((w) => w.text).join(" "),
      start: current[0]!.start,
      end: current.at(-1)!.end,
    });
    current = [];
  };
  for (const word of words) {
    const previous = current.at(-1);
    if (previous && (word.start - previous.end > 0.35 || current.length >= 14 || word.end - current[0]!.start > 6)) {
      flush();
    }
    current.push(word);
  }
  flush();
  return phrases;
}

/** `atempo` filters (each within ffmpeg's 0.5..2 sweet spot) for a speed factor. */
function atempoChain(factor: number): string {
  const parts: string[] = [];
  let rest = factor;
  while (rest > 2) {
    parts.push("atempo=2");
    rest /= 2;
  }
  while (rest < 0.5) {
    parts.push("atempo=0.5");
    rest /= 0.5;
  }
  parts.push(`atempo=${rest.toFixed(5)}`);
  return parts.join(",");
}

function targetF0(job: VoiceChangeJob): number {
  if (job.voice === "clone") return job.cloneProfile!.f0Median;
  return VOICE_F0[job.voice].f0;
}

const VOICE_RATE = 24_000;
/** The rate of a voice-change result's sound (the original's bed and the new voice mixed). */
const MIX_RATE = 48_000;

async function voiceChangeJob(job: VoiceChangeJob, ctx: SpeechContext): Promise<Record<string, number>> {
  const { runtime, signal, workDir } = ctx;
  const opts = { signal, env: runtime.env };
  // ffmpeg reads the upload: under the memory limit. Rubberband is not (offline, it holds the whole sound).
  const ffmpegOpts = { ...opts, memoryLimitBytes: ctx.memoryLimitBytes };
  const input = path.join(workDir, job.inputs[0]!.name);
  const bound = boundOf(job.billedMs);
  ctx.setPhase("reading the input");
  const info = await probeMedia(runtime.ffmpeg, input, ffmpegOpts, bound);
  if (!info.hasAudio)
    throw new SpeechError(`input '${job.inputs[0]!.name}' has no audio stream: there is no voice to change`);
  if (!(info.durationSeconds > 0)) throw new SpeechError(`the duration of input '${job.inputs[0]!.name}' is unknown`);
  const wav16 = path.join(workDir, ".speech-16k.wav");
  ctx.setPhase("decoding the audio");
  await toMonoWav(runtime.ffmpeg, input, wav16, 16_000, ffmpegOpts, bound);
  const decodedSeconds = (await readWav(wav16)).samples.length / 16_000;
  checkDecoded(job.billedMs, decodedSeconds);
  // What was decoded, not what the header says, within the bound: the result's length.
  const duration = job.billedMs === undefined ? info.durationSeconds : Math.min(info.durationSeconds, Number(bound));

  const { transcriber, synthesizer } = runtime;
  const lang = job.language.toLowerCase().split(/[-_]/)[0]!;
  const canResynthesize =
    transcriber && synthesizer && transcriber.languages.includes(lang) && synthesizer.languages.includes(lang);
  let newAudio: string | undefined;
  let mode = 0;
  if (canResynthesize) {
    ctx.setPhase("transcribing");
    const transcript = await transcriber.transcribe(wav16, lang, signal);
    const phrases = groupPhrases(transcript.words);
    if (phrases.length > 0) {
      ctx.setPhase("speaking the phrases in the new voice");
      const track = new Float32Array(Math.ceil(duration * VOICE_RATE));
      for (const [i, phrase] of phrases.entries()) {
        const raw = path.join(workDir, `.phrase-${i}.wav`);
        await synthesizer.synthesize(phrase.text, job.voice, job.language, raw, job.cloneProfile, signal);
        let pcm = await readWav(raw);
        const natural = pcm.samples.length / pcm.sampleRate;
        // The slot: the phrase's span, extended up to the next phrase (or the end).
        const nextStart = phrases[i + 1]?.start ?? duration;
        const span = Math.max(0.2, phrase.end - phrase.start);
        const room = Math.max(span, nextStart - phrase.start - 0.05);
        let factor = 1;
        if (natural > room)
          factor = natural / room; // speed up to fit
        else if (natural < span * 0.85) factor = Math.max(0.8, natural / span); // slow down a little
        if (Math.abs(factor - 1) > 0.02) {
          const fitted = path.join(workDir, `.phrase-${i}-fit.wav`);
          await runTool(
            runtime.ffmpeg,
            [
              "-nostdin",
              "-hide_banner",
              "-loglevel",
              "error",
              "-y",
              "-i",
              raw,
              "-af",
              atempoChain(factor),
              "-ac",
              "1",
              "-ar",
              String(VOICE_RATE),
              "-c:a",
              "pcm_s16le",
              fitted,
            ],
            { ...ffmpegOpts, label: "ffmpeg" },
          );
          pcm = await readWav(fitted);
        }
        const at = Math.round(phrase.start * VOICE_RATE);
        const room2 = track.length - at;
        if (room2 > 0) track.set(pcm.samples.subarray(0, room2), at);
      }
      newAudio = path.join(workDir, ".voice.wav");
      await writeFile(newAudio, encodeWav({ sampleRate: VOICE_RATE, samples: track }));
      mode = 1;
    }
  }

  const output = path.join(workDir, job.output.name);
  const common = [
    "-nostdin",
    "-hide_banner",
    "-loglevel",
    "error",
    "-y",
    "-protocol_whitelist",
    "file",
    ...UPLOAD_INPUT_OPTIONS,
    ...(bound ? ["-t", bound] : []),
    "-i",
    input,
  ];
  const tail = [
    "-map",
    "0:v?",
    "-map",
    "[a]",
    "-c:v",
    "copy",
    "-c:a",
    "aac",
    "-b:a",
    "128k",
    ...(/\.(mp4|m4v|mov)$/i.test(output) ? ["-movflags", "+faststart"] : []),
    output,
  ];
  const dur = duration.toFixed(3);
  // Both ways keep the original's channels, at 48 kHz; an unnamed layout is mixed as stereo.
  const layout = info.audioLayout ?? "stereo";
  if (newAudio) {
    // Original audio: the voice band (120 Hz - 4 kHz) removed, the rest ducked under the new voice:
    // the new voice (mono) is upmixed to the original's channels, into the centre of 5.1, into
    // both sides of stereo.
    ctx.setPhase("mixing the new voice");
    await runTool(
      runtime.ffmpeg,
      [
        ...common,
        "-i",
        newAudio,
        "-filter_complex",
        // first_pts=0: the original keeps its place against the picture, as the new voice (timed on it) does.
        `[0:a:0]aresample=${MIX_RATE}:first_pts=0,aformat=channel_layouts=${layout},asplit=2[lo][hi];` +
          "[lo]lowpass=f=120[l];[hi]highpass=f=4000[h];[l][h]amix=inputs=2:normalize=0,volume=0.5[bg];" +
          `[1:a]aresample=${MIX_RATE},aformat=channel_layouts=${layout},asplit=2[v][sc];` +
          "[bg][sc]sidechaincompress=threshold=0.01:ratio=20:attack=5:release=300[duck];" +
          `[duck][v]amix=inputs=2:normalize=0:duration=first,apad,atrim=0:${dur},aformat=channel_layouts=${layout}[a]`,
        ...tail,
      ],
      { ...ffmpegOpts, label: "ffmpeg" },
    );
  } else {
    // Signal level: pitch toward the target voice, formants moved a little across genders.
    const rubberband = need(runtime.rubberband, "voice change", runtime.missing.rubberband);
    ctx.setPhase("measuring the voice");
    const source = pitchStats(await readWav(wav16));
    if (source.voicedSeconds < 0.3) {
      throw new SpeechError("no voice was found in the input's audio");
    }
    const target = targetF0(job);
    const shift = Math.max(-12, Math.min(12, semitones(source.median, target)));
    const sourceMale = source.median < 160;
    const targetMale = target < 160;
    const formants = sourceMale === targetMale ? 0 : targetMale ? -3 : 2;
    const wide = path.join(workDir, ".orig.wav");
    await runTool(
      runtime.ffmpeg,
      [
        ...common,
        "-map",
        "0:a:0",
        "-vn",
        "-af",
        "aresample=first_pts=0",
        "-ar",
        String(MIX_RATE),
        "-c:a",
        "pcm_s16le",
        wide,
      ],
      { ...ffmpegOpts, label: "ffmpeg" },
    );
    ctx.setPhase("shifting the voice");
    let current = wide;
    if (formants !== 0) {
      const next = path.join(workDir, ".formants.wav");
      await runTool(rubberband, ["-q", "-p", String(formants), current, next], { ...opts, label: "rubberband" });
      current = next;
    }
    const rest = shift - formants;
    if (Math.abs(rest) > 0.05) {
      const next = path.join(workDir, ".pitch.wav");
      await runTool(rubberband, ["-q", "-F", "-p", rest.toFixed(3), current, next], { ...opts, label: "rubberband" });
      current = next;
    }
    ctx.setPhase("muxing");
    await runTool(
      runtime.ffmpeg,
      [
        ...common,
        "-i",
        current,
        "-filter_complex",
        `[1:a]apad,atrim=0:${dur},aformat=channel_layouts=${layout}[a]`,
        ...tail,
      ],
      { ...ffmpegOpts, label: "ffmpeg" },
    );
    mode = 2;
  }
  return { audioMs: Math.round(duration * 1000), voiceChangeMode: mode };
}
