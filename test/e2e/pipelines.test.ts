/**
 * Pipelines on the real stack (`wrangler dev` Workers, the native backend with its speech
 * engines): the three documented chains checked by what their results contain, the ledger after a
 * completed, a failed-at-step-2 and a cancelled pipeline, a chain that cannot run refused before
 * any debit, quotes equal to debits, Idempotency-Key and test keys as for a tool call, and the
 * same media pipeline on both engines (every step on ffmpeg.wasm, every step on the backend).
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { eventually } from "../helpers/eventually";
import {
  balance,
  download,
  ffprobe,
  FIXTURES,
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
  type FinishedJob,
} from "./client";

const SENTENCE = "the quick brown fox jumps over the lazy dog";

interface Step {
  tool: string;
  status: string;
  creditsUsed: number;
  engine?: string;
  error?: string;
}
type PipelineJob = FinishedJob & { jobId: string; steps: Step[] };
interface Envelope {
  jobId: string;
  creditsUsed: number;
  creditsRemaining: number;
  steps: { tool: string; creditsUsed: number }[];
}

async function startPipeline(client: Client, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${client.base}/api/v1/pipelines`, {
    method: "POST",
    headers: { ...client.auth, "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    body: (await response.json()) as Envelope & { error?: { code: string; message: string } },
  };
}

async function waitFor(client: Client, jobId: string, timeoutMs = 240_000): Promise<PipelineJob> {
  return eventually(
    async () =>
      (await (
        await fetch(`${client.base}/api/v1/jobs/${jobId}?wait=50`, { headers: client.auth })
      ).json()) as PipelineJob,
    (job) => job.status === "completed" || job.status === "failed",
    { timeoutMs, intervalMs: 0, what: `pipeline ${jobId} to end` },
  );
}

async function runPipeline(client: Client, body: unknown): Promise<PipelineJob & { envelope: Envelope }> {
  const started = await startPipeline(client, body);
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  const job = await waitFor(client, started.body.jobId);
  expect(job.status, job.error).toBe("completed");
  return { ...job, creditsUsed: started.body.creditsUsed, envelope: started.body };
}

/** Pixels of the 64x64 red logo (253, 0, 0) in a 320x240 frame. */
function redPixels(frame: Buffer): number {
  let count = 0;
  for (let y = 0; y < 240; y++)
    for (let x = 0; x < 320; x++) {
      const [r, g, b] = pixel(frame, 320, x, y);
      if (r > 160 && g < 90 && b < 90) count++;
    }
  return count;
}

/** White caption pixels in the lower half of a 320x240 frame. */
function captionPixels(frame: Buffer): number {
  let count = 0;
  for (let y = 120; y < 240; y++)
    for (let x = 0; x < 320; x++) {
      const [r, g, b] = pixel(frame, 320, x, y);
      if (r > 180 && g > 180 && b > 180) count++;
    }
  return count;
}

const duration = (file: string) => Number(ffprobe(file).format.duration);

let client: Client;
let speechWav: string;
let talking: { uploadId: string; durationSeconds: number };
let logo: string;

beforeAll(async () => {
  client = await newClient(inject("e2eMainUrl"), 100_000);
  speechWav = await download(
    client,
    await runTool(client, "text-to-speech", { text: `${SENTENCE}.`, voice: "thomas" }),
  );
  // A black video whose sound is the spoken sentence, with half a second of silence before it.
  const video = generate("pipeline-talking.mp4", [
    "-f",
    "lavfi",
    "-i",
    "color=c=black:size=320x240:rate=25",
    "-i",
    speechWav,
    "-af",
    "adelay=500:all=1,apad=pad_dur=0.5",
    "-shortest",
    "-c:v",
    "libx264",
    "-pix_fmt",
    "yuv420p",
    "-c:a",
    "aac",
  ]);
  talking = await upload(client, video);
  logo = (await upload(client, path.join(FIXTURES, "logo.png"))).uploadId;
}, 180_000);

