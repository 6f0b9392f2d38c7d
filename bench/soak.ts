/**
 * Fault campaign (`npm run soak`): a local stack (the backend and both Workers under `wrangler
 * dev`, loopback only) runs many small jobs for many accounts while faults are injected by
 * configuration: the backend killed mid-job and restarted, backend jobs slowed past their
 * deadline, callbacks dropped or sent twice, job messages redelivered, the media runner reset
 * mid-job, R2 writes of the runner failing. Then the operator's maintenance runs, and every
 * account is audited: every job terminal, every failed job refunded exactly once, balance =
 * ledger sum = the figure the client expects from what it saw, and no orphan object left.
 *
 * SOAK_JOBS (2000), SOAK_ACCOUNTS (20), SOAK_CONCURRENCY (6), SOAK_MINUTES (bound, 40),
 * SOAK_KILL_EVERY_S (backend kill period, 45). Bounded in count and time; exits 1 on a violation.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startLocalWorkers } from "../scripts/local-workers";
import { freePort } from "./util";

const root = path.resolve(import.meta.dirname, "..");
const wranglerJs = path.join(root, "node_modules/wrangler/bin/wrangler.js");
const ADMIN = "soak-admin";
const SECRET = "soak-backend-secret";
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface SoakOptions {
  jobs: number;
  accounts: number;
  concurrency: number;
  minutes: number;
  killEverySeconds: number;
  /** Probabilities per event. */
  faults: {
    slow: number;
    callbackDrop: number;
    callbackDuplicate: number;
    queueRedeliver: number;
    runnerReset: number;
    r2PutFail: number;
  };
  log?: (line: string) => void;
}

export interface SoakReport {
  jobs: number;
  completed: number;
  failed: number;
  refused: number;
  notTerminal: number;
  faults: Record<string, number>;
  accounts: number;
  ledgerMismatches: number;
  balanceMismatches: number;
  failedNotRefunded: number;
  refundedNotFailed: number;
  orphansBeforeCleanup: number;
  orphansAfterCleanup: number;
  http5xx: number;
  /** The first 5xx answers (method, path, status, body) and the Workers' error lines around them. */
  errors5xx: string[];
  seconds: number;
}

const TOOLS: { tool: string; input: "clip" | "tone"; body: Record<string, unknown> }[] = [
  { tool: "extract-audio", input: "clip", body: { format: "mp3" } },
  { tool: "convert", input: "clip", body: { format: "mkv" } },
  { tool: "clean-audio", input: "tone", body: {} },
  { tool: "convert", input: "clip", body: { format: "webm" } }, // Opus: always on the backend
  { tool: "trim", input: "clip", body: { start: 0.5, end: 1.5 } },
];

function lines(child: ChildProcess, onLine: (line: string) => void): void {
  for (const stream of [child.stdout, child.stderr]) {
    let pending = "";
    stream?.setEncoding("utf8").on("data", (chunk: string) => {
      pending += chunk;
      const parts = pending.split("\n");
      pending = parts.pop() ?? "";
      parts.forEach(onLine);
    });
  }
}

