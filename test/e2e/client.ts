/** A curl-like client of a running stack, plus native ffprobe/ffmpeg checks of results. */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "vitest";
import { eventually } from "../helpers/eventually";

export const FIXTURES = path.resolve(import.meta.dirname, "../.fixtures");
const ADMIN = { authorization: "Bearer e2e-admin-token", "content-type": "application/json" };
const scratch = mkdtempSync(path.join(tmpdir(), "e2e-media-"));

export interface Client {
  base: string;
  auth: { authorization: string };
  accountId: string;
}

export async function newClient(base: string, credits = 10_000): Promise<Client> {
  const email = `e2e-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`;
  const account = (await (
    await fetch(`${base}/api/admin/accounts`, {
      method: "POST",
      headers: ADMIN,
      body: JSON.stringify({ email, credits }),
    })
  ).json()) as { accountId: string };
  const key = (await (
    await fetch(`${base}/api/admin/accounts/${account.accountId}/keys`, { method: "POST", headers: ADMIN })
  ).json()) as { apiKey: string };
  return { base, auth: { authorization: `Bearer ${key.apiKey}` }, accountId: account.accountId };
}

/** A test-mode key (mk_test_) of the same account: free calls, its own uploads, marked results. */
export async function testKeyOf(client: Client): Promise<Client> {
  const response = await fetch(`${client.base}/api/admin/accounts/${client.accountId}/keys?mode=test`, {
    method: "POST",
    headers: ADMIN,
  });
  const key = (await response.json()) as { apiKey: string };
  expect(response.status, JSON.stringify(key)).toBe(200);
  return { ...client, auth: { authorization: `Bearer ${key.apiKey}` } };
}

export async function upload(client: Client, file: string): Promise<{ uploadId: string; durationSeconds: number }> {
  const form = new FormData();
  form.append("file", new Blob([readFileSync(file)]), path.basename(file));
  const response = await fetch(`${client.base}/api/v1/uploads`, { method: "POST", headers: client.auth, body: form });
  const body = await response.json();
  expect(response.status, JSON.stringify(body)).toBe(200);
  return body as { uploadId: string; durationSeconds: number };
}

export async function balance(client: Client): Promise<number> {
  return (
    (await (await fetch(`${client.base}/api/v1/account`, { headers: client.auth })).json()) as { balance: number }
  ).balance;
}

export interface FinishedJob {
  status: string;
  error?: string;
  result?: { url: string; filename: string };
  creditsUsed: number;
}

