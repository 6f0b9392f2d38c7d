/**
 * The Worker/backend contract (packages/wire/src/protocol.ts), end to end without a network: every media
 * tool's real ffmpeg command, built by the Worker's builders (src/media/commands/) from realistic
 * probes, sent by the Worker's client (src/backend-client/client.ts, fetch stubbed) and read
 * back as the backend reads a POST /v1/jobs body (JSON, parseJobRequest, the fonts on disk).
 * Plus refusals: bad file names, unknown fonts, unsigned, tampered or old callbacks.
 *
 * Type-checked by the root tsconfig (it imports Worker modules written for the bundler's
 * resolution); backend/tsconfig.json leaves this file out.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Env } from "../../src/env";
import { buildAss, type SubtitleStyleParams } from "../../src/media/ass";
import {
  BackendUnavailableError,
  ffmpegJobFields,
  startBackendJob,
  type BackendTransfer,
} from "../../src/backend-client/client";
import { cuesFromSrt } from "../../src/media/captions";
import { buildCleanAudioCommand } from "../../src/media/commands/clean-audio";
import type { MediaCommand, MediaInput } from "../../src/media/commands/command";
import { buildConvertCommand, type ConvertFormat } from "../../src/media/commands/convert";
import { buildExtractAudioCommand, extractAudioFormats } from "../../src/media/commands/extract-audio";
import { buildMergeCommand } from "../../src/media/commands/merge";
import { buildSubtitlesCommand } from "../../src/media/commands/subtitles";
import { buildTrimCommand } from "../../src/media/commands/trim";
import { buildWatermarkCommand } from "../../src/media/commands/watermark";
import type { ProbeResult } from "../../src/media/types";
import { loadConfig } from "../src/config.ts";
import { missingFonts } from "../src/job-runner.ts";
import {
  CALLBACK_MAX_SKEW_MS,
  CALLBACK_SIGNATURE_HEADER,
  CALLBACK_TIMESTAMP_HEADER,
  CallbackSchema,
  callbackHeaders,
  FONTS_SUBDIR,
  isSafeFileName,
  parseJobRequest,
  verifyCallbackSignature,
  type JobRequest,
} from "@media-credits/wire/protocol";

const SECRET = "contract-test-secret";
const env = {
  BACKEND_URL: "http://backend.test",
  BACKEND_SECRET: SECRET,
  PUBLIC_BASE_URL: "https://api.example.com",
} as Env;
/** The backend's default FONTS_DIR (../assets/fonts), where the image has its fonts too. */
const FONTS_DIR = loadConfig({ BACKEND_SECRET: SECRET }).fontsDir;

// ---------------------------------------------------------------------------------------------
// Realistic probes, as src/media/probe.ts reports them for uploads

