/**
 * A pipeline against the calls a client without pipelines makes, and against native ffmpeg, on the
 * same generated clip (40 s 1280x720 25 fps, speech-like sound under noise), in one run:
 *  (a) POST /api/v1/pipelines trim -> clean-audio -> watermark (text), call to downloaded result;
 *  (b) the same three tools as three calls one after another (call, wait, download, re-upload the
 *      result, next call...), first call to the last downloaded byte;
 *  (c) one native ffmpeg process doing the same work: the trim (accurate input seek), clean-audio's
 *      graph (src/media/commands/clean-audio.ts) with a one-pass loudnorm, and the watermark
 *      builder's own drawtext graph, one encode.
 * Each result is checked by content before its time counts: duration, one video and one audio
 * stream, loudness near clean-audio's -16 LUFS (the source is far below), and the picture against
 * the native result (same cut, same mark). Median of BENCH_PIPELINE_RUNS rounds (default 5).
 * `BENCH_ONLY=pipeline npm run bench` (or `npm run bench -- pipeline`).
 */
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { callTool, startStack, type Stack } from "./api";
import { FFMPEG, ffprobe, probeResult, run, runNative } from "./media";
import {
  CLEAN_AUDIO_LOUDNESS,
  cleanAudioFilter,
  DENOISED,
  denoisedInput,
  denoisePassArgs,
} from "../src/media/commands/clean-audio";
import { FONTS_DIR, type MediaInput } from "../src/media/commands/command";
import { audioEncoderArgs, videoEncoderArgs } from "../src/media/commands/encoders";
import { buildWatermarkCommand } from "../src/media/commands/watermark";
import { tools } from "../src/tools";
import { denoiseRawFile } from "../backend/src/denoise";

const root = path.resolve(import.meta.dirname, "..");
const CLIP_SECONDS = 40;
const START = 5;
const END = 35;
const KEPT = END - START;
const MARK = "© Démo 2026";
/** Output duration within this of the cut (AAC priming and frame rounding stay well inside). */
const TOLERANCE_SECONDS = 0.3;
/** Integrated loudness within this of clean-audio's target; the source sits about 10 LU below. */
const LOUDNESS_TOLERANCE_LU = 1.5;
/** PSNR (dB) against the native result at which a frame counts as the same picture (same cut, same mark). */
const SAME_PICTURE_DB = 30;

const STEPS = [
  { tool: "trim", params: { start: START, end: END } },
  { tool: "clean-audio", params: {} },
  { tool: "watermark", params: { watermarkText: MARK, type: "fixe" } },
] as const;

interface JobView {
  status: string;
  error?: string;
  result?: { url: string; filename: string };
  steps?: { tool: string; status: string; engine?: string; startedAt?: string; finishedAt?: string }[];
}

interface Timed {
  seconds: number;
  file: string;
  /** Where the time went, one line per step. */
  detail: string[];
  /** Seconds of the backend's ffmpeg runs (measuring passes included), summed over the steps. */
  ffmpeg: number;
  /** Seconds the backend spent reading inputs before ffmpeg started and writing results to storage. */
  backendIo: number;
  /** Seconds of the client's downloads and re-uploads. */
  client: number;
}

