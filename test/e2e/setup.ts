/**
 * End-to-end stack as real processes on loopback: the fixture server, the container backend
 * (native ffmpeg) and three `wrangler dev` instances of the Worker (local D1, R2, Queue and
 * Durable Objects). `main` reaches the backend and routes re-encodes there (a small in-Worker
 * memory budget); `nobackend` points at a closed port, to prove failures are refunded;
 * `forced` sends every command to the backend, the path of large inputs, with presigned S3 URLs
 * as in production.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";
import fixtureSetup from "../global-setup";
import { startLocalStripe } from "../../scripts/local-stripe/server";
import { localPresignedR2Vars, startLocalWorkers } from "../../scripts/local-workers";
import { eventually } from "../helpers/eventually";

const root = path.resolve(import.meta.dirname, "../..");
const wranglerJs = path.join(root, "node_modules/wrangler/bin/wrangler.js");
export const ADMIN_TOKEN = "e2e-admin-token";
const BACKEND_SECRET = "e2e-backend-secret";
const STRIPE = { STRIPE_SECRET_KEY: "sk_test_e2e", STRIPE_WEBHOOK_SECRET: "whsec_e2e" };

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Until `url` answers 2xx. */
async function waitFor(url: string, child: ChildProcess, what: string, timeoutMs = 120_000): Promise<void> {
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`${what} exited with ${child.exitCode}`);
      try {
        const response = await fetch(url);
        await response.body?.cancel();
        return response.status;
      } catch (error) {
        return (error as Error).message;
      }
    },
    (status) => typeof status === "number" && status >= 200 && status < 300,
    { timeoutMs, intervalMs: 300, what: `${what} to answer at ${url}` },
  );
}

/** The last lines a child printed, to say why it stopped when it does. */
function keepTail(child: ChildProcess, label: string): () => string {
  let tail = "";
  const log = (chunk: Buffer) => {
    if (process.env.E2E_VERBOSE) process.stderr.write(`[${label}] ${chunk}`);
    tail = (tail + chunk.toString()).slice(-4000);
  };
  child.stdout?.on("data", log);
  child.stderr?.on("data", log);
  return () => tail;
}

async function startWorkerOnce(
  name: string,
  port: number,
  vars: Record<string, string>,
  stateDir: string,
): Promise<ChildProcess[]> {
  // The API and the media Worker as two processes sharing the state (scripts/local-workers.ts).
  const mediaPort = await freePort();
  const tails = { api: () => "", media: () => "" };
  const spawned: ChildProcess[] = [];
  try {
    const { api } = await startLocalWorkers(
      { port, mediaPort, stateDir, registryDir: path.join(stateDir, "registry"), vars },
      (which, child) => {
        spawned.push(child);
        tails[which] = keepTail(child, which === "api" ? name : `${name}/media`);
      },
    );
    await waitFor(`http://127.0.0.1:${port}/api/v1/openapi.json`, api, `wrangler dev (${name})`);
  } catch (error) {
    for (const child of spawned) child.kill("SIGTERM");
    throw new Error(
      `${(error as Error).message}\n--- ${name} printed:\n${tails.api()}\n--- ${name}/media printed:\n${tails.media()}`,
    );
  }
  return spawned;
}

/**
 * Migrates the stack's database and starts its two Workers. A start that fails is reported
 * with what the processes printed and tried once more (the media Worker on a new port; the
 * API keeps its port, which its URLs name).
 */
