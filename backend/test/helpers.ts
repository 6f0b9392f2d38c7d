/**
 * Test harness: the backend as a real process (`node src/server.ts` on a random loopback port,
 * its own TMPDIR and FONTS_DIR), and a loopback server playing the Worker's side: media
 * downloads, the signed PUT target and the callback endpoint.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { createHmac } from "node:crypto";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
export const BACKEND_DIR = path.resolve(import.meta.dirname, "..");
export const SECRET = "test-backend-secret-0123456789abcdef";

export async function ffmpeg(args: string[]): Promise<void> {
  await run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-nostdin", "-y", ...args]);
}

export interface Probe {
  streams: { codec_type: string; codec_name: string; width?: number; height?: number }[];
  format: { duration: string; format_name: string; tags?: { comment?: string } };
}

export async function ffprobe(file: string): Promise<Probe> {
  const { stdout } = await run("ffprobe", [
    "-v",
    "error",
    "-show_entries",
    "stream=codec_type,codec_name,width,height:format=duration,format_name:format_tags=comment",
    "-of",
    "json",
    file,
  ]);
  return JSON.parse(stdout) as Probe;
}

/** A 1 s 160x120 H.264 + AAC mp4 (a few KB), made once per call with native ffmpeg. */
export async function makeClip(dir: string, seconds = 1): Promise<string> {
  const file = path.join(dir, `clip-${seconds}s.mp4`);
  await ffmpeg([
    "-f",
    "lavfi",
    "-i",
    `testsrc2=size=160x120:rate=15:duration=${seconds}`,
    "-f",
    "lavfi",
    "-i",
    `sine=frequency=440:duration=${seconds}`,
    "-c:v",
    "libx264",
    "-preset",
    "ultrafast",
    "-pix_fmt",
    "yuv420p",
    "-c:a",
    "aac",
    "-b:a",
    "48k",
    "-shortest",
    file,
  ]);
  return file;
}

export function hmac(timestamp: string, body: string, secret = SECRET): string {
  return `sha256=${createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")}`;
}

// ---------------------------------------------------------------------------------------------
// The Worker's side

export interface Recorded {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  at: number;
}

export class Fixture {
  server: http.Server;
  baseUrl = "";
  /** GET /media/<key> serves these; anything else is a 404. */
  media = new Map<string, Buffer>();
  /** Keys whose GET honours `Range: bytes=a-[b]` (206), as R2 and the Worker's media URLs do; others answer 200 whole. */
  ranged = new Set<string>();
  /**
   * When set, a 206 carries at most this many bytes (a server may answer a part of the range
   * asked; ffmpeg then asks again from where it stopped). Keeps what the kernel's socket buffers
   * take ahead of the reader out of `mediaBytesSent`.
   */
  rangeCapBytes?: number;
  /**
   * Ranges of a key that start at or after `from` answer `status` at once, or, without one, wait
   * for `released` before being served (a download held back part way).
   */
  heldFrom = new Map<string, { from: number; status?: number; released?: Promise<void> }>();
  /** Body bytes written per media key (a response the client closes early counts what was written until then). */
  mediaBytesSent = new Map<string, number>();
  /** PUT /upload/<key>: status per key and attempt (default 200). */
  uploadStatus: (key: string, attempt: number) => number = () => 200;
  /** POST /callback/<key>: status per key and attempt (default 200). */
  callbackStatus: (key: string, attempt: number) => number = () => 200;
  requests: Recorded[] = [];