const s = (ms: number) => (ms / 1000).toFixed(2);
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/** 40 s 720p25 H.264 testsrc2 with a voice-like signal (as bench/media.ts's speech.wav, quieter) under noise, AAC stereo. */
async function generateClip(dir: string): Promise<string> {
  const clip = path.join(dir, "talk.mp4");
  const voice =
    "aevalsrc=exprs='0.15*(0.6*sin(2*PI*(140+15*sin(2*PI*0.7*t))*t)+0.3*sin(2*PI*280*t)+0.2*sin(2*PI*420*t)+0.12*sin(2*PI*700*t)+0.08*sin(2*PI*1100*t))" +
    `*(0.55+0.45*sin(2*PI*4*t))*gt(sin(2*PI*0.35*t),-0.6)':sample_rate=48000:duration=${CLIP_SECONDS}`;
  const made = await run(FFMPEG, [
    "-hide_banner",
    "-nostdin",
    "-y",
    "-f",
    "lavfi",
    "-i",
    `testsrc2=size=1280x720:rate=25:duration=${CLIP_SECONDS}`,
    "-f",
    "lavfi",
    "-i",
    voice,
    "-f",
    "lavfi",
    "-i",
    `anoisesrc=color=pink:amplitude=0.02:sample_rate=48000:duration=${CLIP_SECONDS}`,
    "-filter_complex",
    "[1:a][2:a]amix=inputs=2:normalize=0,aformat=channel_layouts=stereo[a]",
    "-map",
    "0:v",
    "-map",
    "[a]",
    "-c:v",
    "libx264",
    "-preset",
    "veryfast",
    "-crf",
    "23",
    "-g",
    "50",
    "-pix_fmt",
    "yuv420p",
    "-c:a",
    "aac",
    "-b:a",
    "128k",
    "-movflags",
    "+faststart",
    "-shortest",
    clip,
  ]);
  if (made.code !== 0) throw new Error(made.stderr.slice(-1000));
  return clip;
}

