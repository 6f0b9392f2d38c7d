/**
 * The two Workers under `wrangler dev`, as two processes: the media Worker
 * (wrangler.media.jsonc: MediaRunner + ffmpeg.wasm) and the API Worker (wrangler.toml), which
 * reaches the first through its script_name Durable Object binding via wrangler's dev registry.
 * Two processes, not one multi-config session: workerd runs a process's isolates on one thread,
 * and a wasm job blocks its isolate for seconds, so in one process API calls would wait behind
 * media work (in production each Durable Object has its own isolate). Both share the persisted
 * local state (D1, R2); a registry folder per stack keeps parallel stacks apart.
 * Used by scripts/dev.mjs, test/e2e/setup.ts and bench/api.ts.
 */
import { spawn, type ChildProcess, type StdioOptions } from "node:child_process";
import { mkdirSync } from "node:fs";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
const wranglerJs = path.join(root, "node_modules/wrangler/bin/wrangler.js");

export interface LocalWorkersOptions {
  /** API port on 127.0.0.1; the media Worker listens on `mediaPort` (it serves nothing). */
  port: number;
  mediaPort: number;
  inspectorPort?: number;
  /** `--persist-to` folder; omitted: wrangler's default (.wrangler/state). */
  stateDir?: string;
  registryDir: string;
  /** `--var`s of the API Worker; the media Worker gets the same plus `mediaVars`. */
  vars: Record<string, string>;
  mediaVars?: Record<string, string>;
  stdio?: StdioOptions;
}

function wranglerDev(
  config: string,
  port: number,
  inspectorPort: number,
  vars: Record<string, string>,
  options: LocalWorkersOptions,
  niceness = 0,
): ChildProcess {
  const args = [
    wranglerJs,
    "dev",
    "-c",
    config,
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--inspector-port",
    String(inspectorPort),
    "--show-interactive-dev-session=false",
  ];
  if (options.stateDir) args.push("--persist-to", options.stateDir);
  for (const [key, value] of Object.entries(vars)) args.push("--var", `${key}:${value}`);
  // wrangler's local observability (on by default) streams the tail events of every invocation
  // (a request, a Durable Object call, a queue batch) into a SQLite Durable Object: about 2 ms of
  // CPU each. X_LOCAL_OBSERVABILITY=true brings its dashboard back.
  const env = {
    ...process.env,
    WRANGLER_SEND_METRICS: "false",
    WRANGLER_REGISTRY_PATH: options.registryDir,
    X_LOCAL_OBSERVABILITY: process.env.X_LOCAL_OBSERVABILITY ?? "false",
  };
  const stdio = options.stdio ?? ["ignore", "pipe", "pipe"];
  // `nice` execs node in place (same pid); workerd, started by wrangler, inherits the niceness.
  if (niceness > 0)
    return spawn("nice", ["-n", String(niceness), process.execPath, ...args], { cwd: root, env, stdio });
  return spawn(process.execPath, args, { cwd: root, env, stdio });
}

/**
 * The media Worker runs at a lower CPU priority (niceness 10; `MEDIA_NICE`, 0 to turn it off):
 * on one machine its wasm encodes take every core they can, and the API's answers then wait for
 * the scheduler (tool calls at 20/s beside four wasm jobs, five runs in bench/README.md: p99
 * 194-299 ms at equal priority, 114-203 ms niced, a tendency within the noise). In production the
 * two never share a CPU.
 */
function mediaNiceness(): number {
  const value = Number(process.env.MEDIA_NICE ?? 10);
  return Number.isInteger(value) && value >= 0 && value <= 19 ? value : 10;
}

/** Until something answers on 127.0.0.1:`port` (the media Worker serves only 404s). */
async function untilListening(port: number, child: ChildProcess, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`wrangler dev (media Worker) exited with ${child.exitCode}`);
    try {
      await fetch(`http://127.0.0.1:${port}/`);
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  throw new Error(`wrangler dev (media Worker) did not listen on port ${port} within ${timeoutMs / 1000} s`);
}

/**
 * Starts the media Worker and, once it listens, the API Worker; the caller waits for the API to
 * answer. One after the other: two workerd processes opening the shared SQLite state at the same
 * moment can fail to start with SQLITE_BUSY ("The Workers runtime failed to start").
 * `onSpawn` sees each process as soon as it exists (to keep what it prints).
 */
export async function startLocalWorkers(
  options: LocalWorkersOptions,
  onSpawn: (name: "api" | "media", child: ChildProcess) => void = () => {},
): Promise<{ api: ChildProcess; media: ChildProcess }> {
  mkdirSync(options.registryDir, { recursive: true });
  const media = wranglerDev(
    "wrangler.media.jsonc",
    options.mediaPort,
    0,
    { ...options.vars, ...options.mediaVars },
    options,
    mediaNiceness(),
  );
  onSpawn("media", media);
  try {
    await untilListening(options.mediaPort, media);
  } catch (error) {
    media.kill("SIGTERM");
    throw error;
  }
  const api = wranglerDev("wrangler.toml", options.port, options.inspectorPort ?? 0, options.vars, options);
  onSpawn("api", api);
  return { api, media };
}

/**
 * The `--var`s that hand the backend presigned S3 URLs, as production does, on the R2
 * emulation's own S3 API served by the API Worker's `wrangler dev` on `apiPort` (the bucket and
 * credentials of wrangler.toml's `[[r2_buckets]]` and its `local_dev`).
 */
export function localPresignedR2Vars(apiPort: number): Record<string, string> {
  return {
    R2_S3_ENDPOINT: `http://127.0.0.1:${apiPort}/cdn-cgi/local/r2/s3`,
    R2_BUCKET_NAME: "media-credits-media",
    R2_ACCESS_KEY_ID: "local-r2-emulation",
    R2_SECRET_ACCESS_KEY: "local-r2-emulation-only",
  };
}