const probes = {
  phoneMp4: {
    kind: "video",
    container: "mp4",
    mimeType: "video/mp4",
    durationMs: 61_480,
    videoCodec: "h264",
    audioCodec: "aac",
    hasAudio: true,
    hasVideo: true,
    width: 1920,
    height: 1080,
  },
  iphoneMov: {
    kind: "video",
    container: "mov",
    mimeType: "video/quicktime",
    durationMs: 12_033,
    videoCodec: "hevc",
    audioCodec: "aac",
    hasAudio: true,
    hasVideo: true,
    width: 1080,
    height: 1920,
  },
  webm: {
    kind: "video",
    container: "webm",
    mimeType: "video/webm",
    durationMs: 30_000,
    videoCodec: "vp9",
    audioCodec: "opus",
    hasAudio: true,
    hasVideo: true,
    width: 1280,
    height: 720,
  },
  mkv: {
    kind: "video",
    container: "mkv",
    mimeType: "video/x-matroska",
    durationMs: 95_200,
    videoCodec: "h264",
    audioCodec: "ac3",
    hasAudio: true,
    hasVideo: true,
    width: 1280,
    height: 534,
  },
  avi: {
    kind: "video",
    container: "avi",
    mimeType: "video/x-msvideo",
    durationMs: 8_000,
    videoCodec: "mpeg4",
    audioCodec: "mp3",
    hasAudio: true,
    hasVideo: true,
    width: 640,
    height: 480,
  },
  silentMp4: {
    kind: "video",
    container: "mp4",
    mimeType: "video/mp4",
    durationMs: 5_000,
    videoCodec: "h264",
    hasAudio: false,
    hasVideo: true,
    width: 720,
    height: 720,
  },
  mp3: {
    kind: "audio",
    container: "mp3",
    mimeType: "audio/mpeg",
    durationMs: 183_000,
    audioCodec: "mp3",
    hasAudio: true,
    hasVideo: false,
  },
  wav: {
    kind: "audio",
    container: "wav",
    mimeType: "audio/wav",
    durationMs: 10_000,
    audioCodec: "pcm_s16le",
    hasAudio: true,
    hasVideo: false,
  },
  m4a: {
    kind: "audio",
    container: "m4a",
    mimeType: "audio/mp4",
    durationMs: 42_000,
    audioCodec: "aac",
    hasAudio: true,
    hasVideo: false,
  },
  ogg: {
    kind: "audio",
    container: "ogg",
    mimeType: "audio/ogg",
    durationMs: 20_000,
    audioCodec: "vorbis",
    hasAudio: true,
    hasVideo: false,
  },
  flac: {
    kind: "audio",
    container: "flac",
    mimeType: "audio/flac",
    durationMs: 20_000,
    audioCodec: "flac",
    hasAudio: true,
    hasVideo: false,
  },
  png: {
    kind: "image",
    container: "png",
    mimeType: "image/png",
    durationMs: 0,
    hasAudio: false,
    hasVideo: true,
    width: 400,
    height: 120,
  },
} satisfies Record<string, ProbeResult>;
type ProbeName = keyof typeof probes;

/** Inputs named as the job runner names them (`in<i>.<container>`, src/media-worker/job-stages.ts loadJobInputs). */
function inputs(...names: ProbeName[]): MediaInput[] {
  return names.map((name, index) => {
    const probe: ProbeResult = probes[name];
    return {
      name: `in${index}.${probe.container}`,
      filename: `Mon fichier été (${name}).${probe.container}`,
      sizeBytes: 12_345_678,
      probe,
    };
  });
}

const SUBTITLE_STYLE: SubtitleStyleParams = {
  style: "classique",
  color: "#FFFFFF",
  effectColor: "#000000",
  position: 82,
  size: "normale",
  fontId: "inter",
  karaokeMode: "none",
  highlightColor: "#FFD166",
  shadowIntensity: 60,
  contourThickness: 50,
  boxOpacity: 75,
};
const SRT =
  "1\n00:00:00,500 --> 00:00:02,000\nBonjour à tous, l'été arrive !\n\n2\n00:00:02,500 --> 00:00:04,000\n<i>C'est « parti »</i> {\\b1}: 5 € & 100 %\n";

async function subtitlesCommand(style: Partial<SubtitleStyleParams>, video: MediaInput[]): Promise<MediaCommand> {
  const params = { ...SUBTITLE_STYLE, ...style };
  const probe = video[0]!.probe;
  const ass = buildAss(params, await cuesFromSrt(SRT), { width: probe.width ?? 1280, height: probe.height ?? 720 });
  return buildSubtitlesCommand(params, video, ass);
}

interface Case {
  /** The tool's name first. */
  name: string;
  media: ProbeName[];
  build: (media: MediaInput[]) => MediaCommand | Promise<MediaCommand>;
}

