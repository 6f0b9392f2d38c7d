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
  };
}

/** One JSON line per event on stdout. Never pass secrets or URLs (signed URLs are credentials). */
export function log(event: string, fields: Record<string, unknown> = {}): void {
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), event, ...fields })}\n`);
}