  constructor() {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        const url = new URL(req.url ?? "/", "http://fixture");
        const record: Recorded = {
          method: req.method ?? "",
          path: url.pathname,
          headers: req.headers,
          body: Buffer.concat(chunks),
          at: Date.now(),
        };
        this.requests.push(record);
        const [, area, key = ""] = url.pathname.split("/");
        const attempt = this.requests.filter((r) => r.path === record.path && r.method === record.method).length;
        if (req.method === "GET" && area === "media" && this.media.has(key)) {
          this.#serveMedia(key, req.headers.range, res);
        } else if (req.method === "PUT" && area === "upload") {
          res.writeHead(this.uploadStatus(key, attempt)).end();
        } else if (req.method === "POST" && area === "callback") {
          res.writeHead(this.callbackStatus(key, attempt), { "content-type": "application/json" }).end("{}");
        } else {
          res.writeHead(404).end("not found");
        }
      });
    });
  }

  /** Writes in 64 KiB chunks, waiting for the socket to drain, so that a client that stops reading stops the count. */
  #serveMedia(key: string, range: string | undefined, res: http.ServerResponse): void {
    const whole = this.media.get(key)!;
    const match = this.ranged.has(key) ? /^bytes=(\d+)-(\d*)$/.exec(range ?? "") : null;
    const held = this.heldFrom.get(key);
    if (held && match && Number(match[1]) >= held.from) {
      if (held.status) return void res.writeHead(held.status).end();
      if (held.released) {
        return void held.released.then(() => {
          this.heldFrom.delete(key);
          this.#serveMedia(key, range, res);
        });
      }
    }
    let body = whole;
    if (match) {
      const start = Number(match[1]);
      const asked = match[2] ? Math.min(Number(match[2]), whole.length - 1) : whole.length - 1;
      const end = this.rangeCapBytes ? Math.min(asked, start + this.rangeCapBytes - 1) : asked;
      if (start >= whole.length) {
        res.writeHead(416, { "content-range": `bytes */${whole.length}` }).end();
        return;
      }
      body = whole.subarray(start, end + 1);
      res.writeHead(206, {
        "content-type": "video/mp4",
        "content-length": body.length,
        "accept-ranges": "bytes",
        "content-range": `bytes ${start}-${end}/${whole.length}`,
      });
    } else {
      res.writeHead(200, {
        "content-type": "video/mp4",
        "content-length": body.length,
        ...(this.ranged.has(key) ? { "accept-ranges": "bytes" } : {}),
      });
    }
    let offset = 0;
    const pump = () => {
      while (offset < body.length && !res.destroyed) {
        const chunk = body.subarray(offset, offset + 65_536);
        offset += chunk.length;
        this.mediaBytesSent.set(key, (this.mediaBytesSent.get(key) ?? 0) + chunk.length);
        if (!res.write(chunk)) {
          res.once("drain", pump);
          return;
        }
      }
      if (!res.destroyed) res.end();
    };
    pump();
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.baseUrl = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  of(method: string, prefix: string): Recorded[] {
    return this.requests.filter((r) => r.method === method && r.path.startsWith(prefix));
  }

  callbacks(key: string): Recorded[] {
    return this.of("POST", `/callback/${key}`);
  }

  async waitForCallback(key: string, count = 1, timeoutMs = 20_000): Promise<Recorded[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.callbacks(key).length < count) {
      if (Date.now() > deadline) throw new Error(`no callback #${count} for ${key} within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
    return this.callbacks(key);
  }
}

/** A job body pointing at the fixture: input `in0.mp4` <- /media/<key>, PUT /upload/<key>, POST /callback/<key>. */
export function jobBody(
  fixture: Fixture,
  key: string,
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    jobId: `job_${key}`,
    kind: "ffmpeg",
    args: ["-hide_banner", "-y", "-i", "in0.mp4", "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", "out.mp4"],
    inputs: [{ name: "in0.mp4", url: `${fixture.baseUrl}/media/${key}?token=secret-token` }],
    files: {},
    fonts: [],
    output: {
      name: "out.mp4",
      url: `${fixture.baseUrl}/upload/${key}?X-Amz-Signature=deadbeef`,
      contentType: "video/mp4",
    },
    callbackUrl: `${fixture.baseUrl}/callback/${key}`,
    deadlineMs: 60_000,
    ...overrides,
  };
}

// ---------------------------------------------------------------------------------------------
// The backend process

export class Backend {
  proc: ChildProcess;
  url = "";
  tmpDir: string;
  fontsDir: string;
  stdout = "";
  stderr = "";
  exited: Promise<number | null>;

  constructor(env: Record<string, string>) {
    this.tmpDir = mkdtempSync(path.join(os.tmpdir(), "backend-test-tmp-"));
    this.fontsDir = mkdtempSync(path.join(os.tmpdir(), "backend-test-fonts-"));
    copyFileSync("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", path.join(this.fontsDir, "TestSans-Regular.ttf"));
    this.proc = spawn(process.execPath, ["src/server.ts"], {
      cwd: BACKEND_DIR,
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        HOME: process.env.HOME ?? "/tmp",
        BACKEND_SECRET: SECRET,
        PORT: "0",
        HOST: "127.0.0.1",
        TMPDIR: this.tmpDir,
        FONTS_DIR: this.fontsDir,
        ...env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.proc.stdout!.setEncoding("utf8").on("data", (s: string) => (this.stdout += s));
    this.proc.stderr!.setEncoding("utf8").on("data", (s: string) => (this.stderr += s));
    this.exited = new Promise((resolve) => this.proc.once("exit", (code) => resolve(code)));
  }

  static async start(env: Record<string, string> = {}): Promise<Backend> {
    const backend = new Backend(env);
    const deadline = Date.now() + 15_000;
    while (!backend.url) {
      const match = /"event":"listening","url":"([^"]+)"/.exec(backend.stdout);
      if (match) backend.url = match[1]!;
      else if (backend.proc.exitCode !== null) throw new Error(`backend exited: ${backend.stderr}`);
      else if (Date.now() > deadline) throw new Error(`backend did not start: ${backend.stderr}`);
      else await new Promise((r) => setTimeout(r, 20));
    }
    return backend;
  }

  fetch(pathname: string, init: RequestInit & { auth?: string | null } = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    const auth = init.auth === undefined ? `Bearer ${SECRET}` : init.auth;
    if (auth !== null) headers.set("authorization", auth);
    return fetch(`${this.url}${pathname}`, { ...init, headers });
  }

  postJob(body: unknown, auth?: string | null): Promise<Response> {
    return this.fetch("/v1/jobs", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: typeof body === "string" ? body : JSON.stringify(body),
      auth,
    });
  }

  /** Lines of the job log. */
  jobLogs(): Record<string, unknown>[] {
    return this.stdout
      .split("\n")
      .filter((line) => line.includes('"event":"job"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  }

  /** Entries left in the backend's TMPDIR (work directories must be gone after each job). */
  leftovers(): string[] {
    return readdirSync(this.tmpDir);
  }

  async stop(): Promise<void> {
    if (this.proc.exitCode === null) {
      this.proc.kill("SIGTERM");
      const timer = setTimeout(() => this.proc.kill("SIGKILL"), 15_000);
      await this.exited;
      clearTimeout(timer);
    }
    rmSync(this.tmpDir, { recursive: true, force: true });
    rmSync(this.fontsDir, { recursive: true, force: true });
  }
}

export function scratchDir(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "backend-test-media-"));
  mkdirSync(dir, { recursive: true });
  return dir;
}

export function writeScratch(dir: string, name: string, data: Buffer): string {
  const file = path.join(dir, name);
  writeFileSync(file, data);
  return file;
}

/** Waits for a condition the test can observe (a log line, a request, a cleaned directory) instead of sleeping. */
export async function until(probe: () => boolean, timeoutMs = 10_000, what = "condition"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`${what} not reached within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