/** Every media tool the router may send to the backend, over the inputs each takes. */
const cases: Case[] = [
  ...extractAudioFormats.flatMap((format) =>
    (["phoneMp4", "webm", "mkv", "avi", "iphoneMov"] as const).map((probe) => ({
      name: `extract-audio ${format} from ${probe}`,
      media: [probe],
      build: (media: MediaInput[]) => buildExtractAudioCommand({ format }, media),
    })),
  ),
  ...(["mp4", "webm", "mov", "avi", "mkv"] satisfies ConvertFormat[]).flatMap((format) =>
    (["phoneMp4", "iphoneMov", "webm", "mkv", "avi", "silentMp4", "mp3", "wav"] as const).map((probe) => ({
      name: `convert ${probe} to ${format}`,
      media: [probe],
      build: (media: MediaInput[]) => buildConvertCommand({ format }, media),
    })),
  ),
  ...(["phoneMp4", "iphoneMov", "webm", "mkv", "avi", "silentMp4", "mp3", "wav", "m4a", "ogg", "flac"] as const).map(
    (probe) => ({
      name: `trim ${probe}`,
      media: [probe],
      build: (media: MediaInput[]) => buildTrimCommand({ start: 1.25, end: 4.5 }, media),
    }),
  ),
  { name: "merge two phone videos", media: ["phoneMp4", "phoneMp4"], build: (media) => buildMergeCommand({}, media) },
  {
    name: "merge mixed videos, one silent",
    media: ["phoneMp4", "silentMp4", "webm", "iphoneMov", "avi"],
    build: (media) => buildMergeCommand({}, media),
  },
  { name: "merge silent videos", media: ["silentMp4", "silentMp4"], build: (media) => buildMergeCommand({}, media) },
  ...(["fixe", "flottant"] as const).flatMap((type): Case[] => [
    {
      name: `watermark text ${type}`,
      media: ["phoneMp4"],
      build: (media) =>
        buildWatermarkCommand(
          { watermarkText: '© Studio Été 2025 — 100% "libre"\nsecond line', type, opacity: 60, interval: 5 },
          media,
        ),
    },
    {
      name: `watermark image ${type}`,
      media: ["webm", "png"],
      build: (media) => buildWatermarkCommand({ watermarkUploadId: "upl_mark", type, opacity: 80, interval: 3 }, media),
    },
  ]),
  {
    name: "watermark text on a silent square video",
    media: ["silentMp4"],
    build: (media) => buildWatermarkCommand({ watermarkText: "DRAFT", type: "fixe", opacity: 100, interval: 8 }, media),
  },
  ...(["mp3", "wav", "m4a", "ogg", "flac", "phoneMp4", "webm"] as const).map((probe) => ({
    name: `clean-audio ${probe}`,
    media: [probe],
    build: (media: MediaInput[]) => buildCleanAudioCommand({}, media),
  })),
  ...(["mp3", "phoneMp4"] as const).map((probe) => ({
    name: `clean-audio ${probe}, removeSilence`,
    media: [probe],
    build: (media: MediaInput[]) => buildCleanAudioCommand({ removeSilence: { minPauseSeconds: 2 } }, media),
  })),
  ...(["inter", "montserrat", "poppins", "fredoka", "archivo-black", "anton"] as const).map((fontId) => ({
    name: `subtitles in ${fontId}`,
    media: ["phoneMp4"] as ProbeName[],
    build: (media: MediaInput[]) => subtitlesCommand({ fontId }, media),
  })),
  {
    name: "subtitles, impact and karaoke, on a webm",
    media: ["webm"],
    build: (media) => subtitlesCommand({ style: "impact", karaokeMode: "couleur" }, media),
  },
  {
    name: "subtitles, contour, on a silent video",
    media: ["silentMp4"],
    build: (media) => subtitlesCommand({ style: "contour", karaokeMode: "halo" }, media),
  },
];

// ---------------------------------------------------------------------------------------------
// The Worker's side: what startBackendJob POSTs

let sent: { url: string; body: string }[] = [];

