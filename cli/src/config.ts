/**
 * Where the CLI finds its API key and base URL: the environment first (MEDIA_CREDITS_API_KEY,
 * MEDIA_CREDITS_BASE_URL), then the config file that `media-credits login` writes
 * ($XDG_CONFIG_HOME/media-credits/config.json, mode 0600). A key is never taken from the command
 * line, where it would end up in the shell's history and the process list.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";

export const DEFAULT_BASE_URL = "http://127.0.0.1:8787";

export interface Config {
  apiKey?: string;
  baseUrl: string;
}

export function configDir(): string {
  const base = process.env.XDG_CONFIG_HOME || path.join(homedir(), ".config");
  return path.join(base, "media-credits");
}

function configFile(): string {
  return path.join(configDir(), "config.json");
}

function readFileConfig(ignoreBrokenFile: boolean): Partial<Config> {
  const file = configFile();
  if (!existsSync(file)) return {};
  try {
    return JSON.parse(readFileSync(file, "utf8")) as Partial<Config>;
  } catch {
    if (ignoreBrokenFile) return {};
    throw new Error(`${file} is not valid JSON; fix it or run media-credits login again.`);
  }
}

/** `ignoreBrokenFile`: for login, which writes the file anew. */
export function loadConfig(options: { ignoreBrokenFile?: boolean } = {}): Config {
  const stored = readFileConfig(options.ignoreBrokenFile ?? false);
  return {
    apiKey: process.env.MEDIA_CREDITS_API_KEY || stored.apiKey,
    baseUrl: (process.env.MEDIA_CREDITS_BASE_URL || stored.baseUrl || DEFAULT_BASE_URL).replace(/\/+$/, ""),
  };
}

export function saveConfig(config: Config): string {
  mkdirSync(configDir(), { recursive: true, mode: 0o700 });
  const file = configFile();
  writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return file;
}
