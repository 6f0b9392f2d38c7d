/**
 * End to end through the API, as a user meets it: the container backend (native ffmpeg) and
 * one `wrangler dev` session running both Workers (API + media), on this machine. For every
 * media tool on a 720p 10 s and a 1080p 60 s clip: the route the router took (from the media
 * Worker's log), the time from the tool call to the downloaded result, the same ffmpeg command
 * run natively in this run, their ratio, and the fixed overhead (API time - native time); then
 * the latency of tool calls at 20 calls/s while four jobs run on ffmpeg.wasm.
 * `BENCH_ONLY=api npm run bench` (BENCH_API_SIZES=720p to skip the 1080p set).
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { measureR2Ceilings } from "./r2-baseline";
import { freePort, percentile } from "./util";
import type { MediaInput } from "../src/media/commands/command";
import { localPresignedR2Vars, startLocalWorkers } from "../scripts/local-workers";
import { benchCases, type BenchInputs } from "./cases";
import { FFMPEG, generateSources, probeResult, run, runNative } from "./media";
import { loudnessFinalArgs } from "@media-credits/wire/loudness";

const root = path.resolve(import.meta.dirname, "..");
const wranglerJs = path.join(root, "node_modules/wrangler/bin/wrangler.js");
const ADMIN = "bench-admin";
const SECRET = "bench-backend-secret";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mb = (bytes?: number) => (bytes === undefined ? "?" : `${(bytes / 1e6).toFixed(1)} MB`);

/** The API body of each bench case (bench/cases.ts ids), given the uploads' ids. */
export type Uploads = { clip: string; clip2: string; logo: string; speech: string };
export const SRT =
  "1\n00:00:00,500 --> 00:00:03,000\nBonjour à tous, bienvenue !\n\n2\n00:00:03,500 --> 00:00:06,500\nLes sous-titres sont incrustés\n\n3\n00:00:07,000 --> 00:00:09,500\nMerci d'avoir regardé.\n";
export const apiCalls: Record<string, (u: Uploads) => { tool: string; body: Record<string, unknown> }> = {
  "extract-audio-mp3": (u) => ({ tool: "extract-audio", body: { uploadId: u.clip, format: "mp3" } }),
  "convert-webm": (u) => ({ tool: "convert", body: { uploadId: u.clip, format: "webm" } }),
  "convert-mkv": (u) => ({ tool: "convert", body: { uploadId: u.clip, format: "mkv" } }),
  trim: (u) => ({ tool: "trim", body: { uploadId: u.clip, start: 2, end: 7 } }),
  merge: (u) => ({ tool: "merge", body: { uploadIds: [u.clip, u.clip2] } }),
  "watermark-text-fixe": (u) => ({
    tool: "watermark",
    body: { uploadId: u.clip, watermarkText: "© Démo 2026", type: "fixe" },
  }),
  "watermark-image-flottant": (u) => ({
    tool: "watermark",
    body: { uploadId: u.clip, watermarkUploadId: u.logo, type: "flottant", interval: 3 },
  }),
  "clean-audio": (u) => ({ tool: "clean-audio", body: { uploadId: u.speech } }),
  subtitles: (u) => ({ tool: "subtitles", body: { uploadId: u.clip, srtContent: SRT } }),
};

/** The phases of a backend job's log line (backend/src/job-runner.ts), ms and bytes. */
interface BackendJobLog {
  queuedMs?: number;
  downloadMs?: number;
  ffmpegMs?: number;
  loudnormMeasureMs?: number;
  uploadMs?: number;
  inputBytes?: number;
  outputBytes?: number;
  /** Inputs ffmpeg read while they downloaded: their bytes and when the last one was whole. */
  progressiveInputBytes?: number;
  progressiveDownloadMs?: number;
}

/** "in 12 / ffmpeg 2285 / out 1953 ms (...)": where a backend job's time went. */
function phasesOf(log: BackendJobLog): string {
  const measure = log.loudnormMeasureMs ? `measure ${log.loudnormMeasureMs} / ` : "";
  const alongside = log.progressiveInputBytes
    ? `, ${mb(log.progressiveInputBytes)} read while downloading, whole after ${log.progressiveDownloadMs} ms`
    : "";
  return `queue ${log.queuedMs ?? 0} / in ${log.downloadMs} / ${measure}ffmpeg ${log.ffmpegMs} / out ${log.uploadMs} ms (${mb(log.inputBytes)} in${alongside}, ${mb(log.outputBytes)} out)`;
}

