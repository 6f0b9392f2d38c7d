/**
 * The ceiling the local R2 emulation puts on transfers, measured in the same run as the product's:
 * a Worker of a few lines (bench/r2-baseline/worker.js) under its own `wrangler dev` stores the
 * same file by one put and as a multipart object, and serves each back; the client streams from
 * disk and drains the answers, as the backend does. Used by runTransferBench (bench/api.ts).
 */
import { spawn } from "node:child_process";
import { createReadStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { freePort } from "./util";

const root = path.resolve(import.meta.dirname, "..");
const wranglerJs = path.join(root, "node_modules/wrangler/bin/wrangler.js");

export interface R2Ceiling {
  step: string;
  seconds: number;
  mbPerSecond: number;
}

async function timed(step: string, bytes: number, work: () => Promise<void>): Promise<R2Ceiling> {
  const started = performance.now();
  await work();
  const seconds = (performance.now() - started) / 1000;
  return { step, seconds, mbPerSecond: bytes / 1e6 / seconds };
}

async function put(base: string, key: string, file: string, size: number): Promise<void> {
  const response = await fetch(`${base}/${key}`, {
    method: "PUT",
    headers: { "content-length": String(size) },
    body: Readable.toWeb(createReadStream(file, { highWaterMark: 1024 * 1024 })) as unknown as ReadableStream,
    duplex: "half",
  } as RequestInit);
  const body = (await response.json()) as { size?: number };
  if (!response.ok || body.size !== size)
    throw new Error(`r2 baseline put ${key}: ${response.status} ${JSON.stringify(body)}`);
}

async function drain(base: string, key: string, size: number): Promise<void> {
  const response = await fetch(`${base}/${key}`);
  let bytes = 0;
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) bytes += chunk.byteLength;
  if (!response.ok || bytes !== size)
    throw new Error(`r2 baseline get ${key}: ${response.status}, ${bytes} of ${size} bytes`);
}

export async function measureR2Ceilings(file: string, size: number): Promise<R2Ceiling[]> {
  const state = await mkdtemp(path.join(os.tmpdir(), "bench-r2-baseline-"));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = spawn(
    process.execPath,
    [
      wranglerJs,
      "dev",
      "-c",
      path.join(root, "bench/r2-baseline/wrangler.toml"),
      "--ip",
      "127.0.0.1",
      "--port",
      String(port),
      "--inspector-port",
      String(await freePort()),
      "--persist-to",
      state,
      "--show-interactive-dev-session=false",
    ],
    {
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", WRANGLER_REGISTRY_PATH: path.join(state, "registry") },
      stdio: ["ignore", "ignore", "ignore"],
    },
  );
  try {
    for (let i = 0; ; i++) {
      if (child.exitCode !== null || i > 400) throw new Error("r2 baseline: wrangler dev did not start");
      try {
        await fetch(`${base}/`);
        break;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
    return [
      await timed("one put (known length)", size, () => put(base, "single", file, size)),
      await timed("read of that object", size, () => drain(base, "single", size)),
      await timed("multipart object (8 MiB parts)", size, () => put(base, "multipart?part=8", file, size)),
      await timed("read of the multipart object", size, () => drain(base, "multipart", size)),
    ];
  } finally {
    child.kill("SIGTERM");
    await new Promise((resolve) => setTimeout(resolve, 500));
    await rm(state, { recursive: true, force: true });
  }
}