beforeEach(() => {
  sent = [];
  vi.stubGlobal("fetch", async (url: string | URL | Request, init?: RequestInit) => {
    sent.push({ url: String(url), body: String(init?.body) });
    return new Response(JSON.stringify({ accepted: true }), { status: 202 });
  });
});
afterEach(() => {
  vi.unstubAllGlobals();
});

/** The transfer the job runner hands to the backend client for a media command (src/media-worker/job-stages.ts). */
function mediaTransfer(jobId: string, command: MediaCommand, media: MediaInput[]): BackendTransfer {
  return {
    jobId,
    kind: "ffmpeg",
    inputs: media.map((input) => ({ name: input.name, objectKey: `uploads/acc_1/${input.name}` })),
    output: {
      name: command.outputName,
      key: `results/${jobId}/${command.resultFilename}`,
      contentType: command.contentType,
    },
    deadlineMs: 15 * 60 * 1000,
    fields: ffmpegJobFields(command, media),
  };
}

/** What the backend does with a POST /v1/jobs body before accepting it (server.ts). */
async function backendAccepts(body: string): Promise<JobRequest> {
  const parsed = parseJobRequest(JSON.parse(body));
  if (!parsed.ok) throw new Error(`refused: ${parsed.message}`);
  expect(parsed.job.kind).toBe("ffmpeg"); // always available
  expect(await missingFonts(parsed.job, FONTS_DIR)).toEqual([]);
  return parsed.job;
}

const MEDIA_BUILDERS = new Set(["extract-audio", "convert", "trim", "merge", "watermark", "clean-audio", "subtitles"]);

describe("every media tool's command, as the Worker sends it, is accepted by the backend", () => {
  it("covers every media builder", () => {
    expect(new Set(cases.map((c) => c.name.split(/[ ,]/)[0]))).toEqual(MEDIA_BUILDERS);
  });

  it.each(cases.map((c) => [c.name, c] as const))("%s", async (_name, c) => {
    const media = inputs(...c.media);
    const command = await c.build(media);
    const jobId = "job_01JCONTRACT0000000000000000";
    await startBackendJob(env, mediaTransfer(jobId, command, media));
    expect(sent).toHaveLength(1);
    expect(sent[0]!.url).toBe("http://backend.test/v1/jobs");
    const job = await backendAccepts(sent[0]!.body);
    if (job.kind !== "ffmpeg") throw new Error("not an ffmpeg job");
    // The backend's variant when the command has one (clean-audio: two-pass loudnorm).
    expect(job.args).toEqual(command.backend?.args ?? command.args);
    expect(job.loudnorm).toEqual(command.backend?.loudnorm);
    // clean-audio's report: the source meter, and the silence pass writing the output.
    expect(job.audioReport).toEqual(command.audioReport);
    expect(job.inputs.map((i) => i.name)).toEqual(media.map((i) => i.name));
    expect(Object.keys(job.files)).toEqual(Object.keys(command.files));
    for (const [name, bytes] of Object.entries(command.files))
      expect(Buffer.from(job.files[name]!, "base64").equals(Buffer.from(bytes))).toBe(true);
    expect(job.fonts).toEqual(command.fonts);
    // Every input the backend can read over HTTP is read so: in ranges when streamed, else while it downloads.
    for (const input of media) {
      const readable = ["mp4", "mov", "m4v", "m4a", "mkv", "webm", "mp3"].includes(input.probe.container);
      const how = job.streamedInputs[input.name]
        ? "streamed"
        : job.progressiveInputs[input.name]
          ? "progressive"
          : "downloaded first";
      expect(how, `${input.name} (${input.probe.container})`).toBe(
        readable ? (command.backendStreaming?.inputs[input.name] ? "streamed" : "progressive") : "downloaded first",
      );
    }
    expect(job.output).toMatchObject({ name: command.outputName, contentType: command.contentType });
    expect(job.callbackUrl).toBe(`https://api.example.com/internal/jobs/${jobId}/callback`);
  });
});