export interface Stack {
  base: string;
  auth: { authorization: string };
  routes: Map<string, string>;
  /** The wrangler processes of both Workers (their workerd children are measured). */
  pids: number[];
  /** The backend's own log of each job it ran: phases in ms. */
  backendJobs: Map<string, BackendJobLog>;
  stop: () => Promise<void>;
}

export async function startStack(state: string, extraVars: Record<string, string> = {}): Promise<Stack> {
  const env = { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true" };
  const backendPort = await freePort();
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const backend = spawn(process.execPath, [path.join(root, "backend/src/server.ts")], {
    cwd: path.join(root, "backend"),
    env: {
      ...process.env,
      PORT: String(backendPort),
      HOST: "127.0.0.1",
      BACKEND_SECRET: SECRET,
      FONTS_DIR: path.join(root, "assets/fonts"),
      ALLOW_PRIVATE_URLS: "true",
    },
    stdio: ["ignore", "pipe", "ignore"],
  });
  const backendJobs: Stack["backendJobs"] = new Map();
  let backendLog = "";
  backend.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
    backendLog += chunk;
    const lines = backendLog.split("\n");
    backendLog = lines.pop() ?? "";
    for (const line of lines) {
      try {
        const entry = JSON.parse(line) as { event?: string; jobId?: string };
        if (entry.event === "job" && entry.jobId) backendJobs.set(entry.jobId, entry);
      } catch {}
    }
  });
  spawnSync(process.execPath, [wranglerJs, "d1", "migrations", "apply", "DB", "--local", "--persist-to", state], {
    cwd: root,
    env,
  });
  // How the backend reaches the media: URLs the Worker serves, as `npm run dev` does, or with
  // BENCH_MEDIA_URLS=presigned production's presigned S3 URLs on the emulation's S3 API.
  const mediaUrls = process.env.BENCH_MEDIA_URLS === "presigned" ? localPresignedR2Vars(port) : {};
  const vars = {
    ADMIN_TOKEN: ADMIN,
    BACKEND_SECRET: SECRET,
    AUTH_SECRET: "bench-auth-secret",
    BACKEND_URL: `http://127.0.0.1:${backendPort}`,
    PUBLIC_BASE_URL: base,
    ALLOW_PRIVATE_URLS: "true",
    ...mediaUrls,
    ...extraVars,
  };
  const { api: worker, media } = await startLocalWorkers({
    port,
    mediaPort: await freePort(),
    stateDir: state,
    registryDir: path.join(state, "registry"),
    vars,
    stdio: ["ignore", "pipe", "ignore"],
  });
  // "job route <jobId> <tool> <engine> <reason>", logged by the media Worker for each command.
  const routes = new Map<string, string>();
  let pending = "";
  worker.stdout!.resume();
  media.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
    pending += chunk;
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) {
      const match = /job route (job_\w+) \S+ (wasm|backend)/.exec(line);
      if (match) routes.set(match[1]!, match[2]!);
    }
  });
  for (let i = 0; ; i++) {
    if (i > 400 || worker.exitCode !== null) throw new Error("wrangler dev did not start");
    try {
      if ((await fetch(`${base}/api/v1/openapi.json`)).ok) break;
    } catch {}
    await sleep(300);
  }
  const admin = { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" };
  // The Scale plan: its keys may send 1000 requests per 10 s (src/services/platform/rate-limits.ts), room
  // for polling a job every 20 ms and for the 20 calls/s latency burst; the default (payg) is 100.
  const account = (await (
    await fetch(`${base}/api/admin/accounts`, {
      method: "POST",
      headers: admin,
      body: JSON.stringify({ email: `bench-${Date.now()}@example.com`, credits: 1_000_000, plan: "scale" }),
    })
  ).json()) as { accountId: string };
  const key = (await (
    await fetch(`${base}/api/admin/accounts/${account.accountId}/keys`, { method: "POST", headers: admin })
  ).json()) as { apiKey: string };
  return {
    base,
    auth: { authorization: `Bearer ${key.apiKey}` },
    routes,
    backendJobs,
    pids: [worker.pid!, media.pid!],
    stop: async () => {
      worker.kill("SIGTERM");
      media.kill("SIGTERM");
      backend.kill("SIGTERM");
      await sleep(500);
    },
  };
}

