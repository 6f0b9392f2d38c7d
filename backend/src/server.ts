/**
 * HTTP surface of the media backend (node:http, no framework):
 *   GET  /v1/health        {ok: true}                       no auth
 *   GET  /v1/capabilities  engines, job kinds, speech lists  Bearer BACKEND_SECRET
 *   POST /v1/jobs          202 {accepted: true}              Bearer BACKEND_SECRET
 *   GET  /v1/jobs/:jobId   {jobId, status, error?}          Bearer BACKEND_SECRET
 *   DELETE /v1/jobs/:jobId {jobId, cancelled}               Bearer BACKEND_SECRET (the caller cancelled it)
 *   POST /v1/probe         {durationMs, streams...}         Bearer BACKEND_SECRET (full-read probe)
 *   POST /v1/ingest        {bytes, finalUrl, contentType}   Bearer BACKEND_SECRET (a URL upload, pinned fetch)
 * The bodies of /v1/jobs, /v1/capabilities and the callbacks are defined in packages/wire/src/protocol.ts (shared
 * with the Worker). Start: `node src/server.ts` (Node 24 strips the types).
 */
import { createHash, timingSafeEqual } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { ConfigError, loadConfig, log, type Config } from "./config.ts";
import { ffmpegVersion } from "./ffmpeg.ts";
import { fullProbe } from "./probe.ts";
import { JobRunner, missingFonts } from "./job-runner.ts";
import {
  IngestRequestSchema,
  JOB_ID,
  parseJobRequest,
  type Capabilities,
  type JobKind,
} from "@media-credits/wire/protocol";
import { ingestUrl } from "./ingest.ts";
import { createSpeechRuntime, loadSpeechConfig, speechCapabilities, speechKinds } from "./speech/runtime.ts";

export interface BackendServer {
  server: http.Server;
  runner: JobRunner;
  url: string;
  /** Stop listening, let jobs finish for `graceMs` (default: config), then stop them. */
  close(graceMs?: number): Promise<void>;
}

class HttpError extends Error {
  status: number;
  code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
    "cache-control": "no-store",
  });
  res.end(text);
}

function sha256(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}

/** Constant-time check of `Authorization: Bearer <secret>` (hashes make the lengths equal). */
export function isAuthorized(header: string | undefined, secretHash: Buffer): boolean {
  const match = /^Bearer[ \t]+(\S+)\s*$/i.exec(header ?? "");
  const given = sha256(match?.[1] ?? "");
  return timingSafeEqual(given, secretHash) && match !== null;
}