async function startWorker(
  name: string,
  port: number,
  vars: Record<string, string>,
  stateDir: string,
): Promise<ChildProcess[]> {
  const env = { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true" };
  const migrate = spawnSync(
    process.execPath,
    [wranglerJs, "d1", "migrations", "apply", "DB", "--local", "--persist-to", stateDir],
    { cwd: root, env, encoding: "utf8" },
  );
  if (migrate.status !== 0) throw new Error(`migrations for ${name} failed: ${migrate.stderr}`);
  try {
    return await startWorkerOnce(name, port, vars, stateDir);
  } catch (error) {
    process.stderr.write(`e2e setup: ${(error as Error).message}\ne2e setup: starting ${name} again\n`);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    return startWorkerOnce(name, port, vars, stateDir);
  }
}

export default async function setup(project: TestProject) {
  const stopFixtures = await fixtureSetup(project);
  const children: ChildProcess[] = [];
  const stateDir = mkdtempSync(path.join(tmpdir(), "e2e-state-"));

  const backendPort = await freePort();
  const backend = spawn(process.execPath, [path.join(root, "backend/src/server.ts")], {
    cwd: path.join(root, "backend"),
    env: {
      ...process.env,
      PORT: String(backendPort),
      HOST: "127.0.0.1",
      BACKEND_SECRET,
      FONTS_DIR: path.join(root, "assets/fonts"),
      ALLOW_PRIVATE_URLS: "true",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  backend.stderr?.on("data", (chunk: Buffer) => process.env.E2E_VERBOSE && process.stderr.write(`[backend] ${chunk}`));
  children.push(backend);
  await waitFor(`http://127.0.0.1:${backendPort}/v1/health`, backend, "backend");

  // Job webhooks: a signing key, and retries after 1 and 2 s instead of 30 s ... 12 h.
  // AUTH_SECRET also derives the result download capabilities (src/services/media-jobs/downloads.ts).
  const common = {
    ADMIN_TOKEN,
    BACKEND_SECRET,
    AUTH_SECRET: "e2e-auth-secret",
    ALLOW_PRIVATE_URLS: "true",
    WEBHOOK_SIGNING_KEY: "e2e-webhook-signing-key",
    WEBHOOK_RETRY_SCHEDULE: "1,2",
  };
  const mainPort = await freePort();
  const deadPort = await freePort();
  const noBackendPort = await freePort();
  const forcedPort = await freePort();
  const wasmPort = await freePort();
  // The developer area of `main` pays through this local Stripe, which sends it signed webhooks.
  const stripe = await startLocalStripe({
    secretKey: STRIPE.STRIPE_SECRET_KEY,
    webhookSecret: STRIPE.STRIPE_WEBHOOK_SECRET,
    webhookUrl: `http://127.0.0.1:${mainPort}/api/webhooks/stripe`,
  });
  const started = await Promise.all([
    startWorker(
      "main",
      mainPort,
      {
        ...common,
        BACKEND_URL: `http://127.0.0.1:${backendPort}`,
        PUBLIC_BASE_URL: `http://127.0.0.1:${mainPort}`,
        // Copies and audio fit; any video re-encode (>= 55 MiB of wasm heap) goes to the backend.
        WASM_MEMORY_BUDGET_BYTES: String(48 * 1024 * 1024),
        ...STRIPE,
        STRIPE_API_BASE: stripe.url,
        DEV_MODE: "true",
        SIGNUP_CREDITS: "100",
      },
      path.join(stateDir, "main"),
    ),
    startWorker(
      "nobackend",
      noBackendPort,
      {
        ...common,
        BACKEND_URL: `http://127.0.0.1:${deadPort}`,
        PUBLIC_BASE_URL: `http://127.0.0.1:${noBackendPort}`,
        WASM_MEMORY_BUDGET_BYTES: String(48 * 1024 * 1024),
      },
      path.join(stateDir, "nobackend"),
    ),
    startWorker(
      "forced",
      forcedPort,
      {
        ...common,
        BACKEND_URL: `http://127.0.0.1:${backendPort}`,
        PUBLIC_BASE_URL: `http://127.0.0.1:${forcedPort}`,
        // Every command on native ffmpeg: the jobs the router sends there when inputs are large.
        MEDIA_ENGINE: "backend",
        // And through presigned S3 URLs on the R2 emulation's S3 API, production's transfer path
        // (the other stacks hand the backend URLs the Worker serves).
        ...localPresignedR2Vars(forcedPort),
      },
      path.join(stateDir, "forced"),
    ),
    startWorker(
      "wasm",
      wasmPort,
      {
        ...common,
        PUBLIC_BASE_URL: `http://127.0.0.1:${wasmPort}`,
        // Every command on ffmpeg.wasm, no backend at all: to compare both engines on one input
        // where the router would pick the backend (clean-audio of more than a few seconds).
        MEDIA_ENGINE: "wasm",
      },
      path.join(stateDir, "wasm"),
    ),
  ]);
  children.push(...started.flat());
  project.provide("e2eForcedBackendUrl", `http://127.0.0.1:${forcedPort}`);
  project.provide("e2eMainUrl", `http://127.0.0.1:${mainPort}`);
  project.provide("e2eStripeUrl", stripe.url);
  project.provide("e2eNoBackendUrl", `http://127.0.0.1:${noBackendPort}`);
  // Where `nobackend` looks for its backend: a test may start one there, and kill it (security.test.ts).
  project.provide("e2eNoBackendBackendPort", deadPort);
  project.provide("e2eBackendSecret", BACKEND_SECRET);
  project.provide("e2eWasmUrl", `http://127.0.0.1:${wasmPort}`);

  return async () => {
    for (const child of children) child.kill("SIGTERM");
    await stripe.close();
    await new Promise((resolve) => setTimeout(resolve, 500));
    await stopFixtures();
    rmSync(stateDir, { recursive: true, force: true });
  };
}

declare module "vitest" {
  interface ProvidedContext {
    e2eMainUrl: string;
    e2eNoBackendUrl: string;
    e2eNoBackendBackendPort: number;
    e2eBackendSecret: string;
    e2eForcedBackendUrl: string;
    e2eWasmUrl: string;
    e2eStripeUrl: string;
  }
}