export async function uploadFile(stack: Stack, file: string): Promise<string> {
  const form = new FormData();
  form.append("file", new Blob([await readFile(file)]), path.basename(file));
  const response = await fetch(`${stack.base}/api/v1/uploads`, { method: "POST", headers: stack.auth, body: form });
  const body = (await response.json()) as { uploadId?: string };
  if (!response.ok || !body.uploadId) throw new Error(`upload of ${file}: ${response.status} ${JSON.stringify(body)}`);
  return body.uploadId;
}

interface ApiRun {
  seconds: number;
  jobId: string;
  status: string;
  error?: string;
  outputBytes: number;
}

/**
 * Tool call -> the job's end -> download: what a client waiting on the job sees. By default it
 * waits with GET /api/v1/jobs/{id}?wait=50, which the API answers the moment the job ends;
 * with `pollMs`, it reads the job every `pollMs` instead, as a polling client does
 * (BENCH_API_POLL_MS for the API table).
 */
export async function callTool(stack: Stack, tool: string, body: unknown, pollMs?: number): Promise<ApiRun> {
  const started = performance.now();
  const response = await fetch(`${stack.base}/api/v1/${tool}`, {
    method: "POST",
    headers: { ...stack.auth, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const envelope = (await response.json()) as { jobId?: string };
  if (!response.ok || !envelope.jobId) throw new Error(`${tool}: ${response.status} ${JSON.stringify(envelope)}`);
  const read = `${stack.base}/api/v1/jobs/${envelope.jobId}${pollMs === undefined ? "?wait=50" : ""}`;
  for (;;) {
    const job = (await (await fetch(read, { headers: stack.auth })).json()) as {
      status: string;
      error?: string;
      result?: { url: string };
    };
    if (job.status === "failed")
      return {
        seconds: (performance.now() - started) / 1000,
        jobId: envelope.jobId,
        status: job.status,
        error: job.error,
        outputBytes: 0,
      };
    if (job.status === "completed" && job.result) {
      const download = await fetch(new URL(job.result.url, stack.base), { headers: stack.auth });
      const bytes = (await download.arrayBuffer()).byteLength;
      return {
        seconds: (performance.now() - started) / 1000,
        jobId: envelope.jobId,
        status: job.status,
        outputBytes: bytes,
      };
    }
    if (pollMs !== undefined) await sleep(pollMs);
  }
}

export async function makeInputs(dir: string, size: "720p" | "1080p") {
  const sources = await generateSources(dir);
  let clip = sources.clip;
  let speech = sources.speech;
  if (size === "1080p") {
    clip = path.join(dir, "clip1080.mp4");
    const made = await run(FFMPEG, [
      "-hide_banner",
      "-nostdin",
      "-y",
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=1920x1080:rate=30:duration=60",
      "-f",
      "lavfi",
      "-i",
      "sine=frequency=440:sample_rate=48000:duration=60",
      "-map",
      "0:v",
      "-map",
      "1:a",
      "-c:v",
      "libx264",
      "-preset",
      "veryfast",
      "-b:v",
      "8M",
      "-g",
      "60",
      "-pix_fmt",
      "yuv420p",
      "-c:a",
      "aac",
      "-b:a",
      "128k",
      "-ac",
      "2",
      "-movflags",
      "+faststart",
      "-shortest",
      clip,
    ]);
    if (made.code !== 0) throw new Error(made.stderr.slice(-1000));
    speech = clip;
  }
  const input = async (name: string, file: string): Promise<MediaInput> => ({
    name,
    filename: path.basename(file),
    sizeBytes: (await stat(file)).size,
    probe: await probeResult(file),
  });
  const inputs: BenchInputs = {
    clip: await input("in0.mp4", clip),
    clip2: await input("in1.mp4", clip),
    logo: await input("in1.png", sources.logo),
    speech: await input(speech.endsWith(".wav") ? "in0.wav" : "in0.mp4", speech),
  };
  return { inputs, files: { clip, clip2: clip, logo: sources.logo, speech } };
}

/**
 * The same command on native ffmpeg, inputs linked under their MediaInput names; a command with a
 * backend variant (two-pass loudness) runs that variant's passes, the work the tool does.
 */
export async function nativeSeconds(
  dir: string,
  build: () => Promise<import("../src/media/commands/command").MediaCommand>,
  sources: Map<string, string>,
): Promise<number> {
  const command = await build();
  const work = await mkdtemp(path.join(dir, "native-"));
  for (const [name, file] of sources) await writeFile(path.join(work, name), await readFile(file));
  for (const [name, bytes] of Object.entries(command.files)) await writeFile(path.join(work, name), bytes);
  if (command.fonts.length > 0) {
    await run("mkdir", ["-p", path.join(work, "fonts")]);
    for (const font of command.fonts)
      await writeFile(path.join(work, "fonts", font), await readFile(path.join(root, "assets/fonts", font)));
  }
  const started = performance.now();
  // A loudness-normalised command does its measuring pass first, as both engines do (clean-audio).
  const args = command.backend
    ? (
        await loudnessFinalArgs(
          command.backend.args,
          command.backend.loudnorm,
          command.backend.measurePass?.args,
          (pass) => nativePass(pass, work),
        )
      ).args
    : command.args;
  const result = await runNative(args, work);
  await rm(work, { recursive: true, force: true });
  if (result.code !== 0) throw new Error(`native ${args.join(" ")}: ${result.stderrTail}`);
  return (performance.now() - started) / 1000;
}

async function nativePass(args: string[], cwd: string): Promise<{ stderr: string }> {
  const pass = await run(FFMPEG, ["-nostdin", ...args], cwd);
  if (pass.code !== 0) throw new Error(`native ${args.join(" ")}: ${pass.stderr.slice(-500)}`);
  return pass;
}

export async function runApiBench(): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "bench-api-"));
  const stack = await startStack(path.join(dir, "state"));
  const sizes = (process.env.BENCH_API_SIZES ?? "720p,1080p").split(",") as ("720p" | "1080p")[];
  // A subset of the cases by id (`BENCH_API_CASES=extract-audio-mp3,convert-mkv`), to compare two versions quickly.
  const cases = process.env.BENCH_API_CASES?.split(",").map((id) => id.trim());
  const rows: string[][] = [];
  const ratios: number[] = [];
  try {
    console.log(
      `\nAPI end to end on wrangler dev (API + media Workers) with the native backend, ${os.cpus().length} cores`,
    );
    for (const size of sizes) {
      const sizeDir = path.join(dir, size);
      await run("mkdir", ["-p", sizeDir]);
      const { inputs, files } = await makeInputs(sizeDir, size);
      const uploads: Uploads = {
        clip: await uploadFile(stack, files.clip),
        clip2: "",
        logo: await uploadFile(stack, files.logo),
        speech: "",
      };
      uploads.clip2 = uploads.clip;
      uploads.speech = files.speech === files.clip ? uploads.clip : await uploadFile(stack, files.speech);
      const byName = new Map<MediaInput, string>([
        [inputs.clip, files.clip],
        [inputs.clip2, files.clip2],
        [inputs.logo, files.logo],
        [inputs.speech, files.speech],
      ]);
      for (const bench of benchCases(inputs)) {
        const call = apiCalls[bench.id];
        if (!call || (cases && !cases.includes(bench.id))) continue;
        const { tool, body } = call(uploads);
        const native = await nativeSeconds(
          sizeDir,
          bench.build,
          new Map(bench.inputs.map((i) => [i.name, byName.get(i)!])),
        );
        const api = await callTool(
          stack,
          tool,
          body,
          process.env.BENCH_API_POLL_MS ? Number(process.env.BENCH_API_POLL_MS) : undefined,
        );
        const route = stack.routes.get(api.jobId) ?? "?";
        const ratio = api.seconds / native;
        if (api.status === "completed") ratios.push(ratio);
        const phases = stack.backendJobs.get(api.jobId);
        const where = phases ? phasesOf(phases) : "-";
        rows.push([
          size,
          bench.label,
          route,
          api.status === "completed" ? api.seconds.toFixed(2) : `FAILED: ${api.error ?? "?"}`,
          native.toFixed(2),
          ratio.toFixed(2),
          (api.seconds - native).toFixed(2),
          where,
        ]);
        console.log(`  ${rows.at(-1)!.join(" | ")}`);
      }
    }
    const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length), 10));
    const header = ["input", "tool", "route", "API s", "native s", "API/native", "overhead s", "backend's log"];
    console.log(
      `\n| ${header.map((h, i) => h.padEnd(widths[i]!)).join(" | ")} |\n| ${widths.map((w) => "-".repeat(w)).join(" | ")} |`,
    );
    for (const r of rows) console.log(`| ${r.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`);
    const geo = Math.exp(ratios.reduce((s, r) => s + Math.log(r), 0) / ratios.length);
    console.log(
      `geometric mean API/native over ${ratios.length} runs: ${geo.toFixed(2)} (goal <= 1.3); worst ${Math.max(...ratios).toFixed(2)} (goal <= 2)`,
    );
  } finally {
    await stack.stop();
  }
  try {
    await latencyUnderLoad(dir);
  } finally {
    if (process.env.BENCH_KEEP === "1") console.log(`kept ${dir}`);
    else await rm(dir, { recursive: true, force: true });
  }
}

