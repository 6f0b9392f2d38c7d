/**
 * clean-audio's report and `removeSilence`, through the public API: the loudness the job reports
 * (source and result) against native ffmpeg's EBU R128 meter on the files themselves, the pauses
 * it cuts against the pauses generated, the result's length against the seconds it says it removed,
 * and, on a video, picture and sound still in sync after the cuts (every sound onset on a picture
 * onset). Audio on both engines; a video is cut on the backend (its picture is re-encoded).
 */
import { spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  balance,
  download,
  ebur128,
  ffprobe,
  generate,
  newClient,
  runTool,
  stream,
  testKeyOf,
  upload,
  type Client,
} from "./client";

const RATE = 48_000;
/** Where the voice stand-in sounds; the rest is quiet noise. Pauses: 3 s, 1.5 s, and 0.5 s (under the shortest pause cut). */
const VOICED = [
  [0, 3],
  [6, 8],
  [9.5, 12],
  [12.5, 14],
] as const;
const DURATION = 14;
const PAUSES_CUT = [
  [3, 6],
  [8, 9.5],
] as const;
const KEEP = 0.3;
const voicedExpr = VOICED.map(([a, b]) => `between(t,${a},${b})`).join("+");

interface AudioResult {
  loudness: { before: Figures | null; after: Figures | null };
  silence?: { removedSeconds: number; cuts: { start: number; end: number }[] };
}
interface Figures {
  integrated: number;
  truePeak: number;
  lra: number;
}

/** Where sound starts after a pause of at least 0.1 s (silencedetect's silence_end), seconds. */
function soundOnsets(file: string): number[] {
  const run = spawnSync(
    "ffmpeg",
    ["-hide_banner", "-nostats", "-i", file, "-map", "0:a:0", "-af", "silencedetect=n=-45dB:d=0.1", "-f", "null", "-"],
    { encoding: "utf8" },
  );
  return [...run.stderr.matchAll(/silence_end: ([\d.]+)/g)].map((m) => Number(m[1]));
}

/** Where the picture turns from black to white (blackdetect's black_end), seconds. */
function pictureOnsets(file: string): number[] {
  const run = spawnSync(
    "ffmpeg",
    ["-hide_banner", "-nostats", "-i", file, "-map", "0:v:0", "-vf", "blackdetect=d=0.1:pix_th=0.2", "-f", "null", "-"],
    { encoding: "utf8" },
  );
  return [...run.stderr.matchAll(/black_end:([\d.]+)/g)].map((m) => Number(m[1]));
}

const duration = (file: string) => Number(ffprobe(file).format.duration);

const engines = { wasm: "wasm (ffmpeg.wasm)", backend: "forced (native backend)" } as const;
type EngineName = keyof typeof engines;
const clients = {} as Record<EngineName, Client>;
const report: string[] = [];

beforeAll(async () => {
  clients.wasm = await newClient(inject("e2eWasmUrl"));
  clients.backend = await newClient(inject("e2eForcedBackendUrl"));
});
afterAll(() => console.log(`clean-audio's report and removeSilence:\n${report.join("\n")}`));

function expectFiguresOf(file: string, reported: Figures | null) {
  const measured = ebur128(file);
  expect(reported).not.toBeNull();
  expect(Math.abs(reported!.integrated - measured.integrated)).toBeLessThanOrEqual(0.2);
  expect(Math.abs(reported!.truePeak - measured.truePeak)).toBeLessThanOrEqual(0.2);
  expect(Math.abs(reported!.lra - measured.lra)).toBeLessThanOrEqual(0.3);
}

/** The cuts fall inside the generated pauses, each keeping about KEEP seconds of it. */
function expectCuts(silence: AudioResult["silence"]) {
  expect(silence).toBeDefined();
  expect(silence!.cuts).toHaveLength(PAUSES_CUT.length);
  silence!.cuts.forEach((cut, i) => {
    const [start, end] = PAUSES_CUT[i]!;
    expect(cut.start).toBeGreaterThanOrEqual(start);
    expect(cut.end).toBeLessThanOrEqual(end);
    // The voice's tail (the gate's release) may end a pause a little later than generated.
    expect(cut.end - cut.start).toBeGreaterThan(end - start - KEEP - 0.5);
  });
  const expected = PAUSES_CUT.reduce((sum, [a, b]) => sum + (b - a - KEEP), 0);
  expect(Math.abs(silence!.removedSeconds - expected)).toBeLessThanOrEqual(0.6);
}