async function readBody(req: http.IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) {
    throw new HttpError(413, "payload_too_large", `request body over ${limit} bytes`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new HttpError(413, "payload_too_large", `request body over ${limit} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void | Promise<void>;

/** A JSON body of at most `limit` bytes; anything else is a 400 (or the 413 of readBody). */
async function readJson(req: http.IncomingMessage, limit: number): Promise<unknown> {
  const raw = await readBody(req, limit);
  try {
    return JSON.parse(raw.toString("utf8"));
  } catch {
    throw new HttpError(400, "invalid_json", "the body is not valid JSON");
  }
}

interface RouterContext {
  config: Config;
  speech: Awaited<ReturnType<typeof createSpeechRuntime>>;
  kinds: JobKind[];
  runner: JobRunner;
  version: string;
  secretHash: Buffer;
}

/** The backend's HTTP routes: a table of paths, then the job path; every error is an HttpError. */
function router({
  config,
  speech,
  kinds,
  runner,
  version,
  secretHash,
}: RouterContext): (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void> {
  /** One row per path: the methods it answers (the first names the 405's hint) and its handler. */
  const routes: Record<string, { methods: string[]; allow: string; open?: boolean; handle: Handler }> = {
    "/v1/health": {
      methods: ["GET", "HEAD"],
      allow: "use GET",
      open: true,
      handle: (_req, res) => sendJson(res, 200, { ok: true }),
    },
    "/v1/capabilities": {
      methods: ["GET"],
      allow: "use GET",
      handle: (_req, res) => {
        const { engines, ...speechFields } = speechCapabilities(speech);
        const capabilities: Capabilities = {
          engines: { ffmpeg: version, ...engines },
          kinds,
          ...speechFields,
          limits: {
            maxConcurrentJobs: config.maxConcurrentJobs,
            maxRequestBytes: config.maxRequestBytes,
          },
          load: runner.stats(),
        };
        sendJson(res, 200, capabilities);
      },
    },
    "/v1/probe": {
      methods: ["POST"],
      allow: "use POST",
      handle: async (req, res) => {
        const { url } = ((await readJson(req, 64 * 1024)) ?? {}) as { url?: unknown };
        if (typeof url !== "string" || !/^https?:\/\//.test(url))
          throw new HttpError(400, "invalid_request", "url must be an http(s) URL");
        try {
          sendJson(res, 200, await fullProbe(url, config.ffmpegPath, undefined, config.ffmpegMemoryLimitBytes));
        } catch (error) {
          sendJson(res, 422, { error: "unreadable", message: error instanceof Error ? error.message : String(error) });
        }
      },
    },
    "/v1/ingest": {
      methods: ["POST"],
      allow: "use POST",
      handle: async (req, res) => {
        const parsed = IngestRequestSchema.safeParse(await readJson(req, 64 * 1024));
        if (!parsed.success)
          return sendJson(res, 400, {
            error: "invalid_request",
            message: parsed.error.issues[0]?.message ?? "invalid request",
          });
        // A Worker's request alone never opens private addresses: the backend's own setting must too.
        const outcome = await ingestUrl(
          { ...parsed.data, allowPrivate: parsed.data.allowPrivate && config.allowPrivateUrls },
          config.ingestResolve,
        );
        sendJson(
          res,
          outcome.ok ? 200 : 422,
          outcome.ok ? outcome.result : { error: outcome.error, message: outcome.message },
        );
      },
    },
    "/v1/jobs": {
      methods: ["POST"],
      allow: "use POST",
      handle: async (req, res) => {
        const parsed = parseJobRequest(await readJson(req, config.maxRequestBytes));
        if (!parsed.ok) {
          return sendJson(res, 400, { error: "invalid_request", message: parsed.message, issues: parsed.issues });
        }
        if (!kinds.includes(parsed.job.kind)) {
          const why = parsed.job.kind === "transcribe" ? speech.missing.transcription : speech.missing.tts;
          return sendJson(res, 400, {
            error: "unsupported_kind",
            message: `job kind '${parsed.job.kind}' is not available on this media backend${why ? ` (${why})` : ""}`,
          });
        }
        const missing = await missingFonts(parsed.job, config.fontsDir);
        if (missing.length > 0) {
          throw new HttpError(400, "unknown_font", `fonts not available on the backend: ${missing.join(", ")}`);
        }
        const result = runner.submit(parsed.job);
        if (result === "closing") throw new HttpError(503, "shutting_down", "the media backend is shutting down");
        sendJson(res, 202, { accepted: true });
      },
    },
  };

  /** GET a job's state, DELETE to cancel it. */
  function jobRoute(jobId: string, method: string, res: http.ServerResponse): void {
    if (method === "DELETE")
      return sendJson(res, 200, { jobId, cancelled: JOB_ID.test(jobId) && runner.cancel(jobId) });
    if (method !== "GET") throw new HttpError(405, "method_not_allowed", "use GET or DELETE");
    const status = JOB_ID.test(jobId) ? runner.status(jobId) : undefined;
    if (!status) throw new HttpError(404, "not_found", "unknown job");
    sendJson(res, 200, status);
  }

  async function route(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const { pathname } = new URL(req.url ?? "/", "http://backend");
    const method = req.method ?? "GET";
    const row = Object.hasOwn(routes, pathname) ? routes[pathname] : undefined;
    // Only the health check answers without the bearer token.
    if (!row?.open && !isAuthorized(req.headers.authorization, secretHash)) {
      throw new HttpError(401, "unauthorized", "missing or invalid bearer token");
    }
    if (row) {
      if (!row.methods.includes(method)) throw new HttpError(405, "method_not_allowed", row.allow);
      return await row.handle(req, res);
    }
    const jobMatch = /^\/v1\/jobs\/([^/]+)$/.exec(pathname);
    if (jobMatch) return jobRoute(decodeURIComponent(jobMatch[1]!), method, res);
    throw new HttpError(404, "not_found", "no such route");
  }

  return route;
}

export async function startServer(config: Config): Promise<BackendServer> {
  const version = await ffmpegVersion(config.ffmpegPath);
  const childEnv = { ...process.env };
  delete childEnv.BACKEND_SECRET;
  delete childEnv.OPENAI_AUDIO_API_KEY;
  const speech = await createSpeechRuntime(config.speech ?? loadSpeechConfig(), config.ffmpegPath, childEnv);
  const kinds: JobKind[] = ["ffmpeg", ...speechKinds(speech)];
  const runner = new JobRunner({
    secret: config.secret,
    ffmpegPath: config.ffmpegPath,
    fontsDir: config.fontsDir,
    maxConcurrentJobs: config.maxConcurrentJobs,
    speech,
    faults: config.faults,
    ffmpegMemoryLimitBytes: config.ffmpegMemoryLimitBytes,
    ffmpegThreads: config.ffmpegThreads,
  });
  const secretHash = sha256(config.secret);

  const route = router({ config, speech, kinds, runner, version, secretHash });

  const server = http.createServer((req, res) => {
    route(req, res).catch((err: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (err instanceof HttpError) {
        // Discard the rest of an oversized body so that the client gets to read the answer.
        if (err.status === 413) req.resume();
        sendJson(res, err.status, { error: err.code, message: err.message });
      } else {
        log("http_error", { error: err instanceof Error ? err.message : String(err) });
        sendJson(res, 500, { error: "internal", message: "internal error" });
      }
    });
  });
  server.requestTimeout = 60_000;
  server.headersTimeout = 30_000;

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.port, config.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;
  log("listening", {
    url,
    port: address.port,
    ffmpeg: version,
    maxConcurrentJobs: config.maxConcurrentJobs,
    fontsDir: config.fontsDir,
    kinds,
    speech: speech.missing,
  });

  return {
    server,
    runner,
    url,
    async close(graceMs = config.shutdownGraceMs) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await runner.shutdown(graceMs);
      server.closeAllConnections();
      await closed;
    },
  };
}

async function main(): Promise<void> {
  // A closed stdout (a pipe whose reader left) must not bring the jobs down with it.
  process.stdout.on("error", () => {});
  let config: Config;
  try {
    config = loadConfig();
    config.speech = loadSpeechConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`media-backend: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  let backend: BackendServer;
  try {
    backend = await startServer(config);
  } catch (err) {
    process.stderr.write(`media-backend: cannot start: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log("shutdown", { signal, ...backend.runner.stats(), graceMs: config.shutdownGraceMs });
    backend.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  // Node as PID 1 in a container ignores SIGTERM unless handled.
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}

if (import.meta.main) await main();
