/**
 * Figures of docs/security.md, measured on a local stack as a client meets it
 * (`BENCH_ONLY=safety npm run bench`):
 *   - the API Worker's resident memory (workerd RSS) while 20 MB bodies are sent to routes that
 *     take 64 KiB (a page form, the backend callback), against the same number of small bodies in
 *     the same run: a body refused unread leaves nothing behind;
 *   - the time from a backend's death to its job's terminal state (failed and refunded), and from
 *     a backend's restart to the completion of the job it had lost (sent again by the heartbeat).
 */
import { spawn, type ChildProcess } from "node:child_process";
import http from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { startStack, type Stack } from "./api";
import { workerdRss } from "./upload-memory";
import { freePort } from "./util";

const root = path.resolve(import.meta.dirname, "..");
const MiB = 1024 * 1024;

/** Sends `bytes` to `route` as a chunked body until the answer comes; the answer's status (0: reset first). */
function sendBody(base: string, route: string, bytes: number): Promise<number> {
  const url = new URL(route, base);
  return new Promise((resolve) => {
    let written = 0;
    let answered = false;
    const req = http.request({
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: base },
    });
    req.on("response", (res) => {
      answered = true;
      // The server closes the connection after its early answer: a reset then is expected.
      res.on("error", () => resolve(res.statusCode ?? 0));
      res.resume();
      res.on("end", () => {
        req.destroy();
        resolve(res.statusCode ?? 0);
      });
    });
    // A reset before the answer is also a refusal (the answer was lost with the connection): reported as 0.
    req.on("error", () => (answered ? undefined : resolve(0)));
    const chunk = Buffer.alloc(Math.min(65_536, bytes), 0x61);
    const pump = () => {
      if (answered) return;
      if (written >= bytes) return req.end();
      written += chunk.length;
      // Paced like a network client (a write a millisecond): a faster local writer only fills the
      // buffers of wrangler dev's proxy, which then resets the connection and loses the answer.
      req.write(chunk, () => setTimeout(pump, 1));
    };
    pump();
  });
}

async function memoryUnderBodies(stack: Stack): Promise<void> {
  const apiPid = stack.pids[0]!;
  const routes = ["/app/login", "/internal/jobs/job_x/callback"];
  const rounds = 40;
  const sample = () => workerdRss(apiPid) / MiB;
  // Warm-up: the first requests of a process grow it whatever they carry.
  for (const route of routes) await sendBody(stack.base, route, 1024);
  await sleep(500);
  const rows: string[] = [];
  for (const [label, bytes] of [
    ["1 KiB bodies", 1024],
    ["20 MB bodies", 20_000_000],
  ] as const) {
    const before = sample();
    let peak = before;
    const statuses = new Map<number, number>();
    const started = performance.now();
    for (let i = 0; i < rounds; i++) {
      const status = await sendBody(stack.base, routes[i % routes.length]!, bytes);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      peak = Math.max(peak, sample());
    }
    const seconds = (performance.now() - started) / 1000;
    await sleep(500);
    rows.push(
      `| ${label} | ${rounds} | ${[...statuses].map(([s, n]) => `${n} x ${s}`).join(", ")} | ${before.toFixed(0)} | ${peak.toFixed(0)} | ${sample().toFixed(0)} | ${((seconds / rounds) * 1000).toFixed(0)} |`,
    );
  }
  console.log(
    "\nAPI Worker memory under oversized bodies (workerd RSS, MiB; /app/login and /internal/jobs/*/callback alternately, 64 KiB limit)",
  );
  console.log("| bodies | requests | answers | RSS before | RSS peak | RSS after | ms per request |");
  console.log("| --- | --- | --- | --- | --- | --- | --- |");
  for (const row of rows) console.log(row);
}

function startBackend(port: number, env: Record<string, string> = {}): Promise<ChildProcess> {
  const child = spawn(process.execPath, [path.join(root, "backend/src/server.ts")], {
    cwd: path.join(root, "backend"),
    env: {
      ...process.env,
      PORT: String(port),
      HOST: "127.0.0.1",
      BACKEND_SECRET: "bench-backend-secret",
      FONTS_DIR: path.join(root, "assets/fonts"),
      ALLOW_PRIVATE_URLS: "true",
      ...env,
    },
    stdio: "ignore",
  });
  return (async () => {
    for (let i = 0; i < 150; i++) {
      try {
        if ((await fetch(`http://127.0.0.1:${port}/v1/health`)).ok) return child;
      } catch {}
      await sleep(200);
    }
    throw new Error("backend did not start");
  })();
}