describe("clean-audio on a voice stand-in with pauses", () => {
  let file = "";
  /** What the same file costs without removeSilence. */
  const plainCredits = new Set<number>();
  beforeAll(() => {
    file = generate("clean-silence.wav", [
      "-f",
      "lavfi",
      "-i",
      `aevalsrc='(0.1*sin(2*PI*400*t)+0.05*sin(2*PI*3000*t))*(${voicedExpr})':s=${RATE}:d=${DURATION}`,
      "-f",
      "lavfi",
      "-i",
      `anoisesrc=a=0.003:c=white:r=${RATE}:d=${DURATION}:seed=9`,
      "-filter_complex",
      "[0][1]amix=inputs=2:normalize=0",
      "-c:a",
      "pcm_s16le",
    ]);
  });

  it.each(["backend", "wasm"] as const)(
    "on %s: reports the loudness before and after, cuts nothing unasked",
    async (engine) => {
      const client = clients[engine];
      const source = await upload(client, file);
      const job = (await runTool(client, "clean-audio", { uploadId: source.uploadId })) as {
        result?: { audio?: AudioResult };
      } & Awaited<ReturnType<typeof runTool>>;
      const result = await download(client, job);
      plainCredits.add(job.creditsUsed);
      const audio = job.result?.audio;
      expect(audio?.silence).toBeUndefined();
      expectFiguresOf(file, audio!.loudness.before);
      expectFiguresOf(result, audio!.loudness.after);
      expect(Math.abs(audio!.loudness.after!.integrated + 16)).toBeLessThanOrEqual(0.5);
      expect(Math.abs(duration(result) - DURATION)).toBeLessThanOrEqual(0.05);
    },
  );

  it.each(["backend", "wasm"] as const)("on %s: removeSilence cuts the long pauses and says so", async (engine) => {
    const client = clients[engine];
    const source = await upload(client, file);
    const job = (await runTool(client, "clean-audio", { uploadId: source.uploadId, removeSilence: true })) as {
      result?: { audio?: AudioResult };
    } & Awaited<ReturnType<typeof runTool>>;
    const result = await download(client, job);
    const audio = job.result!.audio!;
    expectCuts(audio.silence);
    expectFiguresOf(result, audio.loudness.after);
    expect(Math.abs(duration(result) - (DURATION - audio.silence!.removedSeconds))).toBeLessThanOrEqual(0.05);
    // Billed on the input's duration, as without the option.
    expect([...plainCredits]).toEqual([job.creditsUsed]);
    report.push(
      `  ${engines[engine]}: removed ${audio.silence!.removedSeconds} s in ${JSON.stringify(audio.silence!.cuts)}; ` +
        `${audio.loudness.before!.integrated} -> ${audio.loudness.after!.integrated} LUFS; result ${duration(result).toFixed(3)} s`,
    );
  });

  it.each(["backend", "wasm"] as const)(
    "on %s with a test key: the pauses cut, then the result marked",
    async (engine) => {
      const client = await testKeyOf(clients[engine]);
      const source = await upload(client, file);
      const job = (await runTool(client, "clean-audio", { uploadId: source.uploadId, removeSilence: true })) as {
        result?: { audio?: AudioResult };
      } & Awaited<ReturnType<typeof runTool>>;
      const result = await download(client, job);
      expectCuts(job.result!.audio!.silence);
      expect(ffprobe(result).format.tags?.comment ?? ffprobe(result).format.tags?.COMMENT).toBe("TEST");
      expect(Math.abs(duration(result) - (DURATION - job.result!.audio!.silence!.removedSeconds))).toBeLessThanOrEqual(
        0.05,
      );
    },
  );

  it("refuses settings out of range with a 400 naming the field, and spends nothing", async () => {
    const client = clients.wasm;
    const source = await upload(client, file);
    const before = await balance(client);
    for (const removeSilence of [{ minPauseSeconds: 0.1 }, { thresholdDb: -10 }, { keepSeconds: 5 }, "yes"]) {
      const response = await fetch(`${client.base}/api/v1/clean-audio`, {
        method: "POST",
        headers: { ...client.auth, "content-type": "application/json" },
        body: JSON.stringify({ uploadId: source.uploadId, removeSilence }),
      });
      const body = (await response.json()) as { error: { message: string } };
      expect(response.status).toBe(400);
      expect(body.error.message).toContain("removeSilence");
    }
    expect(await balance(client)).toBe(before);
  });
});

describe("clean-audio with removeSilence on a video", () => {
  it("cuts picture and sound at the same instants: every sound onset stays on its picture onset", async () => {
    const file = generate("clean-silence.mp4", [
      "-f",
      "lavfi",
      "-i",
      `color=c=black:s=320x240:r=25:d=${DURATION},drawbox=enable='${voicedExpr}':color=white:t=fill`,
      "-f",
      "lavfi",
      "-i",
      `aevalsrc='(0.1*sin(2*PI*400*t)+0.05*sin(2*PI*3000*t))*(${voicedExpr})+0.003*(random(0)-0.5)':s=${RATE}:d=${DURATION}`,
      "-c:v",
      "libx264",
      "-pix_fmt",
      "yuv420p",
      "-c:a",
      "aac",
      "-shortest",
    ]);
    const client = await newClient(inject("e2eMainUrl"));
    const source = await upload(client, file);
    const job = (await runTool(client, "clean-audio", { uploadId: source.uploadId, removeSilence: true })) as {
      result?: { audio?: AudioResult };
    } & Awaited<ReturnType<typeof runTool>>;
    const result = await download(client, job);
    const audio = job.result!.audio!;
    expectCuts(audio.silence);
    const probe = ffprobe(result);
    const total = DURATION - audio.silence!.removedSeconds;
    expect(Math.abs(Number(stream(probe, "video")!.duration) - total)).toBeLessThanOrEqual(0.1);
    expect(Math.abs(Number(stream(probe, "audio")!.duration) - total)).toBeLessThanOrEqual(0.1);
    const sound = soundOnsets(result);
    const picture = pictureOnsets(result);
    // The three pauses left (two shortened to KEEP, one too short to cut) each end on a frame of white.
    expect(picture).toHaveLength(VOICED.length - 1);
    expect(sound).toHaveLength(picture.length);
    sound.forEach((onset, i) => expect(Math.abs(onset - picture[i]!)).toBeLessThanOrEqual(0.06));
    report.push(`  video on the backend: sound onsets ${sound.join(", ")} s, picture onsets ${picture.join(", ")} s`);
  });
});