describe("refusals", () => {
  const base = async () =>
    mediaTransfer(
      "job_01JCONTRACT0000000000000001",
      buildConvertCommand({ format: "mkv" }, inputs("phoneMp4")),
      inputs("phoneMp4"),
    );

  it("one file-name rule: '.', '..', a leading '-', the fonts subdirectory and paths are refused", () => {
    for (const name of ["in0.mp4", "subs.ass", "Inter-Regular.ttf", "out.mp4", "a_b-c.9"])
      expect(isSafeFileName(name), name).toBe(true);
    for (const name of [
      ".",
      "..",
      "-i",
      "-y.mp4",
      FONTS_SUBDIR,
      "fonts/x.ttf",
      "../in.mp4",
      "/etc/passwd",
      "a b",
      "é.mp4",
      "",
      "x".repeat(129),
    ]) {
      expect(isSafeFileName(name), name).toBe(false);
    }
  });

  it("the Worker does not send a request with a bad file name; the backend would refuse it", async () => {
    const valid = await validBody();
    for (const name of ["../escape.mkv", "-out.mkv", FONTS_SUBDIR]) {
      const transfer = await base();
      transfer.output.name = name;
      await expect(startBackendJob(env, transfer)).rejects.toThrow(BackendUnavailableError);
      expect(
        parseJobRequest({
          ...valid,
          output: { name, url: "https://r2.example.com/x", contentType: "video/x-matroska" },
        }).ok,
        name,
      ).toBe(false);
      expect(parseJobRequest({ ...valid, inputs: [{ name, url: "https://r2.example.com/in" }] }).ok, name).toBe(false);
    }
    expect(sent).toHaveLength(1); // validBody's only: nothing was sent for the bad names
  });

  it("refuses a generated file named like an input, args reading an undeclared file, a font that is not on the backend", async () => {
    const body = await validBody();
    expect(parseJobRequest({ ...body, progressiveInputs: { "in9.mp4": "mov" } })).toMatchObject({
      ok: false,
      message: expect.stringMatching(/not one of the inputs/),
    });
    expect(
      parseJobRequest({ ...body, streamedInputs: { "in0.mp4": "mov" }, progressiveInputs: { "in0.mp4": "mov" } }),
    ).toMatchObject({ ok: false, message: expect.stringMatching(/already a streamed input/) });
    expect(parseJobRequest({ ...body, files: { "in0.mp4": "AAAA" } })).toMatchObject({
      ok: false,
      message: expect.stringMatching(/used twice/),
    });
    expect(parseJobRequest({ ...body, args: ["-i", "secret.mp4", "out.mkv"] })).toMatchObject({
      ok: false,
      message: expect.stringMatching(/not one of the declared/),
    });
    const parsed = parseJobRequest({ ...body, fonts: ["Comic-Sans.ttf"] });
    expect(parsed.ok).toBe(true);
    expect(parsed.ok && (await missingFonts(parsed.job, FONTS_DIR))).toEqual(["Comic-Sans.ttf"]);
  });

  it("vets clean-audio's report runs as it vets the args: meter inputs declared, cut args within the work directory", async () => {
    const media = inputs("phoneMp4");
    const command = buildCleanAudioCommand({ removeSilence: true }, media);
    await startBackendJob(env, mediaTransfer("job_01JCONTRACT0000000000000002", command, media));
    const body = JSON.parse(sent.at(-1)!.body) as { audioReport: Record<string, unknown> & { silence: object } };
    expect(parseJobRequest(body).ok).toBe(true);
    const withReport = (audioReport: unknown) => parseJobRequest({ ...body, audioReport });
    expect(withReport({ ...body.audioReport, sourceMeterArgs: ["-i", "secret.mp4", "-f", "null", "-"] })).toMatchObject(
      {
        ok: false,
        message: expect.stringMatching(/sourceMeterArgs.*not one of the declared/),
      },
    );
    for (const encodeArgs of [
      ["-f", "mp4", "file:/etc/x"],
      ["-attach", "/etc/passwd"],
    ]) {
      expect(withReport({ ...body.audioReport, silence: { ...body.audioReport.silence, encodeArgs } })).toMatchObject({
        ok: false,
        message: expect.stringMatching(/^audioReport.silence: /),
      });
    }
    expect(
      withReport({ ...body.audioReport, silence: { ...body.audioReport.silence, videoFilter: "movie=/etc/passwd" } })
        .ok,
    ).toBe(false);
    // The pass must write what the job delivers (or its finish pass reads), and its input must not be an input.
    expect(withReport({ ...body.audioReport, silence: { ...body.audioReport.silence, output: "other.mp4" } }).ok).toBe(
      false,
    );
    expect(withReport({ ...body.audioReport, silence: { ...body.audioReport.silence, input: "in0.mp4" } }).ok).toBe(
      false,
    );
  });

  async function validBody(): Promise<Record<string, unknown>> {
    await startBackendJob(env, await base());
    return JSON.parse(sent.at(-1)!.body) as Record<string, unknown>;
  }
});