/** Calls a tool, waits for the job's end (GET /api/v1/jobs/{id}?wait, answered when it ends) and returns it. */
export async function runTool(client: Client, tool: string, body: unknown, timeoutMs = 100_000): Promise<FinishedJob> {
  const response = await fetch(`${client.base}/api/v1/${tool}`, {
    method: "POST",
    headers: { ...client.auth, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const envelope = (await response.json()) as { jobId: string; creditsUsed: number };
  expect(response.status, JSON.stringify(envelope)).toBe(200);
  const deadline = Date.now() + timeoutMs;
  // No pause between reads: each one waits on the server until the job ends (at most 50 s).
  const job = await eventually(
    async () => {
      const wait = Math.max(0, Math.min(50, Math.ceil((deadline - Date.now()) / 1000)));
      return (await (
        await fetch(`${client.base}/api/v1/jobs/${envelope.jobId}?wait=${wait}`, { headers: client.auth })
      ).json()) as FinishedJob;
    },
    (read) => read.status === "completed" || read.status === "failed",
    { timeoutMs, intervalMs: 0, what: `job ${envelope.jobId} to end` },
  );
  return { ...job, creditsUsed: envelope.creditsUsed };
}

/** Downloads a completed job's result to a scratch file. */
export async function download(client: Client, job: FinishedJob): Promise<string> {
  expect(job.status, job.error).toBe("completed");
  const response = await fetch(`${client.base}${job.result!.url}`);
  expect(response.status).toBe(200);
  const file = path.join(scratch, `${Date.now()}-${job.result!.filename}`);
  writeFileSync(file, new Uint8Array(await response.arrayBuffer()));
  return file;
}

export interface Probe {
  format: { format_name: string; duration: string; tags?: Record<string, string> };
  streams: {
    codec_type: string;
    codec_name: string;
    width?: number;
    height?: number;
    r_frame_rate?: string;
    sample_rate?: string;
    start_time?: string;
    duration?: string;
  }[];
}

export function ffprobe(file: string): Probe {
  return JSON.parse(
    execFileSync("ffprobe", ["-v", "error", "-show_format", "-show_streams", "-of", "json", file], {
      encoding: "utf8",
    }),
  );
}

export const stream = (probe: Probe, type: "video" | "audio") => probe.streams.find((s) => s.codec_type === type);

/** One decoded RGB frame at `seconds`. */
export function frameAt(file: string, seconds: number, width: number, height: number): Buffer {
  const raw = execFileSync(
    "ffmpeg",
    [
      "-v",
      "error",
      "-ss",
      String(seconds),
      "-i",
      file,
      "-frames:v",
      "1",
      "-f",
      "rawvideo",
      "-pix_fmt",
      "rgb24",
      "-s",
      `${width}x${height}`,
      "-",
    ],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  expect(raw.length).toBe(width * height * 3);
  return raw;
}

export function pixel(frame: Buffer, width: number, x: number, y: number): [number, number, number] {
  const i = (y * width + x) * 3;
  return [frame[i], frame[i + 1], frame[i + 2]];
}

/**
 * Bright pixels of a 320x240 black video's frame at 1 s, in the top right (where a test key's
 * TEST mark is drawn) and elsewhere.
 */
export function markPixels(file: string): { corner: number; elsewhere: number } {
  const frame = frameAt(file, 1, 320, 240);
  let corner = 0;
  let elsewhere = 0;
  for (let y = 0; y < 240; y++) {
    for (let x = 0; x < 320; x++) {
      if (pixel(frame, 320, x, y)[0] <= 180) continue;
      if (x >= 160 && y < 60) corner++;
      else elsewhere++;
    }
  }
  return { corner, elsewhere };
}

/** Overall RMS level in dB of the audio of `file` after `filter` (ffmpeg astats). */
export function rmsDb(file: string, filter = "anull"): number {
  const run = spawnSync(
    "ffmpeg",
    [
      "-v",
      "info",
      "-i",
      file,
      "-af",
      `${filter},astats=measure_overall=RMS_level:measure_perchannel=none`,
      "-f",
      "null",
      "-",
    ],
    { encoding: "utf8" },
  );
  const match = /RMS level dB: (-?[\d.]+|-inf)/.exec(run.stderr);
  if (!match) throw new Error(`no RMS level in ffmpeg output: ${run.stderr.slice(-500)}`);
  return match[1] === "-inf" ? -Infinity : Number(match[1]);
}

/** Native ffmpeg's EBU R128 figures of a file's first audio stream: LUFS, dBTP and LU. */
export function ebur128(file: string): { integrated: number; truePeak: number; lra: number } {
  const run = spawnSync(
    "ffmpeg",
    ["-hide_banner", "-nostats", "-i", file, "-map", "0:a:0", "-af", "ebur128=peak=true", "-f", "null", "-"],
    { encoding: "utf8" },
  );
  const summary = run.stderr.slice(run.stderr.lastIndexOf("Summary:"));
  return {
    integrated: Number(/I:\s+(-?[\d.]+) LUFS/.exec(summary)?.[1]),
    lra: Number(/LRA:\s+(-?[\d.]+) LU/.exec(summary)?.[1]),
    truePeak: Number(/Peak:\s+(-?[\d.]+) dBFS/.exec(summary)?.[1]),
  };
}

/** Generates a media file with native ffmpeg into the scratch folder. */
export function generate(name: string, args: string[]): string {
  const file = path.join(scratch, name);
  execFileSync("ffmpeg", ["-v", "error", "-y", ...args, file]);
  return file;
}

/**
 * Until the browser sees `mailed` (a locator) in the dev outbox at `outboxUrl`, read again after
 * each load: the mail leaves after the answer that sends it.
 */
export async function untilMailed(
  page: { goto(url: string): Promise<unknown> },
  outboxUrl: string,
  mailed: { count(): Promise<number> },
): Promise<void> {
  await eventually(
    async () => {
      await page.goto(outboxUrl);
      return mailed.count();
    },
    (count) => count > 0,
    { timeoutMs: 15_000, intervalMs: 0, what: `the mail in the outbox (${String(mailed)})` },
  );
}
