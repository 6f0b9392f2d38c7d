/**
 * Upload memory: bodies of growing size streamed through a real `wrangler dev` (workerd, local
 * R2) while the workerd process's resident memory is sampled, on three paths of the same run:
 * a multipart body the Worker parses and drains without storing (its field is not `file`: the
 * request, the parser and the runtime, no R2), the same body stored (multipart to R2), and the
 * resumable upload (16 MiB parts, one request each). If the drained path stays flat while the
 * stored ones grow, the growth is the local R2 emulation's, not the Worker's.
 * BENCH_UPLOAD_MIB=256,1024,4000 picks the sizes: up to 4,095 MiB a WAV generated on the fly,
 * above (a RIFF header stops at 4 GiB) a Matroska of PCM silence written first by native ffmpeg
 * (96 kHz stereo: 4,750 MiB last 3.6 h, under the 4-hour and 5 GB limits of uploads).
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createReadStream, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { freePort } from "./util";
import os from "node:os";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
const wranglerJs = path.join(root, "node_modules/wrangler/bin/wrangler.js");
const ADMIN = "bench-admin-token";
const MiB = 1024 * 1024;

/** RSS (bytes) of every workerd process under `pid`. */
export function workerdRss(pid: number): number {
  let total = 0;
  const children = (parent: number): number[] =>
    readdirSync("/proc")
      .filter((d) => /^\d+$/.test(d))
      .map(Number)
      .filter((p) => {
        try {
          return Number(readFileSync(`/proc/${p}/stat`, "utf8").split(") ")[1]!.split(" ")[1]) === parent;
        } catch {
          return false;
        }
      });
  const queue = [pid];
  while (queue.length > 0) {
    const current = queue.pop()!;
    try {
      const status = readFileSync(`/proc/${current}/status`, "utf8");
      if (/^Name:\s+workerd/m.test(status)) total += Number(/VmRSS:\s+(\d+)/.exec(status)![1]) * 1024;
    } catch {}
    queue.push(...children(current));
  }
  return total;
}

/** 96 kHz stereo 16-bit: 4,000 MiB last 3 h, under the 4-hour limit of uploads. */
const SAMPLE_RATE = 96_000;

/** What is uploaded: a WAV made on the fly, or a file on disk. */
interface Source {
  filename: string;
  bytes: number;
  /** The file's bytes, wrapped in one multipart part when `boundary` is given. */
  open(boundary?: string, field?: string): ReadableStream<Uint8Array>;
}

const WAV_MAX_BYTES = 4 * 1024 * MiB - 1;

async function sourceOf(bytes: number, scratch: string): Promise<Source> {
  if (bytes <= WAV_MAX_BYTES)
    return { filename: "big.wav", bytes, open: (boundary, field) => wavStream(bytes, boundary, field) };
  const file = path.join(scratch, "big.mkv");
  const seconds = Math.floor(bytes / (SAMPLE_RATE * 4));
  const made = spawnSync("ffmpeg", [
    "-v",
    "error",
    "-y",
    "-f",
    "lavfi",
    "-i",
    `anullsrc=r=${SAMPLE_RATE}:cl=stereo`,
    "-t",
    String(seconds),
    "-c:a",
    "pcm_s16le",
    "-f",
    "matroska",
    file,
  ]);
  if (made.status !== 0) throw new Error(`ffmpeg could not write ${file}: ${made.stderr}`);
  const size = statSync(file).size;
  return { filename: "big.mkv", bytes: size, open: (boundary, field) => fileStream(file, boundary, field) };
}