async function statusOf(stack: Stack, jobId: string): Promise<string> {
  return (
    (await (await fetch(`${stack.base}/api/v1/jobs/${jobId}`, { headers: stack.auth })).json()) as { status: string }
  ).status;
}

/** Calls convert (webm, on the backend) and waits until the backend holds the job (processing). */
async function jobOnBackend(stack: Stack, uploadId: string): Promise<string> {
  const response = await fetch(`${stack.base}/api/v1/convert`, {
    method: "POST",
    headers: { ...stack.auth, "content-type": "application/json" },
    body: JSON.stringify({ uploadId, format: "webm" }),
  });
  const { jobId } = (await response.json()) as { jobId: string };
  while ((await statusOf(stack, jobId)) !== "processing") await sleep(100);
  await sleep(1500);
  return jobId;
}

async function untilEnded(stack: Stack, jobId: string): Promise<{ status: string; seconds: number }> {
  const started = performance.now();
  for (;;) {
    const status = await statusOf(stack, jobId);
    if (status === "completed" || status === "failed") return { status, seconds: (performance.now() - started) / 1000 };
    await sleep(250);
  }
}

async function backendCrashes(dir: string): Promise<void> {
  const backendPort = await freePort();
  const stack = await startStack(path.join(dir, "crash"), {
    BACKEND_URL: `http://127.0.0.1:${backendPort}`,
    MEDIA_ENGINE: "backend",
    BACKEND_SECRET: "bench-backend-secret",
  });
  const rows: string[] = [];
  try {
    const clip = path.join(dir, "clip.mp4");
    const made = spawn("ffmpeg", [
      "-v",
      "error",
      "-y",
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=320x240:rate=25:duration=3",
      "-f",
      "lavfi",
      "-i",
      "sine=duration=3",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-c:a",
      "aac",
      "-shortest",
      clip,
    ]);
    await new Promise((resolve) => made.on("close", resolve));
    const form = new FormData();
    form.append("file", new Blob([await (await import("node:fs/promises")).readFile(clip)]), "clip.mp4");
    const { uploadId } = (await (
      await fetch(`${stack.base}/api/v1/uploads`, { method: "POST", headers: stack.auth, body: form })
    ).json()) as { uploadId: string };
    for (let round = 1; round <= 3; round++) {
      // Killed for good: the job fails, refunded.
      const slow = await startBackend(backendPort, { FAULT_SLOW_RATE: "1", FAULT_SLOW_MS: "120000" });
      const dead = await jobOnBackend(stack, uploadId);
      slow.kill("SIGKILL");
      const died = await untilEnded(stack, dead);
      // Killed and started again: the job is sent again and completes.
      const lost = await startBackend(backendPort, { FAULT_SLOW_RATE: "1", FAULT_SLOW_MS: "120000" });
      const resent = await jobOnBackend(stack, uploadId);
      lost.kill("SIGKILL");
      const fresh = await startBackend(backendPort);
      const restarted = await untilEnded(stack, resent);
      fresh.kill("SIGKILL");
      await sleep(300);
      rows.push(
        `| ${round} | ${died.status}, ${died.seconds.toFixed(1)} s | ${restarted.status}, ${restarted.seconds.toFixed(1)} s |`,
      );
    }
  } finally {
    await stack.stop();
  }
  console.log(
    "\nJobs whose backend dies (heartbeat every 15 s; three missed beats fail the job; a job the backend lost is sent again)",
  );
  console.log("| round | backend killed: terminal after | backend restarted at once: terminal after |");
  console.log("| --- | --- | --- |");
  for (const row of rows) console.log(row);
}

export async function runSafetyBench(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "bench-safety-"));
  try {
    const stack = await startStack(path.join(dir, "bodies"), { DEV_MODE: "true" });
    try {
      await memoryUnderBodies(stack);
    } finally {
      await stack.stop();
    }
    await backendCrashes(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