export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const log = options.log ?? ((line: string) => console.log(line));
  const started = Date.now();
  const deadline = started + options.minutes * 60_000;
  const dir = await mkdtemp(path.join(os.tmpdir(), "soak-"));
  const env = { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true" };
  const faults: Record<string, number> = {
    "backend-killed": 0,
    "backend-slow": 0,
    "callback-dropped": 0,
    "callback-duplicated": 0,
    "queue-redelivered": 0,
    "runner-reset": 0,
    "r2-put-failed": 0,
  };
  const count = (kind: string) => (faults[kind] = (faults[kind] ?? 0) + 1);

  // Inputs: a 2 s 320x240 clip with sound and a 2 s tone, made by native ffmpeg.
  const clip = path.join(dir, "clip.mp4");
  const tone = path.join(dir, "tone.mp3");
  spawnSync("ffmpeg", [
    "-v",
    "error",
    "-f",
    "lavfi",
    "-i",
    "testsrc2=size=320x240:rate=25:duration=2",
    "-f",
    "lavfi",
    "-i",
    "sine=frequency=440:duration=2",
    "-shortest",
    "-c:v",
    "libx264",
    "-pix_fmt",
    "yuv420p",
    "-c:a",
    "aac",
    clip,
  ]);
  spawnSync("ffmpeg", [
    "-v",
    "error",
    "-f",
    "lavfi",
    "-i",
    "sine=frequency=300:duration=2",
    "-c:a",
    "libmp3lame",
    tone,
  ]);

  const backendPort = await freePort();
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  let backend: ChildProcess | undefined;
  let stopped = false;
  const startBackend = () => {
    if (stopped) return;
    backend = spawn(process.execPath, [path.join(root, "backend/src/server.ts")], {
      cwd: path.join(root, "backend"),
      env: {
        ...process.env,
        PORT: String(backendPort),
        HOST: "127.0.0.1",
        BACKEND_SECRET: SECRET,
        FONTS_DIR: path.join(root, "assets/fonts"),
        FAULT_SLOW_RATE: String(options.faults.slow),
        FAULT_SLOW_MS: "45000",
        FAULT_CALLBACK_DROP_RATE: String(options.faults.callbackDrop),
        FAULT_CALLBACK_DUPLICATE_RATE: String(options.faults.callbackDuplicate),
      },
      stdio: ["ignore", "pipe", "ignore"],
    });
    lines(backend, (line) => {
      if (line.includes('"fault_slow"')) count("backend-slow");
      if (line.includes('"fault_callback_dropped"')) count("callback-dropped");
      if (line.includes('"fault_callback_duplicate"')) count("callback-duplicated");
    });
  };
  startBackend();
  spawnSync(
    process.execPath,
    [wranglerJs, "d1", "migrations", "apply", "DB", "--local", "--persist-to", path.join(dir, "state")],
    { cwd: root, env },
  );
  const { api, media } = await startLocalWorkers({
    port,
    mediaPort: await freePort(),
    stateDir: path.join(dir, "state"),
    registryDir: path.join(dir, "registry"),
    vars: {
      ADMIN_TOKEN: ADMIN,
      BACKEND_SECRET: SECRET,
      AUTH_SECRET: "soak-auth-secret",
      BACKEND_URL: `http://127.0.0.1:${backendPort}`,
      PUBLIC_BASE_URL: base,
      JOB_MIN_DEADLINE_SECONDS: "30",
      FAULT_QUEUE_REDELIVER_RATE: String(options.faults.queueRedeliver),
    },
    mediaVars: {
      FAULT_RUNNER_ABORT_RATE: String(options.faults.runnerReset),
      FAULT_R2_PUT_FAIL_RATE: String(options.faults.r2PutFail),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  // The Workers' error lines (an uncaught exception's message and stack), kept to explain a 5xx.
  const workerErrors: string[] = [];
  for (const [name, worker] of [
    ["api", api],
    ["media", media],
  ] as const) {
    lines(worker, (line) => {
      const match = /fault injected: ([\w-]+)/.exec(line);
      if (match) count(match[1]!);
      if (/error|exception|\b5\d\d\b/i.test(line) && !match) workerErrors.push(`${name}: ${line.slice(0, 400)}`);
      if (workerErrors.length > 400) workerErrors.splice(0, 200);
    });
  }
  let http5xx = 0;
  const errors5xx: string[] = [];
  const call = async (pathname: string, init: RequestInit = {}): Promise<Response> => {
    const response = await fetch(`${base}${pathname}`, init);
    if (response.status >= 500) {
      http5xx++;
      if (errors5xx.length < 5) {
        const body = (await response.clone().text()).slice(0, 300);
        errors5xx.push(`${init.method ?? "GET"} ${pathname} -> ${response.status} ${body}`, ...workerErrors.slice(-10));
      }
    }
    return response;
  };
  const admin = { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" };
  const stop = async () => {
    stopped = true;
    api.kill("SIGTERM");
    media.kill("SIGTERM");
    backend?.kill("SIGTERM");
    await sleep(500);
    await rm(dir, { recursive: true, force: true });
  };

  try {
    for (let i = 0; ; i++) {
      if (i > 400 || api.exitCode !== null) throw new Error("wrangler dev did not start");
      try {
        if ((await fetch(`${base}/api/v1/openapi.json`)).ok) break;
      } catch {}
      await sleep(300);
    }
    // Accounts, each with a key and its own uploads.
    const initial = 100_000;
    const accounts: {
      accountId: string;
      auth: Record<string, string>;
      uploads: Record<"clip" | "tone", string>;
      spent: number;
    }[] = [];
    for (let i = 0; i < options.accounts; i++) {
      const created = (await (
        await call("/api/admin/accounts", {
          method: "POST",
          headers: admin,
          body: JSON.stringify({ email: `soak-${i}-${Date.now()}@example.com`, credits: initial }),
        })
      ).json()) as { accountId: string };
      const key = (await (
        await call(`/api/admin/accounts/${created.accountId}/keys`, { method: "POST", headers: admin })
      ).json()) as { apiKey: string };
      const auth = { authorization: `Bearer ${key.apiKey}` };
      const uploads = {} as Record<"clip" | "tone", string>;
      for (const [name, file] of [
        ["clip", clip],
        ["tone", tone],
      ] as const) {
        const form = new FormData();
        form.append("file", new Blob([await readFile(file)]), path.basename(file));
        const body = (await (await call("/api/v1/uploads", { method: "POST", headers: auth, body: form })).json()) as {
          uploadId: string;
        };
        uploads[name] = body.uploadId;
      }
      accounts.push({ ...created, auth, uploads, spent: 0 });
    }
    log(
      `soak: ${options.accounts} accounts ready, ${options.jobs} jobs to run, concurrency ${options.concurrency}, faults ${JSON.stringify(options.faults)}`,
    );

    // The backend is killed (SIGKILL: jobs in flight are lost) and restarted a second later.
    const killer = setInterval(() => {
      if (!backend) return;
      backend.kill("SIGKILL");
      count("backend-killed");
      backend = undefined;
      setTimeout(startBackend, 1000);
    }, options.killEverySeconds * 1000);

    const outcomes = { completed: 0, failed: 0, refused: 0, notTerminal: 0 };
    /** Tool calls the API refused, by status and answer (a refusal must debit nothing: the audit checks it). */
    const refusals = new Map<string, number>();
    let next = 0;
    const worker = async () => {
      while (next < options.jobs && Date.now() < deadline) {
        const index = next++;
        const account = accounts[index % accounts.length]!;
        const spec = TOOLS[index % TOOLS.length]!;
        const response = await call(`/api/v1/${spec.tool}`, {
          method: "POST",
          headers: { ...account.auth, "content-type": "application/json" },
          body: JSON.stringify({ uploadId: account.uploads[spec.input], ...spec.body }),
        });
        const envelope = (await response.json()) as { jobId?: string; creditsUsed?: number };
        if (!response.ok || !envelope.jobId) {
          outcomes.refused++;
          const reason = `${response.status} ${JSON.stringify(envelope).slice(0, 160)}`;
          refusals.set(reason, (refusals.get(reason) ?? 0) + 1);
          continue;
        }
        for (;;) {
          await sleep(500);
          const job = (await (await call(`/api/v1/jobs/${envelope.jobId}`, { headers: account.auth })).json()) as {
            status: string;
          };
          if (job.status === "completed") {
            outcomes.completed++;
            account.spent += envelope.creditsUsed ?? 0;
            break;
          }
          if (job.status === "failed") {
            outcomes.failed++;
            break;
          }
          if (Date.now() > deadline) {
            outcomes.notTerminal++;
            break;
          }
        }
        if ((index + 1) % 100 === 0)
          log(`soak: ${index + 1} jobs submitted, ${JSON.stringify(outcomes)}, faults ${JSON.stringify(faults)}`);
      }
    };
    // The operator's watchdog sweep, as the cron runs it, every 15 s during the campaign.
    const sweeper = setInterval(
      () => void call("/api/admin/maintenance", { method: "POST", headers: admin }).catch(() => {}),
      15_000,
    );
    await Promise.all(Array.from({ length: options.concurrency }, worker));
    clearInterval(killer);
    clearInterval(sweeper);
    if (!backend) startBackend();

    // Cleanup: wait for late callbacks and alarms, then maintenance with no orphan grace.
    await sleep(5_000);
    const orphansBefore = (await (
      await call("/api/admin/storage/orphans?graceSeconds=0", { headers: admin })
    ).json()) as { count: number };
    await call("/api/admin/maintenance?orphanGraceSeconds=0", { method: "POST", headers: admin });
    const orphansAfter = (await (
      await call("/api/admin/storage/orphans?graceSeconds=0", { headers: admin })
    ).json()) as { count: number; orphans: string[] };

    let ledgerMismatches = 0;
    let balanceMismatches = 0;
    let failedNotRefunded = 0;
    let refundedNotFailed = 0;
    let notTerminal = 0;
    for (const account of accounts) {
      const audit = (await (
        await call(`/api/admin/accounts/${account.accountId}/audit`, { headers: admin })
      ).json()) as {
        balance: number;
        ledgerTotal: number;
        jobs: Record<string, number>;
        failedNotRefunded: number;
        refundedNotFailed: number;
      };
      if (audit.balance !== audit.ledgerTotal) ledgerMismatches++;
      // Uploads are free: what the account has left is what it started with minus its completed jobs.
      if (audit.balance !== initial - account.spent) balanceMismatches++;
      failedNotRefunded += audit.failedNotRefunded;
      refundedNotFailed += audit.refundedNotFailed;
      notTerminal += (audit.jobs.queued ?? 0) + (audit.jobs.processing ?? 0);
    }
    if (orphansAfter.count > 0) log(`orphans left: ${orphansAfter.orphans.slice(0, 10).join(", ")}`);
    for (const [reason, times] of refusals) log(`refused ${times} x: ${reason}`);
    return {
      jobs: outcomes.completed + outcomes.failed + outcomes.refused + outcomes.notTerminal,
      completed: outcomes.completed,
      failed: outcomes.failed,
      refused: outcomes.refused,
      notTerminal: Math.max(notTerminal, outcomes.notTerminal),
      faults,
      accounts: accounts.length,
      ledgerMismatches,
      balanceMismatches,
      failedNotRefunded,
      refundedNotFailed,
      orphansBeforeCleanup: orphansBefore.count,
      orphansAfterCleanup: orphansAfter.count,
      http5xx,
      errors5xx,
      seconds: Math.round((Date.now() - started) / 1000),
    };
  } finally {
    await stop();
  }
}

export function violations(report: SoakReport): string[] {
  const problems: string[] = [];
  if (report.notTerminal > 0) problems.push(`${report.notTerminal} jobs not terminal`);
  if (report.ledgerMismatches > 0)
    problems.push(`${report.ledgerMismatches} accounts whose balance differs from the ledger`);
  if (report.balanceMismatches > 0)
    problems.push(`${report.balanceMismatches} accounts whose balance differs from the expected figure`);
  if (report.failedNotRefunded > 0) problems.push(`${report.failedNotRefunded} failed jobs not refunded`);
  if (report.refundedNotFailed > 0) problems.push(`${report.refundedNotFailed} refunds of jobs that did not fail`);
  if (report.orphansAfterCleanup > 0) problems.push(`${report.orphansAfterCleanup} orphan objects after cleanup`);
  if (report.http5xx > 0) problems.push(`${report.http5xx} answers 5xx: ${report.errors5xx.join("\n")}`);
  return problems;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const number = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
  const report = await runSoak({
    jobs: number("SOAK_JOBS", 2000),
    accounts: number("SOAK_ACCOUNTS", 20),
    concurrency: number("SOAK_CONCURRENCY", 6),
    minutes: number("SOAK_MINUTES", 40),
    killEverySeconds: number("SOAK_KILL_EVERY_S", 45),
    faults: {
      slow: number("SOAK_SLOW_RATE", 0.02),
      callbackDrop: number("SOAK_CALLBACK_DROP_RATE", 0.02),
      callbackDuplicate: number("SOAK_CALLBACK_DUPLICATE_RATE", 0.05),
      queueRedeliver: number("SOAK_QUEUE_REDELIVER_RATE", 0.1),
      runnerReset: number("SOAK_RUNNER_RESET_RATE", 0.02),
      r2PutFail: number("SOAK_R2_PUT_FAIL_RATE", 0.02),
    },
  });
  console.log(JSON.stringify(report, null, 2));
  const problems = violations(report);
  if (problems.length > 0) console.error(`soak: ${problems.join("; ")}`);
  else
    console.log(
      "soak: every job terminal, every failure refunded once, balances = ledgers = expected, no orphan, no 5xx",
    );
  process.exit(problems.length > 0 ? 1 : 0);
}