describe("the documented pipelines", () => {
  it("trim -> clean-audio -> subtitles (automatic) -> watermark", async () => {
    const end = Math.round((talking.durationSeconds - 0.3) * 10) / 10;
    const steps = [
      { tool: "trim", params: { start: 0.3, end } },
      { tool: "clean-audio" },
      { tool: "subtitles", params: { captionWords: 2, position: 80 } },
      { tool: "watermark", params: { watermarkUploadId: logo, opacity: 100 } },
    ];
    const quoted = (await (
      await fetch(`${client.base}/api/v1/quotes`, {
        method: "POST",
        headers: { ...client.auth, "content-type": "application/json" },
        body: JSON.stringify({ uploadId: talking.uploadId, steps }),
      })
    ).json()) as { tool: string; creditsRequired: number; steps: { creditsRequired: number }[] };
    expect(quoted.tool).toBe("pipeline");
    const before = await balance(client);
    const job = await runPipeline(client, { uploadId: talking.uploadId, steps, maxCredits: quoted.creditsRequired });
    // Priced as quoted, one entry per step, and nothing else spent.
    expect(job.envelope.creditsUsed).toBe(quoted.creditsRequired);
    expect(job.envelope.steps.map((s) => s.creditsUsed)).toEqual(quoted.steps.map((s) => s.creditsRequired));
    expect(await balance(client)).toBe(before - quoted.creditsRequired);
    expect(job.steps.map((s) => [s.tool, s.status])).toEqual(steps.map((s) => [s.tool, "completed"]));
    expect(job.result!.filename).toMatch(/\.mp4$/);

    const file = await download(client, job);
    const probe = ffprobe(file);
    expect(stream(probe, "video")!.codec_name).toBe("h264");
    expect(stream(probe, "audio")).toBeDefined();
    expect(Math.abs(duration(file) - (end - 0.3))).toBeLessThanOrEqual(0.15);
    // The logo on every frame, the recognised words burnt in below the middle while they are spoken.
    let captions = 0;
    for (const t of [0.6, 1.2, 1.8]) {
      const frame = frameAt(file, t, 320, 240);
      expect(redPixels(frame), `logo at ${t} s`).toBeGreaterThan(500);
      captions += captionPixels(frame);
    }
    expect(captions).toBeGreaterThan(30);
  });

  it("voice-change -> watermark -> convert to webm", async () => {
    const job = await runPipeline(client, {
      uploadId: talking.uploadId,
      steps: [
        { tool: "voice-change", params: { voice: "lea", language: "en" } },
        { tool: "watermark", params: { watermarkUploadId: logo, opacity: 100 } },
        { tool: "convert", params: { format: "webm" } },
      ],
    });
    expect(job.steps.map((s) => s.engine)).toEqual(["backend", expect.any(String), expect.any(String)]);
    const file = await download(client, job);
    const probe = ffprobe(file);
    expect(probe.format.format_name).toContain("webm");
    expect(stream(probe, "video")!.codec_name).toMatch(/^vp[89]$/);
    expect(stream(probe, "audio")!.codec_name).toMatch(/^(opus|vorbis)$/);
    expect(Math.abs(duration(file) - talking.durationSeconds)).toBeLessThanOrEqual(0.2);
    expect(redPixels(frameAt(file, 1, 320, 240))).toBeGreaterThan(500);
    // A voice, not silence: the new voice speaks where the sentence was.
    expect(rmsDb(file)).toBeGreaterThan(-40);
  });

  it("extract-audio -> transcribe to SRT", async () => {
    const job = await runPipeline(client, {
      uploadId: talking.uploadId,
      steps: [
        { tool: "extract-audio", params: { format: "mp3" } },
        { tool: "transcribe", params: { format: "srt", language: "en" } },
      ],
    });
    const srt = readFileSync(await download(client, job), "utf8");
    expect(srt).toMatch(/00:00:0\d,\d{3} --> 00:00:0\d,\d{3}/);
    const words = srt.toLowerCase().replace(/[^a-z ]/g, " ");
    const found = SENTENCE.split(" ").filter((word) => words.includes(word));
    expect(found.length).toBeGreaterThanOrEqual(5);
  });
});

