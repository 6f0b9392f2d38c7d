/**
 * Upload memory: multipart bodies of growing size streamed through a real `wrangler dev`
 * (workerd, local R2) while the workerd process's resident memory is sampled. The baseline,
 * measured in the same run, is the idle RSS of that process and the size of each body: if
 * the Worker buffered uploads, the peak would grow with the size; streamed, it stays flat.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
const wranglerJs = path.join(root, "node_modules/wrangler/bin/wrangler.js");
const ADMIN = "bench-admin-token";
const MiB = 1024 * 1024;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** RSS (bytes) of every workerd process under `pid`. */
function workerdRss(pid: number): number {
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

/** A valid 44.1 kHz stereo 16-bit WAV of `bytes`, generated on the fly (silence). */
function wavStream(bytes: number, boundary: string): ReadableStream<Uint8Array> {
  const dataSize = bytes - 44;
  const header = Buffer.alloc(44);
  header.write("RIFF", 0);
  header.writeUInt32LE(36 + dataSize, 4);
  header.write("WAVEfmt ", 8);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(2, 22);
  header.writeUInt32LE(44100, 24);
  header.writeUInt32LE(44100 * 4, 28);
  header.writeUInt16LE(4, 32);
  header.writeUInt16LE(16, 34);
  header.write("data", 36);
  header.writeUInt32LE(dataSize, 40);
  const preamble = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.wav"\r\nContent-Type: audio/wav\r\n\r\n`);
  const epilogue = Buffer.from(`\r\n--${boundary}--\r\n`);
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
        controller.enqueue(new Uint8Array(epilogue));
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

export async function runUploadMemoryBench(sizesMiB = [16, 256, 1024]): Promise<void> {
  const state = mkdtempSync(path.join(os.tmpdir(), "bench-upload-"));
  const port = await freePort();
  const env = { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true" };
  spawnSync(process.execPath, [wranglerJs, "d1", "migrations", "apply", "DB", "--local", "--persist-to", state], { cwd: root, env });
  const child = spawn(process.execPath, [wranglerJs, "dev", "--ip", "127.0.0.1", "--port", String(port), "--inspector-port", "0", "--persist-to", state, "--var", `ADMIN_TOKEN:${ADMIN}`, "--show-interactive-dev-session=false"], { cwd: root, env, stdio: "ignore" });
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitFor(`${base}/api/v1/openapi.json`, child);
    const admin = { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" };
    const account = (await (await fetch(`${base}/api/admin/accounts`, { method: "POST", headers: admin, body: JSON.stringify({ email: `bench-${Date.now()}@example.com` }) })).json()) as { accountId: string };
    const { apiKey } = (await (await fetch(`${base}/api/admin/accounts/${account.accountId}/keys`, { method: "POST", headers: admin })).json()) as { apiKey: string };
    await new Promise((r) => setTimeout(r, 1000));
    const idle = workerdRss(child.pid!);
    console.log(`\nupload memory (wrangler dev, local R2): workerd idle RSS ${(idle / MiB).toFixed(0)} MiB`);
    console.log("| body MiB | upload s | MiB/s | workerd peak RSS MiB | peak - idle MiB | (peak - idle) / body | status |");
    console.log("| --- | --- | --- | --- | --- | --- | --- |");
    for (const size of sizesMiB) {
      const boundary = `bench${Date.now()}`;
      let peak = workerdRss(child.pid!);
      const sampler = setInterval(() => (peak = Math.max(peak, workerdRss(child.pid!))), 100);
      const started = performance.now();
      const response = await fetch(`${base}/api/v1/uploads`, {
        method: "POST",
        headers: { authorization: `Bearer ${apiKey}`, "content-type": `multipart/form-data; boundary=${boundary}` },
        body: wavStream(size * MiB, boundary),
        duplex: "half",
      } as RequestInit);
      const body = (await response.json()) as { durationSeconds?: number };
      const seconds = (performance.now() - started) / 1000;
      clearInterval(sampler);
      peak = Math.max(peak, workerdRss(child.pid!));
      console.log(`| ${size} | ${seconds.toFixed(1)} | ${(size / seconds).toFixed(0)} | ${(peak / MiB).toFixed(0)} | ${((peak - idle) / MiB).toFixed(0)} | ${((peak - idle) / (size * MiB)).toFixed(2)} | ${response.status}${body.durationSeconds ? ` (${body.durationSeconds} s)` : ""} |`);
    }
  } finally {
    child.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 500));
    rmSync(state, { recursive: true, force: true });
  }
}