describe("callback signature", () => {
  const body = JSON.stringify({
    jobId: "job_01JCONTRACT0000000000000000",
    status: "failed",
    error: "ffmpeg exited with code 1: x",
    durationMs: 310,
    queuedMs: 0,
  });

  it("a callback signed by the backend verifies on the Worker and its body parses", async () => {
    const now = Date.now();
    const headers = await callbackHeaders(SECRET, body, now);
    expect(Object.keys(headers)).toEqual([CALLBACK_TIMESTAMP_HEADER, CALLBACK_SIGNATURE_HEADER]);
    expect(headers[CALLBACK_SIGNATURE_HEADER]).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(
      await verifyCallbackSignature(
        SECRET,
        headers[CALLBACK_TIMESTAMP_HEADER],
        body,
        headers[CALLBACK_SIGNATURE_HEADER],
        now,
      ),
    ).toBe(true);
    expect(CallbackSchema.safeParse(JSON.parse(body)).success).toBe(true);
  });

  it("refuses unsigned, tampered, foreign and old callbacks", async () => {
    const now = Date.now();
    const headers = await callbackHeaders(SECRET, body, now);
    const ts = headers[CALLBACK_TIMESTAMP_HEADER]!;
    const sig = headers[CALLBACK_SIGNATURE_HEADER]!;
    expect(await verifyCallbackSignature(SECRET, undefined, body, undefined, now)).toBe(false);
    expect(await verifyCallbackSignature(SECRET, ts, body, undefined, now)).toBe(false);
    expect(await verifyCallbackSignature(SECRET, ts, body, sig.toUpperCase(), now)).toBe(false);
    expect(await verifyCallbackSignature(SECRET, ts, body.replace("failed", "completed"), sig, now)).toBe(false);
    expect(await verifyCallbackSignature("another-secret", ts, body, sig, now)).toBe(false);
    expect(await verifyCallbackSignature("", ts, body, sig, now)).toBe(false);
    expect(await verifyCallbackSignature(SECRET, `${ts}.0`, body, sig, now)).toBe(false);
    // The clock skew allowed, either way, and not a millisecond more.
    expect(await verifyCallbackSignature(SECRET, ts, body, sig, now + CALLBACK_MAX_SKEW_MS)).toBe(true);
    expect(await verifyCallbackSignature(SECRET, ts, body, sig, now + CALLBACK_MAX_SKEW_MS + 1)).toBe(false);
    expect(await verifyCallbackSignature(SECRET, ts, body, sig, now - CALLBACK_MAX_SKEW_MS - 1)).toBe(false);
    expect(CALLBACK_MAX_SKEW_MS).toBe(5 * 60 * 1000);
  });
});
