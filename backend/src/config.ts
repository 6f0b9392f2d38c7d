/**
 * Configuration from the environment. Everything has a default except BACKEND_SECRET, without
 * which the backend refuses to start (it authenticates the Worker and signs callbacks).
 */
import os from "node:os";
import path from "node:path";
import type { SpeechConfig } from "./speech/runtime.ts";

export interface Config {
  port: number;
  host: string;
  secret: string;
  ffmpegPath: string;
  fontsDir: string;
  maxConcurrentJobs: number;
  /** Largest accepted request body (JSON with base64 `files`). */
  maxRequestBytes: number;
  /** On SIGTERM/SIGINT: how long running and queued jobs may go on before they are stopped. */
  shutdownGraceMs: number;
  /** Speech engines (TRANSCRIBE_ENGINE, TTS_ENGINE, ...): loadSpeechConfig in speech/runtime.ts. */
  speech?: SpeechConfig;
  /** Fault injection for the soak campaign (bench/soak.ts); all off unless set. */
  faults: Faults;
  /**
   * FFMPEG_MEMORY_LIMIT_BYTES: address space each ffmpeg process may reserve (default 3 GiB; 0
   * turns it off). Reserved, not resident: thread stacks and malloc arenas count, so the default
   * leaves room for a 4K x264 encode with its threads capped (FFMPEG_THREADS; measured 1.3-1.5 GiB).
   */
  ffmpegMemoryLimitBytes: number;
  /**
   * FFMPEG_THREADS: threads each decoder, filter graph and encoder of one ffmpeg may start
   * (default 1.5 per CPU, at most 8: ffmpeg's own choice on small hosts, bounded on large ones,
   * where more threads hold more frames than the memory limit allows; ffmpeg.ts threadCapped).
   */
  ffmpegThreads: number;
  /**
   * ALLOW_PRIVATE_URLS=true (local development only): URL uploads may reach loopback and private
   * addresses when the Worker asks. Both sides must say so; a production backend never does.
   */
  allowPrivateUrls: boolean;
  /** The resolver of URL ingestion (url-ingest.ts); the system's unless a test gives one. */
  ingestResolve?: import("./url-ingest.ts").Resolve;
}

/** Probabilities per job (0 to 1) of the faults the soak campaign injects, and the delay of a slow job. */
export interface Faults {
  /** FAULT_SLOW_RATE: the job waits FAULT_SLOW_MS before it starts, to run past the Worker's deadline. */
  slowRate: number;
  slowMs: number;
  /** FAULT_CALLBACK_DROP_RATE: the callback is never sent. */
  callbackDropRate: number;
  /** FAULT_CALLBACK_DUPLICATE_RATE: the callback is sent twice. */
  callbackDuplicateRate: number;
}

function rate(env: NodeJS.ProcessEnv, name: string): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") return 0;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0 || value > 1)
    throw new ConfigError(`${name} must be a number between 0 and 1 (got "${raw}")`);
  return value;
}

export class ConfigError extends Error {}

/** backend/ (this file is backend/src/config.ts). */
const BACKEND_DIR = path.resolve(import.meta.dirname, "..");

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer between ${min} and ${max} (got "${raw}")`);
  }
  return value;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const secret = env.BACKEND_SECRET ?? "";
  if (secret.trim() === "") {
    throw new ConfigError("BACKEND_SECRET is required (the same value as the Worker's BACKEND_SECRET secret)");
  }
  const cpus = Math.max(1, os.availableParallelism());
  return {
    port: integer(env, "PORT", 8788, 0, 65535),
    host: env.HOST?.trim() || "127.0.0.1",
    secret,
    ffmpegPath: env.FFMPEG_PATH?.trim() || "ffmpeg",
    fontsDir: path.resolve(BACKEND_DIR, env.FONTS_DIR?.trim() || "../assets/fonts"),
    maxConcurrentJobs: integer(env, "MAX_CONCURRENT_JOBS", cpus, 1, 1024),
    maxRequestBytes: integer(env, "MAX_REQUEST_BYTES", 16 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    shutdownGraceMs: integer(env, "SHUTDOWN_GRACE_MS", 10_000, 0, 24 * 3600 * 1000),
    ffmpegMemoryLimitBytes: integer(env, "FFMPEG_MEMORY_LIMIT_BYTES", 3 * 1024 ** 3, 0, 2 ** 48),
    ffmpegThreads: integer(env, "FFMPEG_THREADS", Math.min(8, Math.ceil(cpus * 1.5)), 1, 64),
    allowPrivateUrls: env.ALLOW_PRIVATE_URLS === "true",
    faults: {
      slowRate: rate(env, "FAULT_SLOW_RATE"),
      slowMs: integer(env, "FAULT_SLOW_MS", 60_000, 0, 3600 * 1000),
      callbackDropRate: rate(env, "FAULT_CALLBACK_DROP_RATE"),
      callbackDuplicateRate: rate(env, "FAULT_CALLBACK_DUPLICATE_RATE"),
    },
  };
}

/** One JSON line per event on stdout. Never pass secrets or URLs (signed URLs are credentials). */
export function log(event: string, fields: Record<string, unknown> = {}): void {
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), event, ...fields })}\n`);
}