describe("money", () => {
  it("refuses a chain that cannot run before any debit", async () => {
    const before = await balance(client);
    for (const [steps, field] of [
      [[{ tool: "extract-audio" }, { tool: "watermark", params: { watermarkText: "ACME" } }], "steps.1 (watermark)"],
      [[{ tool: "transcribe" }, { tool: "convert" }], "steps.1 (convert)"],
      [[{ tool: "trim", params: { start: 0, end: 999 } }, { tool: "convert" }], "steps.0 (trim)"],
    ] as const) {
      const refused = await startPipeline(client, { uploadId: talking.uploadId, steps });
      expect(refused.status).toBe(400);
      expect(refused.body.error!.message).toContain(field);
    }
    expect(await balance(client)).toBe(before);
  });

  it("refunds in full, once, a pipeline that fails at its second step", async () => {
    const before = await balance(client);
    // A language the engines lack fails the transcription (the contract: failed and refunded).
    const started = await startPipeline(client, {
      uploadId: talking.uploadId,
      steps: [
        { tool: "trim", params: { start: 0, end: 1.5 } },
        { tool: "transcribe", params: { language: "zu" } },
      ],
    });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    expect(started.body.creditsUsed).toBeGreaterThan(0);
    const job = await waitFor(client, started.body.jobId);
    expect(job.status).toBe("failed");
    expect(job.steps.map((s) => s.status)).toEqual(["completed", "failed"]);
    expect(job.steps[1]!.error).toBeTruthy();
    expect(await balance(client)).toBe(before);
  });

  it("refunds a cancelled pipeline in full and skips its remaining steps", async () => {
    const long = await upload(client, path.join(FIXTURES, "long-30s.mp4"));
    const before = await balance(client);
    const started = await startPipeline(client, {
      uploadId: long.uploadId,
      steps: [
        { tool: "clean-audio" },
        { tool: "watermark", params: { watermarkText: "ACME" } },
        { tool: "convert", params: { format: "webm" } },
      ],
    });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const cancelled = await fetch(`${client.base}/api/v1/jobs/${started.body.jobId}/cancel`, {
      method: "POST",
      headers: client.auth,
    });
    expect(cancelled.status).toBe(200);
    const job = await waitFor(client, started.body.jobId);
    expect(job.status).toBe("failed");
    expect(job.error).toMatch(/Cancelled/);
    expect(job.steps.at(-1)!.status).toBe("skipped");
    expect(await balance(client)).toBe(before);
  });

  it("replays an Idempotency-Key without a second debit, and runs free and marked with a test key", async () => {
    const body = {
      uploadId: talking.uploadId,
      steps: [{ tool: "trim", params: { start: 0, end: 1 } }, { tool: "convert" }],
    };
    const before = await balance(client);
    const first = await startPipeline(client, body, { "idempotency-key": "pipeline-once" });
    const again = await startPipeline(client, body, { "idempotency-key": "pipeline-once" });
    expect(again.body.jobId).toBe(first.body.jobId);
    expect(again.body.steps).toEqual(first.body.steps);
    expect(await balance(client)).toBe(before - first.body.creditsUsed);
    await waitFor(client, first.body.jobId);

    const test = await testKeyOf(client);
    const black = await upload(
      test,
      generate("pipeline-black.mp4", [
        "-f",
        "lavfi",
        "-i",
        "color=c=black:size=320x240:rate=25:d=3",
        "-f",
        "lavfi",
        "-i",
        "sine=f=440:d=3",
        "-shortest",
        "-c:v",
        "libx264",
        "-pix_fmt",
        "yuv420p",
        "-c:a",
        "aac",
      ]),
    );
    const started = await startPipeline(test, {
      uploadId: black.uploadId,
      steps: [
        { tool: "trim", params: { start: 0, end: 2 } },
        { tool: "convert", params: { format: "mkv" } },
      ],
    });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    expect(started.body.creditsUsed).toBe(0);
    const job = await waitFor(test, started.body.jobId);
    expect(job.status, job.error).toBe("completed");
    expect(markPixels(await download(test, job)).corner).toBeGreaterThan(20);
  });
});

describe("both engines", () => {
  const srt = "1\n00:00:00,200 --> 00:00:01,800\nBONJOUR\n";
  for (const [engine, url] of [
    ["wasm", "e2eWasmUrl"],
    ["backend", "e2eForcedBackendUrl"],
  ] as const) {
    it(`trim -> clean-audio -> subtitles -> watermark, every step on ${engine}`, async () => {
      const own = await newClient(inject(url), 10_000);
      const video = await upload(own, path.join(FIXTURES, "clip.mp4"));
      const mark = (await upload(own, path.join(FIXTURES, "logo.png"))).uploadId;
      const job = await runPipeline(own, {
        uploadId: video.uploadId,
        steps: [
          { tool: "trim", params: { start: 0.5, end: 2.5 } },
          { tool: "clean-audio" },
          { tool: "subtitles", params: { srtContent: srt, position: 80, size: "grande" } },
          { tool: "watermark", params: { watermarkUploadId: mark, opacity: 100 } },
        ],
      });
      expect(job.steps.map((s) => s.engine)).toEqual([engine, engine, engine, engine]);
      const file = await download(own, job);
      expect(Math.abs(duration(file) - 2)).toBeLessThanOrEqual(0.1);
      const probe = ffprobe(file);
      const { width, height } = stream(probe, "video")!;
      const frame = frameAt(file, 1, 320, 240);
      // The source at the same moment (1 s into a trim from 0.5 s) has its own colours: the logo adds to them.
      const source = frameAt(path.join(FIXTURES, "clip.mp4"), 1.5, 320, 240);
      expect(redPixels(frame), `${width}x${height}`).toBeGreaterThan(redPixels(source) + 500);
      // The caption (0.2 s to 1.8 s of the trimmed clip) adds white to the lower half, where the source had its own.
      let added = 0;
      for (const t of [0.5, 1, 1.5])
        added +=
          captionPixels(frameAt(file, t, 320, 240)) -
          captionPixels(frameAt(path.join(FIXTURES, "clip.mp4"), t + 0.5, 320, 240));
      expect(added).toBeGreaterThan(40);
    });
  }
});
