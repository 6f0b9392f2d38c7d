/**
 * `wrangler dev` gives `--var`, `--env-file` and `.dev.vars` of a folder to the first Worker
 * of a multi-config session only, so local tooling writes a copy of wrangler.media.jsonc with
 * the settings the media Worker needs (backend address, engine, secrets) as plain vars, and
 * passes it as the second `-c`. The copy lives in a state folder (mode 0600, never committed).
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");

interface MediaWorkerConfig {
  main: string;
  vars?: Record<string, string>;
  assets?: { directory: string; binding?: string };
  d1_databases?: { migrations_dir?: string }[];
}

export function readMediaWorkerConfig(): MediaWorkerConfig {
  const text = readFileSync(path.join(root, "wrangler.media.jsonc"), "utf8");
  return JSON.parse(text.split("\n").filter((line) => !/^\s*\/\//.test(line)).join("\n"));
}

/** Writes `<dir>/wrangler.media.json` with `vars` added, paths made absolute; returns its path. */
export function writeMediaWorkerConfig(dir: string, vars: Record<string, string>): string {
  const config = readMediaWorkerConfig();
  config.main = path.join(root, config.main);
  config.vars = { ...config.vars, ...vars };
  if (config.assets?.directory) config.assets.directory = path.join(root, config.assets.directory);
  for (const db of config.d1_databases ?? []) if (db.migrations_dir) db.migrations_dir = path.join(root, db.migrations_dir);
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, "wrangler.media.json");
  writeFileSync(file, JSON.stringify(config, null, 2), { mode: 0o600 });
  return file;
}