/** `BENCH_ONLY=latency`: only the tool-call latency part of the API bench. */
export async function runLatencyBench(): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "bench-latency-"));
  try {
    await latencyUnderLoad(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Tool calls at 20/s for 10 s while four re-encodes run on ffmpeg.wasm, against the same calls idle. */
async function latencyUnderLoad(dir: string): Promise<void> {
  const stack = await startStack(path.join(dir, "state-wasm"), { MEDIA_ENGINE: "wasm" });
  try {
    await measureLatency(stack, dir);
  } finally {
    await stack.stop();
  }
}

async function measureLatency(stack: Stack, dir: string): Promise<void> {
  const sources = await generateSources(await mkdtemp(path.join(dir, "load-")));
  const clip = await uploadFile(stack, sources.clip);
  const audio = await uploadFile(stack, sources.speech);
  // 20 requests/s for 10 s; each answer timed from the send to its last byte.
  const burst = async (request: () => Promise<Response>): Promise<number[]> => {
    const times: number[] = [];
    const calls: Promise<void>[] = [];
    for (let i = 0; i < 200; i++) {
      calls.push(
        (async () => {
          const start = performance.now();
          const response = await request();
          await response.arrayBuffer();
          if (response.status !== 200) throw new Error(`latency burst: HTTP ${response.status}`);
          times.push(performance.now() - start);
        })(),
      );
      await sleep(50);
    }
    await Promise.all(calls);
    return times;
  };
  const toolCall = () =>
    fetch(`${stack.base}/api/v1/extract-audio`, {
      method: "POST",
      headers: { ...stack.auth, "content-type": "application/json" },
      body: JSON.stringify({ uploadId: audio, format: "mp3" }),
    });
  // The floor: the key checked and one read, no debit and no job; what any call pays on this stack.
  const accountRead = () => fetch(`${stack.base}/api/v1/account`, { headers: stack.auth });
  const idleFloor = await burst(accountRead);
  const idle = await burst(toolCall);
  // Four 720p subtitle burn-ins on ffmpeg.wasm (MEDIA_ENGINE=wasm; each ~10-20 s of isolate CPU).
  const heavyStarted = performance.now();
  // Settled as they end: one failing while the bursts run is reported below, not an unhandled rejection.
  const heavy = [0, 1, 2, 3].map(() =>
    callTool(stack, "subtitles", { uploadId: clip, srtContent: SRT }).then(
      (run) => run,
      (error: unknown) => error,
    ),
  );
  await sleep(1000);
  const loaded = await burst(toolCall);
  const loadedFloor = await burst(accountRead);
  const burstsEnded = performance.now();
  const heavyEnds = await Promise.all(heavy);
  const heavyRuns = heavyEnds.filter((end): end is ApiRun => !(end instanceof Error));
  for (const error of heavyEnds.filter((end) => end instanceof Error))
    console.log(`a subtitle job's call failed: ${error.message} (${String(error.cause ?? "")})`);
  // The second burst only counts as loaded if the four jobs were still running when it ended.
  const stillRunning = heavyRuns.filter((run) => run.seconds * 1000 > burstsEnded - heavyStarted).length;
  const routes = heavyRuns.map((r) => stack.routes.get(r.jobId) ?? "?").join(",");
  const figures = (times: number[]) =>
    `p50 ${percentile(times, 50).toFixed(1)} ms p99 ${percentile(times, 99).toFixed(1)} ms`;
  console.log(
    `\ntool calls (POST /api/v1/extract-audio, 20/s for 10 s): idle ${figures(idle)};` +
      ` with 4 subtitle jobs running (routes ${routes}) ${figures(loaded)} (goal p99 <= 50 ms)`,
  );
  console.log(
    `floor (GET /api/v1/account, 20/s for 10 s, no job): before the tool calls ${figures(idleFloor)}; after them, with ${stillRunning} of the 4 subtitle jobs still running at its end ${figures(loadedFloor)}`,
  );
}

/** Peak RSS (MiB) of the stack's workerd processes (descendants of its wrangler processes) while `work` runs. */
async function peakRss<T>(roots: number[], work: Promise<T>): Promise<{ value: T; peakMiB: number; idleMiB: number }> {
  const sample = () => {
    const rows = spawnSync("ps", ["-eo", "pid=,ppid=,rss=,comm="], { encoding: "utf8" })
      .stdout.trim()
      .split("\n")
      .map((line) => line.trim().split(/\s+/));
    const inTree = new Set(roots);
    for (let grew = true; grew; ) {
      grew = false;
      for (const [pid, ppid] of rows)
        if (!inTree.has(Number(pid)) && inTree.has(Number(ppid))) inTree.add(Number(pid)), (grew = true);
    }
    return rows
      .filter(([pid, , , comm]) => inTree.has(Number(pid)) && comm === "workerd")
      .reduce((sum, [, , kb]) => sum + Number(kb) / 1024, 0);
  };
  const idleMiB = sample();
  let peakMiB = idleMiB;
  const timer = setInterval(() => (peakMiB = Math.max(peakMiB, sample())), 200);
  try {
    return { value: await work, peakMiB, idleMiB };
  } finally {
    clearInterval(timer);
  }
}

/**
 * Transfers of a 1 GB file: the upload through the API (multipart, streamed to R2), then a stream
 * copy the router sends to the backend (too big for the isolate): the backend's log gives the
 * download from and the upload to storage through the Worker's signed URLs (with
 * BENCH_MEDIA_URLS=presigned, presigned S3 URLs on the emulation's S3 API).
 * `BENCH_ONLY=transfer npm run bench`.
 */
export async function runTransferBench(): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "bench-transfer-"));
  const stack = await startStack(path.join(dir, "state"));
  try {
    const clip = path.join(dir, "clip.mp4");
    const big = path.join(dir, "big.mp4");
    let made = await run(FFMPEG, [
      "-hide_banner",
      "-nostdin",
      "-y",
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=1920x1080:rate=30:duration=20",
      "-f",
      "lavfi",
      "-i",
      "sine=duration=20",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-b:v",
      "40M",
      "-c:a",
      "aac",
      "-shortest",
      clip,
    ]);
    if (made.code !== 0) throw new Error(made.stderr.slice(-500));
    const { size: clipBytes } = await stat(clip);
    const loops = Math.max(0, Math.ceil(1e9 / clipBytes) - 1);
    made = await run(FFMPEG, [
      "-hide_banner",
      "-nostdin",
      "-y",
      "-stream_loop",
      String(loops),
      "-i",
      clip,
      "-c",
      "copy",
      "-movflags",
      "+faststart",
      big,
    ]);
    if (made.code !== 0) throw new Error(made.stderr.slice(-500));
    const { size } = await stat(big);
    const started = performance.now();
    const uploaded = await peakRss(stack.pids, uploadStreamed(stack, big, size));
    const uploadSeconds = (performance.now() - started) / 1000;
    const copied = await peakRss(stack.pids, callTool(stack, "convert", { uploadId: uploaded.value, format: "mkv" }));
    const log = stack.backendJobs.get(copied.value.jobId);
    // The input is read while it downloads (progressiveInputs) or, before that, downloaded first.
    const phases = log && {
      ...log,
      downloadMs: log.progressiveDownloadMs ?? log.downloadMs,
      inputBytes: log.progressiveInputBytes ?? log.inputBytes,
    };
    const rate = (bytes: number | undefined, ms: number | undefined) =>
      bytes && ms ? `${(bytes / 1e6 / (ms / 1000)).toFixed(0)} MB/s` : "?";
    console.log(
      `\ntransfers of a ${(size / 1e6).toFixed(0)} MB file on wrangler dev (loopback; route ${stack.routes.get(copied.value.jobId) ?? "?"})`,
    );
    console.log(`| step | seconds | rate | workerd RSS idle -> peak MiB |`);
    console.log(`| --- | --- | --- | --- |`);
    console.log(
      `| upload through the API (multipart, streamed to R2) | ${uploadSeconds.toFixed(1)} | ${(size / 1e6 / uploadSeconds).toFixed(0)} MB/s | ${uploaded.idleMiB.toFixed(0)} -> ${uploaded.peakMiB.toFixed(0)} |`,
    );
    const urls = process.env.BENCH_MEDIA_URLS === "presigned" ? "presigned S3 URL" : "Worker-served signed URL";
    console.log(
      `| backend download of the input (${urls}, ranged parts, read by ffmpeg as it lands) | ${((phases?.downloadMs ?? NaN) / 1000).toFixed(1)} | ${rate(phases?.inputBytes, phases?.downloadMs)} | ${copied.idleMiB.toFixed(0)} -> ${copied.peakMiB.toFixed(0)} (whole job) |`,
    );
    console.log(
      `| backend upload of the result (${urls}, one streamed put) | ${((phases?.uploadMs ?? NaN) / 1000).toFixed(1)} | ${rate(phases?.outputBytes, phases?.uploadMs)} | |`,
    );
    console.log(`| whole job (call to downloaded result) | ${copied.value.seconds.toFixed(1)} | | |`);
    await stack.stop();
    // What the emulated R2 allows on its own, same file, same run: the product's rates against it.
    const ceilings = await measureR2Ceilings(big, size);
    console.log(`\nthe local R2 emulation alone (bench/r2-baseline: a Worker of a few lines, same file)`);
    console.log(`| step | seconds | rate |`);
    console.log(`| --- | --- | --- |`);
    for (const c of ceilings) console.log(`| ${c.step} | ${c.seconds.toFixed(1)} | ${c.mbPerSecond.toFixed(0)} MB/s |`);
    const [write, , , multipartRead] = ceilings;
    console.log(
      `product / ceiling: upload ${(size / 1e6 / uploadSeconds / write!.mbPerSecond).toFixed(2)} (against one put), backend download ${phases?.downloadMs ? (phases.inputBytes! / 1e3 / phases.downloadMs / multipartRead!.mbPerSecond).toFixed(2) : "?"} (an upload is a multipart object), backend upload ${phases?.uploadMs ? (phases.outputBytes! / 1e3 / phases.uploadMs / write!.mbPerSecond).toFixed(2) : "?"} (one put)`,
    );
  } finally {
    await stack.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** A multipart upload streamed from disk (no whole-file buffer in this process either). */
async function uploadStreamed(stack: Stack, file: string, size: number): Promise<string> {
  const boundary = `----bench${Date.now()}`;
  const head = Buffer.from(
    `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="${path.basename(file)}"\r\ncontent-type: video/mp4\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const { createReadStream } = await import("node:fs");
  const { Readable } = await import("node:stream");
  async function* parts() {
    yield head;
    for await (const chunk of createReadStream(file, { highWaterMark: 1024 * 1024 })) yield chunk as Buffer;
    yield tail;
  }
  const response = await fetch(`${stack.base}/api/v1/uploads`, {
    method: "POST",
    headers: {
      ...stack.auth,
      "content-type": `multipart/form-data; boundary=${boundary}`,
      "content-length": String(head.length + size + tail.length),
    },
    body: Readable.toWeb(Readable.from(parts())) as unknown as ReadableStream,
    duplex: "half",
  } as RequestInit);
  const body = (await response.json()) as { uploadId?: string };
  if (!response.ok || !body.uploadId) throw new Error(`upload: ${response.status} ${JSON.stringify(body)}`);
  return body.uploadId;
}