const multipartEnvelope = (boundary: string | undefined, field: string, filename: string, contentType: string) => ({
  preamble: boundary
    ? Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="${filename}"\r\nContent-Type: ${contentType}\r\n\r\n`,
      )
    : Buffer.alloc(0),
  epilogue: boundary ? Buffer.from(`\r\n--${boundary}--\r\n`) : Buffer.alloc(0),
});

function fileStream(file: string, boundary?: string, field = "file"): ReadableStream<Uint8Array> {
  const { preamble, epilogue } = multipartEnvelope(boundary, field, path.basename(file), "video/x-matroska");
  async function* chunks() {
    if (preamble.length > 0) yield new Uint8Array(preamble);
    for await (const chunk of createReadStream(file, { highWaterMark: MiB })) yield new Uint8Array(chunk as Buffer);
    if (epilogue.length > 0) yield new Uint8Array(epilogue);
  }
  return ReadableStream.from(chunks());
}

/** A valid stereo 16-bit WAV of `bytes`, generated on the fly (silence). */
function wavStream(bytes: number, boundary?: string, field = "file"): ReadableStream<Uint8Array> {
  const dataSize = bytes - 44;
  const header = Buffer.alloc(44);
  header.write("RIFF", 0);
  header.writeUInt32LE(36 + dataSize, 4);
  header.write("WAVEfmt ", 8);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(2, 22);
  header.writeUInt32LE(SAMPLE_RATE, 24);
  header.writeUInt32LE(SAMPLE_RATE * 4, 28);
  header.writeUInt16LE(4, 32);
  header.writeUInt16LE(16, 34);
  header.write("data", 36);
  header.writeUInt32LE(dataSize, 40);
  // Without a boundary: the bare WAV (resumable parts are cut from it).
  const { preamble, epilogue } = multipartEnvelope(boundary, field, "big.wav", "audio/wav");
  const chunk = new Uint8Array(MiB);
  let sent = 0;
  let stage = 0;
  return new ReadableStream({
    pull(controller) {
      if (stage === 0) {
        controller.enqueue(new Uint8Array(Buffer.concat([preamble, header])));
        stage = 1;
      } else if (stage === 1) {
        const n = Math.min(MiB, dataSize - sent);
        controller.enqueue(n === MiB ? chunk : chunk.subarray(0, n));
        sent += n;
        if (sent >= dataSize) stage = 2;
      } else {
        if (epilogue.length > 0) controller.enqueue(new Uint8Array(epilogue));
        controller.close();
      }
    },
  });
}

async function waitFor(url: string, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (child.exitCode !== null) throw new Error("wrangler dev exited");
    try {
      if ((await fetch(url)).ok) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 300));
  }
  throw new Error("wrangler dev did not start");
}

/** Reads exactly `length` bytes from a reader into chunks (a resumable part, streamed). */
function take(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  length: number,
  leftover: { bytes: Uint8Array },
): ReadableStream<Uint8Array> {
  let remaining = length;
  return new ReadableStream({
    async pull(controller) {
      if (remaining === 0) return controller.close();
      let chunk = leftover.bytes;
      if (chunk.length === 0) {
        const next = await reader.read();
        if (next.done) return controller.close();
        chunk = next.value;
      }
      const used = chunk.subarray(0, Math.min(chunk.length, remaining));
      leftover.bytes = chunk.subarray(used.length);
      remaining -= used.length;
      controller.enqueue(used.slice());
    },
  });
}

type UploadPath = "multipart, drained (no R2)" | "multipart to R2" | "resumable parts to R2";

async function upload(
  base: string,
  apiKey: string,
  source: Source,
  path: UploadPath,
): Promise<{ status: number; durationSeconds?: number }> {
  const auth = { authorization: `Bearer ${apiKey}` };
  const { bytes } = source;
  if (path !== "resumable parts to R2") {
    const boundary = `bench${Date.now()}`;
    const response = await fetch(`${base}/api/v1/uploads`, {
      method: "POST",
      headers: { ...auth, "content-type": `multipart/form-data; boundary=${boundary}` },
      body: source.open(boundary, path === "multipart to R2" ? "file" : "other"),
      duplex: "half",
    } as RequestInit);
    const body = (await response.json()) as { durationSeconds?: number };
    return { status: response.status, durationSeconds: body.durationSeconds };
  }
  const opened = await fetch(`${base}/api/v1/uploads/multipart`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify({ filename: source.filename, size: bytes }),
  });
  const session = (await opened.json()) as { uploadId: string; partSize: number; partCount: number };
  const reader = source.open().getReader();
  const leftover = { bytes: new Uint8Array(0) };
  for (let n = 1; n <= session.partCount; n++) {
    const length = Math.min(session.partSize, bytes - (n - 1) * session.partSize);
    const response = await fetch(`${base}/api/v1/uploads/multipart/${session.uploadId}/parts/${n}`, {
      method: "PUT",
      headers: { ...auth, "content-length": String(length) },
      body: take(reader, length, leftover),
      duplex: "half",
    } as RequestInit);
    await response.body?.cancel();
    if (!response.ok) return { status: response.status };
  }
  const completed = await fetch(`${base}/api/v1/uploads/multipart/${session.uploadId}/complete`, {
    method: "POST",
    headers: auth,
  });
  const body = (await completed.json()) as { durationSeconds?: number };
  return { status: completed.status, durationSeconds: body.durationSeconds };
}

export async function runUploadMemoryBench(
  sizesMiB = (process.env.BENCH_UPLOAD_MIB ?? "16,256,1024").split(",").map(Number),
): Promise<void> {
  const state = mkdtempSync(path.join(os.tmpdir(), "bench-upload-"));
  const port = await freePort();
  const env = { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true" };
  spawnSync(process.execPath, [wranglerJs, "d1", "migrations", "apply", "DB", "--local", "--persist-to", state], {
    cwd: root,
    env,
  });
  const child = spawn(
    process.execPath,
    [
      wranglerJs,
      "dev",
      "--ip",
      "127.0.0.1",
      "--port",
      String(port),
      "--inspector-port",
      "0",
      "--persist-to",
      state,
      "--var",
      `ADMIN_TOKEN:${ADMIN}`,
      "--show-interactive-dev-session=false",
    ],
    { cwd: root, env, stdio: "ignore" },
  );
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitFor(`${base}/api/v1/openapi.json`, child);
    const admin = { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" };
    const account = (await (
      await fetch(`${base}/api/admin/accounts`, {
        method: "POST",
        headers: admin,
        body: JSON.stringify({ email: `bench-${Date.now()}@example.com` }),
      })
    ).json()) as { accountId: string };
    const { apiKey } = (await (
      await fetch(`${base}/api/admin/accounts/${account.accountId}/keys`, { method: "POST", headers: admin })
    ).json()) as { apiKey: string };
    await new Promise((r) => setTimeout(r, 1000));
    const idle = workerdRss(child.pid!);
    console.log(`\nupload memory (wrangler dev, local R2): workerd idle RSS ${(idle / MiB).toFixed(0)} MiB`);
    console.log(
      "| path | body MiB | upload s | MiB/s | workerd RSS before -> peak MiB | peak - before MiB | (peak - before) / body | status |",
    );
    console.log("| --- | --- | --- | --- | --- | --- | --- | --- |");
    const paths: UploadPath[] = ["multipart, drained (no R2)", "multipart to R2", "resumable parts to R2"];
    for (const size of sizesMiB) {
      const source = await sourceOf(size * MiB, state);
      for (const uploadPath of paths) {
        const before = workerdRss(child.pid!);
        let peak = before;
        const sampler = setInterval(() => (peak = Math.max(peak, workerdRss(child.pid!))), 100);
        const started = performance.now();
        const result = await upload(base, apiKey, source, uploadPath);
        const seconds = (performance.now() - started) / 1000;
        clearInterval(sampler);
        peak = Math.max(peak, workerdRss(child.pid!));
        const status = `${result.status}${result.durationSeconds ? ` (${result.durationSeconds} s)` : ""}`;
        const mib = source.bytes / MiB;
        console.log(
          `| ${uploadPath} (${source.filename}) | ${mib.toFixed(0)} | ${seconds.toFixed(1)} | ${(mib / seconds).toFixed(0)} | ${(before / MiB).toFixed(0)} -> ${(peak / MiB).toFixed(0)} | ${((peak - before) / MiB).toFixed(0)} | ${((peak - before) / source.bytes).toFixed(2)} | ${status} |`,
        );
      }
    }
  } finally {
    child.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 500));
    rmSync(state, { recursive: true, force: true });
  }
}
