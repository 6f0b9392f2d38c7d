/**
 * Speech through the public API with the CPU engines of the backend: text-to-speech, then
 * recognition of what was spoken (word error rate), SRT modes, automatic subtitles, voice
 * change and the cloned voice.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { parseText } from "media-captions";
import { beforeAll, describe, expect, inject, it } from "vitest";
import {
  balance,
  download,
  ffprobe,
  frameAt,
  generate,
  markPixels,
  newClient,
  pixel,
  rmsDb,
  runTool,
  stream,
  testKeyOf,
  upload,
  type Client,
} from "./client";

const SENTENCE = "the quick brown fox jumps over the lazy dog";
let client: Client;
let speechWav: string;

/** Word error rate by edit distance over words. */
function wordErrorRate(reference: string, hypothesis: string): number {
  const ref = reference.toLowerCase().split(/\s+/).filter(Boolean);
  const hyp = hypothesis
    .toLowerCase()
    .replace(/[^a-z' ]/g, " ")
    .split(/\s+/)
    .filter(Boolean);
  const d = Array.from({ length: ref.length + 1 }, (_, i) => [i, ...Array(hyp.length).fill(0)]);
  for (let j = 1; j <= hyp.length; j++) d[0][j] = j;
  for (let i = 1; i <= ref.length; i++) {
    for (let j = 1; j <= hyp.length; j++) {
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (ref[i - 1] === hyp[j - 1] ? 0 : 1));
    }
  }
  return d[ref.length][hyp.length] / ref.length;
}

async function transcribe(source: { uploadId: string }, body: Record<string, unknown> = {}) {
  const job = await runTool(client, "transcribe", { uploadId: source.uploadId, language: "en", ...body });
  return readFileSync(await download(client, job), "utf8");
}

beforeAll(async () => {
  client = await newClient(inject("e2eMainUrl"), 100_000);
  const job = await runTool(client, "text-to-speech", { text: `${SENTENCE}.`, voice: "thomas" });
  speechWav = await download(client, job);
});

describe("text-to-speech and transcription", () => {
  it("speaks a .wav that the recogniser understands", async () => {
    const probe = ffprobe(speechWav);
    expect(stream(probe, "audio")!.codec_name).toMatch(/^pcm_s16le$/);
    expect(Number(probe.format.duration)).toBeGreaterThan(1.5);
    const text = await transcribe(await upload(client, speechWav));
    expect(wordErrorRate(SENTENCE, text)).toBeLessThanOrEqual(0.5);
  });

  it("writes SRT in phrase and mot modes, timed inside the media", async () => {
    const source = await upload(client, speechWav);
    for (const mode of ["phrase", "mot"] as const) {
      const srt = await transcribe(source, { format: "srt", srtSplitMode: mode });
      const { cues, errors } = await parseText(srt, { type: "srt", strict: true });
      expect(errors).toEqual([]);
      expect(cues.length).toBeGreaterThan(0);
      for (let i = 0; i < cues.length; i++) {
        expect(cues[i].endTime).toBeLessThanOrEqual(source.durationSeconds + 0.05);
        if (i > 0) expect(cues[i].startTime).toBeGreaterThanOrEqual(cues[i - 1].startTime);
        if (mode === "mot") expect(cues[i].text.trim().split(/\s+/)).toHaveLength(1);
      }
      if (mode === "mot") expect(cues.length).toBeGreaterThanOrEqual(5);
    }
  });

  it("times words against the picture when the audio track starts after it", async () => {
    const srtOf = async (file: string) =>
      (
        await parseText(await transcribe(await upload(client, file), { format: "srt", srtSplitMode: "mot" }), {
          type: "srt",
          strict: true,
        })
      ).cues;
    const video = ["-f", "lavfi", "-i", "color=c=black:size=160x120:rate=25:duration=6"];
    const onTime = generate("speech-on-time.mp4", [
      ...video,
      "-i",
      speechWav,
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-pix_fmt",
      "yuv420p",
      "-c:a",
      "aac",
    ]);
    const late = generate("speech-late.mp4", [
      ...video,
      "-itsoffset",
      "0.8",
      "-i",
      speechWav,
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-pix_fmt",
      "yuv420p",
      "-c:a",
      "aac",
    ]);
    const [first] = await srtOf(onTime);
    const [firstLate] = await srtOf(late);
    // The same first word, 0.8 s later in the video (within a recogniser frame or two).
    expect(firstLate!.text).toBe(first!.text);
    expect(Math.abs(firstLate!.startTime - first!.startTime - 0.8)).toBeLessThan(0.1);
  });

  it("accepts any ISO 639-1 code; a language the engines lack fails the job with their message and refunds it", async () => {
    const source = await upload(client, speechWav);
    const before = await balance(client);
    const job = await runTool(client, "transcribe", { uploadId: source.uploadId, language: "fr" });
    expect(job.creditsUsed).toBe(Math.max(1, Math.ceil((15 * source.durationSeconds) / 60)));
    expect(job.status).toBe("failed");
    expect(job.error).toMatch(/'fr'.*en/);
    expect(await balance(client)).toBe(before);
    // The same code in capitals is the same language.
    const upper = await runTool(client, "transcribe", { uploadId: source.uploadId, language: "EN" });
    expect(wordErrorRate(SENTENCE, readFileSync(await download(client, upper), "utf8"))).toBeLessThanOrEqual(0.5);
  });

  it("gives four distinct voices", async () => {
    const medians: Record<string, number> = {};
    for (const voice of ["lea", "camille", "thomas", "gilles"]) {
      const file = await download(
        client,
        await runTool(client, "text-to-speech", { text: "Bonjour, ceci est un essai de voix.", voice }),
      );
      medians[voice] = medianPitch(file);
    }
    expect(Math.min(medians.lea, medians.camille)).toBeGreaterThan(Math.max(medians.thomas, medians.gilles) + 30);
    expect(Math.abs(medians.lea - medians.camille)).toBeGreaterThan(5);
    expect(Math.abs(medians.thomas - medians.gilles)).toBeGreaterThan(5);
  });
});

/** Median fundamental frequency (Hz) of voiced frames, by autocorrelation on 16 kHz mono PCM. */
function medianPitch(file: string): number {
  const raw = execFileSync("ffmpeg", ["-v", "error", "-i", file, "-ac", "1", "-ar", "16000", "-f", "s16le", "-"], {
    maxBuffer: 64 * 1024 * 1024,
  });
  const samples = new Int16Array(raw.buffer, raw.byteOffset, raw.byteLength / 2);
  const frame = 640;
  const pitches: number[] = [];
  for (let start = 0; start + frame < samples.length; start += frame / 2) {
    let energy = 0;
    for (let i = 0; i < frame; i++) energy += samples[start + i] ** 2;
    if (energy / frame < 500 ** 2) continue;
    let best = 0;
    let bestLag = 0;
    for (let lag = 16000 / 400; lag <= 16000 / 60; lag++) {
      let sum = 0;
      for (let i = 0; i + lag < frame; i++) sum += samples[start + i] * samples[start + i + lag];
      if (sum > best) {
        best = sum;
        bestLag = lag;
      }
    }
    if (bestLag && best / energy > 0.3) pitches.push(16000 / bestLag);
  }
  pitches.sort((a, b) => a - b);
  return pitches[Math.floor(pitches.length / 2)] ?? 0;
}

/** A black 320x240 video whose sound is the spoken sentence. */
function talkingVideo(): string {
  return generate("talking.mp4", [
    "-f",
    "lavfi",
    "-i",
    "color=c=black:size=320x240:rate=25",
    "-i",
    speechWav,
    "-shortest",
    "-c:v",
    "libx264",
    "-pix_fmt",
    "yuv420p",
    "-c:a",
    "aac",
  ]);
}

describe("video speech tools", () => {
  let talking: { uploadId: string; durationSeconds: number };

  beforeAll(async () => {
    talking = await upload(client, talkingVideo());
  });

  it("burns automatic subtitles from the recognised words", async () => {
    const job = await runTool(client, "subtitles", { uploadId: talking.uploadId, captionWords: 2, position: 80 });
    const file = await download(client, job);
    let bright = 0;
    for (const t of [0.8, 1.5, 2.2]) {
      if (t > talking.durationSeconds) continue;
      const frame = frameAt(file, t, 320, 240);
      for (let y = 120; y < 240; y++) for (let x = 0; x < 320; x++) if (pixel(frame, 320, x, y)[0] > 180) bright++;
    }
    expect(bright).toBeGreaterThan(30);
  });

  it("changes the voice, keeping the duration and the video stream", async () => {
    const job = await runTool(client, "voice-change", { uploadId: talking.uploadId, voice: "lea", language: "en" });
    const file = await download(client, job);
    const probe = ffprobe(file);
    expect(stream(probe, "video")!.codec_name).toBe("h264");
    expect(stream(probe, "audio")).toBeDefined();
    expect(Math.abs(Number(probe.format.duration) - talking.durationSeconds)).toBeLessThanOrEqual(0.15);
    // thomas (male) -> lea (female): the voice's pitch moves up.
    expect(medianPitch(file)).toBeGreaterThan(medianPitch(speechWav) + 30);
  });

  it("speaks with the cloned voice once a sample is registered", async () => {
    const sample = generate("sample.wav", ["-stream_loop", "3", "-i", speechWav, "-t", "12"]);
    const uploaded = await upload(client, sample);
    const registered = await fetch(`${client.base}/api/v1/voices/clone`, {
      method: "POST",
      headers: { ...client.auth, "content-type": "application/json" },
      body: JSON.stringify({ uploadId: uploaded.uploadId }),
    });
    expect(registered.status).toBe(200);
    const job = await runTool(client, "text-to-speech", { text: "Bonjour tout le monde.", voice: "clone" });
    expect(job.creditsUsed).toBe(1);
    const file = await download(client, job);
    expect(Number(ffprobe(file).format.duration)).toBeGreaterThan(0.5);
  });
});

describe("test-mode keys on the speech tools", () => {
  it("mark spoken audio, transcripts and voice-changed video with TEST, spending nothing", async () => {
    const key = await testKeyOf(client);
    const before = await balance(client);

    const tts = await runTool(key, "text-to-speech", { text: `${SENTENCE}.`, voice: "thomas" });
    expect(tts.creditsUsed).toBe(0);
    const wav = await download(key, tts);
    const wavProbe = ffprobe(wav);
    expect(wavProbe.format.tags?.comment).toBe("TEST");
    expect(stream(wavProbe, "audio")!.codec_name).toBe("pcm_s16le");
    expect(Number(wavProbe.format.duration)).toBeGreaterThan(1.5);

    const spoken = await upload(key, wav);
    const text = readFileSync(
      await download(key, await runTool(key, "transcribe", { uploadId: spoken.uploadId, language: "en" })),
      "utf8",
    );
    // Marked throughout: every line starts with [TEST]; the words are still recognised under it.
    const lines = text.trim().split("\n");
    expect(lines.every((line) => line.startsWith("[TEST] "))).toBe(true);
    expect(wordErrorRate(SENTENCE, lines.map((line) => line.slice("[TEST] ".length)).join(" "))).toBeLessThanOrEqual(
      0.5,
    );
    const srt = readFileSync(
      await download(
        key,
        await runTool(key, "transcribe", { uploadId: spoken.uploadId, language: "en", format: "srt" }),
      ),
      "utf8",
    );
    const { cues, errors } = await parseText(srt, { type: "srt", strict: true });
    expect(errors).toEqual([]);
    // The beep of the test key's spoken file sits in its pauses: the phrases may run together.
    expect(cues.length).toBeGreaterThanOrEqual(1);
    expect(cues.every((cue) => cue.text.startsWith("[TEST] "))).toBe(true);

    const talking = await upload(key, talkingVideo());
    const changed = await download(
      key,
      await runTool(key, "voice-change", { uploadId: talking.uploadId, voice: "lea", language: "en" }),
    );
    const probe = ffprobe(changed);
    expect(probe.format.tags?.comment).toBe("TEST");
    expect(stream(probe, "video")!.codec_name).toBe("h264");
    expect(Math.abs(Number(probe.format.duration) - talking.durationSeconds)).toBeLessThanOrEqual(0.15);
    expect(medianPitch(changed)).toBeGreaterThan(medianPitch(wav) + 30);
    // The source is black: the mark's white letters are the only bright pixels, all in the top right.
    const { corner, elsewhere } = markPixels(changed);
    expect(corner).toBeGreaterThan(100);
    expect(elsewhere).toBe(0);
    // Its sound beeps too: a narrow band at 1 kHz in the first 0.3 s holds the beep's -14 dBFS, far above any voice.
    expect(rmsDb(changed, "atrim=0.05:0.25,bandpass=f=1000:width_type=h:w=20")).toBeGreaterThan(-30);

    expect(await balance(client)).toBe(before);
  });
});