/** The POST of a tool call or pipeline, answering its job id. */
async function post(stack: Stack, route: string, body: unknown): Promise<string> {
  const response = await fetch(`${stack.base}/api/v1/${route}`, {
    method: "POST",
    headers: { ...stack.auth, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const envelope = (await response.json()) as { jobId?: string };
  if (!response.ok || !envelope.jobId) throw new Error(`${route}: ${response.status} ${JSON.stringify(envelope)}`);
  return envelope.jobId;
}

/** Waits for the job's end with ?wait=50; a failed job throws. */
async function waitJob(stack: Stack, jobId: string): Promise<JobView & { result: { url: string; filename: string } }> {
  for (;;) {
    const job = (await (
      await fetch(`${stack.base}/api/v1/jobs/${jobId}?wait=50`, { headers: stack.auth })
    ).json()) as JobView;
    if (job.status === "failed")
      throw new Error(`job ${jobId} failed: ${job.error ?? "?"} ${JSON.stringify(job.steps ?? [])}`);
    if (job.status === "completed" && job.result) return job as JobView & { result: { url: string; filename: string } };
  }
}

async function download(stack: Stack, url: string): Promise<Uint8Array> {
  const response = await fetch(new URL(url, stack.base), { headers: stack.auth });
  if (!response.ok) throw new Error(`download ${url}: ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

async function upload(stack: Stack, bytes: Uint8Array, filename: string): Promise<string> {
  const form = new FormData();
  form.append("file", new Blob([bytes]), filename);
  const response = await fetch(`${stack.base}/api/v1/uploads`, { method: "POST", headers: stack.auth, body: form });
  const body = (await response.json()) as { uploadId?: string };
  if (!response.ok || !body.uploadId)
    throw new Error(`upload of ${filename}: ${response.status} ${JSON.stringify(body)}`);
  return body.uploadId;
}

/** The backend's ffmpeg and storage seconds of a job (or a step, `<job>-s<n>`), from its log. */
function backendSeconds(stack: Stack, id: string): { ffmpeg: number; io: number } {
  const log = stack.backendJobs.get(id);
  if (!log) return { ffmpeg: 0, io: 0 };
  const input = log.progressiveInputBytes ? 0 : (log.downloadMs ?? 0);
  return {
    ffmpeg: ((log.ffmpegMs ?? 0) + (log.loudnormMeasureMs ?? 0)) / 1000,
    io: (input + (log.uploadMs ?? 0)) / 1000,
  };
}

/**
 * "backend 45.1 s (queue 0 / in 12 / measure 400 / ffmpeg 2285 / out 195 ms), callback 1 attempt"
 * from the backend's log of a job (or a step, `<job>-s<n>`); its total is the backend's own time.
 */
function backendPhases(stack: Stack, id: string): string {
  const log = stack.backendJobs.get(id) as
    | (NonNullable<ReturnType<Stack["backendJobs"]["get"]>> & { durationMs?: number; callbackAttempts?: number })
    | undefined;
  if (!log) return "";
  const input = log.progressiveInputBytes
    ? `in (read while running) ${log.progressiveDownloadMs}`
    : `in ${log.downloadMs}`;
  const measure = log.loudnormMeasureMs ? ` / measure ${log.loudnormMeasureMs}` : "";
  const attempts = log.callbackAttempts === undefined ? "" : `, callback ${log.callbackAttempts} attempt(s)`;
  return ` [backend ${s(log.durationMs ?? NaN)} s: queue ${log.queuedMs ?? 0} / ${input}${measure} / ffmpeg ${log.ffmpegMs} / out ${log.uploadMs} ms${attempts}]`;
}

/** (a): one pipeline call, waited for, its result downloaded. */
async function viaPipeline(stack: Stack, uploadId: string, out: string): Promise<Timed> {
  const started = performance.now();
  const postedAt = Date.now();
  const jobId = await post(stack, "pipelines", { uploadId, steps: STEPS });
  const job = await waitJob(stack, jobId);
  const seenAt = Date.now();
  const bytes = await download(stack, job.result.url);
  const seconds = (performance.now() - started) / 1000;
  const downloaded = Date.now();
  await writeFile(out, bytes);
  const detail: string[] = [];
  let previous = postedAt;
  let ffmpeg = 0;
  let backendIo = 0;
  for (const [i, step] of (job.steps ?? []).entries()) {
    const backend = backendSeconds(stack, `${jobId}-s${i}`);
    ffmpeg += backend.ffmpeg;
    backendIo += backend.io;
    const from = Date.parse(step.startedAt ?? "");
    const to = Date.parse(step.finishedAt ?? "");
    detail.push(
      `${step.tool} on ${step.engine ?? "?"}: ${i === 0 ? "call to start" : "gap"} ${s(from - previous)} s, step ${s(to - from)} s${backendPhases(stack, `${jobId}-s${i}`)}`,
    );
    previous = to;
  }
  detail.push(`last step's end to the client's answer ${s(seenAt - previous)} s, download ${s(downloaded - seenAt)} s`);
  return { seconds, file: out, detail, ffmpeg, backendIo, client: (downloaded - seenAt) / 1000 };
}

/** (b): the three tools as three calls, each result downloaded and uploaded again for the next. */
async function viaCalls(stack: Stack, uploadId: string, out: string): Promise<Timed> {
  const started = performance.now();
  const detail: string[] = [];
  let input = uploadId;
  let bytes = new Uint8Array();
  let ffmpeg = 0;
  let backendIo = 0;
  let client = 0;
  for (const [i, step] of STEPS.entries()) {
    const t0 = performance.now();
    const jobId = await post(stack, step.tool, { uploadId: input, ...step.params });
    const job = await waitJob(stack, jobId);
    const t1 = performance.now();
    bytes = await download(stack, job.result.url);
    const t2 = performance.now();
    let line = `${step.tool} on ${stack.routes.get(jobId) ?? (stack.backendJobs.has(jobId) ? "backend" : "?")}: call to end ${s(t1 - t0)} s, download ${s(t2 - t1)} s (${(bytes.length / 1e6).toFixed(1)} MB)`;
    if (i < STEPS.length - 1) {
      input = await upload(stack, bytes, job.result.filename);
      line += `, upload ${s(performance.now() - t2)} s`;
    }
    client += (performance.now() - t1) / 1000;
    const backend = backendSeconds(stack, jobId);
    ffmpeg += backend.ffmpeg;
    backendIo += backend.io;
    detail.push(line + backendPhases(stack, jobId));
  }
  const seconds = (performance.now() - started) / 1000;
  await writeFile(out, bytes);
  return { seconds, file: out, detail, ffmpeg, backendIo, client };
}

/** (c): one native ffmpeg doing the cut, clean-audio's graph with a one-pass loudnorm, and the text mark; one encode. */
async function nativeArgs(clip: MediaInput, work: string): Promise<string[]> {
  const mark = buildWatermarkCommand(tools.watermark.params.parse({ uploadId: "upl_bench", ...STEPS[2].params }), [
    clip,
  ]);
  for (const [name, content] of Object.entries(mark.files)) await writeFile(path.join(work, name), content);
  await mkdir(path.join(work, FONTS_DIR), { recursive: true });
  for (const font of mark.fonts)
    await writeFile(path.join(work, FONTS_DIR, font), await readFile(path.join(root, "assets/fonts", font)));
  const videoGraph = mark.args[mark.args.indexOf("-filter_complex") + 1]!;
  const { integrated, truePeak, lra } = CLEAN_AUDIO_LOUDNESS;
  const audioGraph = `${cleanAudioFilter(clip.probe.audioChannels)},loudnorm=I=${integrated}:TP=${truePeak}:LRA=${lra},aformat=sample_rates=48000[aout]`;
  const channels = clip.probe.audioChannels ?? 2;
  return [
    "-hide_banner",
    "-y",
    "-ss",
    String(START),
    "-t",
    String(KEPT),
    "-i",
    clip.name,
    // clean-audio's RNNoise pass, made before by viaNative on the same cut.
    ...denoisedInput(channels),
    "-filter_complex",
    `${videoGraph};${audioGraph}`,
    "-map",
    "[v]",
    "-map",
    "[aout]",
    ...videoEncoderArgs("x264", clip.probe.width, clip.probe.height),
    ...audioEncoderArgs("aac"),
    "-movflags",
    "+faststart",
    "-f",
    "mp4",
    "out.mp4",
  ];
}

/** The cut's sound decoded for RNNoise by clean-audio's own pass, denoised as the backend does (backend/src/denoise.ts), then the one encode. */
async function viaNative(args: string[], work: string, out: string): Promise<Timed> {
  const started = performance.now();
  const channels = Number(args[args.indexOf("-ac") + 1]);
  const decodeArgs = denoisePassArgs(args[args.indexOf("-i") + 1]!, channels);
  // The same cut as the encode: the seek and the length in front of the input.
  decodeArgs.splice(decodeArgs.indexOf("-i"), 0, "-ss", String(START), "-t", String(KEPT));
  const decode = await runNative(decodeArgs, work);
  if (decode.code !== 0) throw new Error(`native ffmpeg failed: ${decode.stderrTail}`);
  await denoiseRawFile(path.join(work, DENOISED), channels);
  const denoiseSeconds = (performance.now() - started) / 1000;
  const encode = await runNative(args, work);
  if (encode.code !== 0) throw new Error(`native ffmpeg failed: ${encode.stderrTail}`);
  const result = { ...encode, seconds: denoiseSeconds + encode.seconds };
  await writeFile(out, await readFile(path.join(work, "out.mp4")));
  return {
    seconds: result.seconds,
    file: out,
    detail: [`CPU ${result.cpuSeconds?.toFixed(2) ?? "?"} s`],
    ffmpeg: result.seconds,
    backendIo: 0,
    client: 0,
  };
}

/** Integrated loudness (LUFS) of the file's audio, by ebur128. */
async function loudness(file: string): Promise<number> {
  const result = await run(FFMPEG, [
    "-hide_banner",
    "-nostdin",
    "-i",
    file,
    "-map",
    "0:a:0",
    "-af",
    "ebur128",
    "-f",
    "null",
    "-",
  ]);
  const summary = result.stderr.slice(result.stderr.lastIndexOf("Summary:"));
  return Number(/I:\s+(-?[\d.]+) LUFS/.exec(summary)?.[1] ?? NaN);
}

/** PSNR (dB, average) of one frame at `at` s of each file. */
async function psnr(a: string, b: string, at: number): Promise<number> {
  const result = await run(FFMPEG, [
    "-hide_banner",
    "-nostdin",
    "-ss",
    String(at),
    "-i",
    a,
    "-ss",
    String(at),
    "-i",
    b,
    "-lavfi",
    "[0:v][1:v]psnr",
    "-frames:v",
    "1",
    "-f",
    "null",
    "-",
  ]);
  const value = /average:(\S+)/.exec(result.stderr)?.[1];
  return value === "inf" ? Infinity : Number(value ?? NaN);
}

/** What makes a result the right one; `reference` is the native result (undefined: this is it). */
async function check(file: string, reference?: string): Promise<{ ok: boolean; text: string }> {
  const problems: string[] = [];
  const json = await ffprobe(file);
  const duration = Number(json.format?.duration);
  const streams = json.streams ?? [];
  const video = streams.filter((st) => st.codec_type === "video");
  const audio = streams.filter((st) => st.codec_type === "audio");
  if (!(Math.abs(duration - KEPT) <= TOLERANCE_SECONDS)) problems.push(`duration ${duration} s, want ${KEPT}`);
  if (video.length !== 1 || audio.length !== 1) problems.push(`${video.length} video / ${audio.length} audio streams`);
  if (video[0] && (video[0].width !== 1280 || video[0].height !== 720))
    problems.push(`${video[0].width}x${video[0].height}`);
  const lufs = await loudness(file);
  if (!(Math.abs(lufs - CLEAN_AUDIO_LOUDNESS.integrated) <= LOUDNESS_TOLERANCE_LU))
    problems.push(`loudness ${lufs} LUFS`);
  let picture = "";
  if (reference) {
    const db = Math.min(await psnr(file, reference, 3), await psnr(file, reference, KEPT - 3));
    picture = `, picture ${db.toFixed(1)} dB from native`;
    if (!(db >= SAME_PICTURE_DB)) problems.push(`picture ${db.toFixed(1)} dB from the native result`);
  }
  const codecs = streams.map((st) => st.codec_name).join("/");
  const text = `${duration.toFixed(2)} s ${codecs} ${(await stat(file)).size >> 10} KiB, ${lufs.toFixed(1)} LUFS${picture}`;
  return { ok: problems.length === 0, text: problems.length ? `${text}: ${problems.join("; ")}` : text };
}

export async function runPipelineBench(): Promise<void> {
  const runs = Math.max(1, Number(process.env.BENCH_PIPELINE_RUNS ?? 5));
  const dir = await mkdtemp(path.join(os.tmpdir(), "bench-pipeline-"));
  const stack = await startStack(path.join(dir, "state"));
  const timed: Record<"a" | "b" | "c", Timed[]> = { a: [], b: [], c: [] };
  /** Each round's checked (a) and (b), run back to back: their ratio is less exposed to the machine's drift. */
  const pairs: { a: Timed; b: Timed }[] = [];
  let failures = 0;
  try {
    console.log(
      `\npipeline (trim ${START}-${END} s -> clean-audio -> watermark text) on a ${CLIP_SECONDS} s 720p clip, ${os.cpus().length} cores, ${runs} rounds`,
    );
    const clipFile = await generateClip(dir);
    const clip: MediaInput = {
      name: "in0.mp4",
      filename: "talk.mp4",
      sizeBytes: (await stat(clipFile)).size,
      probe: { ...(await probeResult(clipFile)), audioChannels: 2, frameRate: 25 },
    };
    const work = path.join(dir, "native");
    await mkdir(work);
    await writeFile(path.join(work, clip.name), await readFile(clipFile));
    const args = await nativeArgs(clip, work);
    if (process.env.BENCH_VERBOSE === "1") console.log(`native: ffmpeg ${args.join(" ")}`);
    console.log(`source: ${(clip.sizeBytes / 1e6).toFixed(1)} MB, ${(await loudness(clipFile)).toFixed(1)} LUFS`);
    const uploadId = await upload(stack, await readFile(clipFile), "talk.mp4");
    // Wakes both Workers and the backend (not counted): a short cut, as a first call would.
    await callTool(stack, "trim", { uploadId, start: 0, end: 1 });
    const load = () =>
      os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(" ");
    for (let round = 1; round <= runs; round++) {
      console.log(`  round ${round}, load average ${load()}`);
      const native = await viaNative(args, work, path.join(dir, `c${round}.mp4`));
      const nativeCheck = await check(native.file);
      // Alternate which API way goes first, so neither always follows the native run.
      const order = round % 2 ? (["a", "b"] as const) : (["b", "a"] as const);
      const results: Partial<Record<"a" | "b" | "c", Timed>> = { c: native };
      for (const way of order) {
        try {
          results[way] =
            way === "a"
              ? await viaPipeline(stack, uploadId, path.join(dir, `a${round}.mp4`))
              : await viaCalls(stack, uploadId, path.join(dir, `b${round}.mp4`));
        } catch (error) {
          failures++;
          console.log(`  round ${round} (${way}) FAILED: ${error instanceof Error ? error.message : String(error)}`);
        }
      }
      for (const way of ["a", "b", "c"] as const) {
        const result = results[way];
        if (!result) continue;
        const verdict = way === "c" ? nativeCheck : await check(result.file, native.file);
        if (verdict.ok && nativeCheck.ok) timed[way].push(result);
        else {
          failures++;
          delete results[way];
        }
        console.log(
          `  round ${round} (${way}) ${result.seconds.toFixed(2)} s ${verdict.ok ? "ok" : "FAILED CHECK (not timed)"}: ${verdict.text}`,
        );
        for (const line of result.detail) console.log(`      ${line}`);
      }
      if (results.a && results.b) pairs.push({ a: results.a, b: results.b });
    }
    console.log(`  after the last round, load average ${load()}`);
    const med = (way: "a" | "b" | "c", part: (t: Timed) => number) => median(timed[way].map(part));
    const [a, b, c] = [med("a", (t) => t.seconds), med("b", (t) => t.seconds), med("c", (t) => t.seconds)];
    const row = (way: "a" | "b" | "c", label: string) => {
      const seconds = med(way, (t) => t.seconds);
      const parts = [(t: Timed) => t.ffmpeg, (t: Timed) => t.backendIo, (t: Timed) => t.client].map((part) =>
        med(way, part),
      );
      const rest = med(way, (t) => t.seconds - t.ffmpeg - t.backendIo - t.client);
      const outside = med(way, (t) => t.seconds - t.ffmpeg);
      return `| ${label} | ${timed[way].map((t) => t.seconds.toFixed(2)).join(", ")} | **${seconds.toFixed(2)}** | ${(seconds / c).toFixed(2)} | ${parts.map((p) => p.toFixed(2)).join(" | ")} | ${rest.toFixed(2)} | ${outside.toFixed(2)} |`;
    };
    console.log(
      "\n| way | runs s | median s | / (c) | ffmpeg s | backend in/out s | client down/up s | rest s | all but ffmpeg s |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    );
    console.log(row("a", "(a) pipeline, one call"));
    console.log(row("b", "(b) three calls, results re-uploaded"));
    console.log(row("c", "(c) native ffmpeg, one process"));
    console.log(`(a)/(c) ${(a / c).toFixed(2)}, (b)/(c) ${(b / c).toFixed(2)}, (a)/(b) ${(a / b).toFixed(2)}`);
    console.log(
      `per round, (a)/(b): ${pairs.map((p) => (p.a.seconds / p.b.seconds).toFixed(2)).join(", ")} (median ${median(pairs.map((p) => p.a.seconds / p.b.seconds)).toFixed(2)}); (b) - (a) all but ffmpeg: ${pairs.map((p) => (p.b.seconds - p.b.ffmpeg - (p.a.seconds - p.a.ffmpeg)).toFixed(2)).join(", ")} s`,
    );
    if (failures > 0) console.log(`${failures} results failed (not timed)`);
    if (!(a < b)) console.log("the pipeline did not beat the three calls");
    if (failures > 0 || !(a < b) || timed.c.length === 0) process.exitCode = 1;
  } finally {
    await stack.stop();
    if (process.env.BENCH_KEEP === "1") console.log(`kept ${dir}`);
    else await rm(dir, { recursive: true, force: true });
  }
}
