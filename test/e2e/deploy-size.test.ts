/**
 * What `wrangler deploy` would upload, per Worker: each stays under the platform's size limits
 * (10 MiB gzipped, the Workers Paid limit wrangler used to enforce; 64 MiB uncompressed, the one
 * it checks now), and ffmpeg.wasm ships with the media Worker only.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");
const wranglerJs = path.join(root, "node_modules/wrangler/bin/wrangler.js");
const MiB = 1024 * 1024;
const outDirs: string[] = [];

function dryRun(config: string) {
  const outdir = mkdtempSync(path.join(tmpdir(), "dry-run-"));
  outDirs.push(outdir);
  const run = spawnSync(process.execPath, [wranglerJs, "deploy", "--dry-run", "-c", config, "--outdir", outdir], {
    cwd: root,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true" },
    encoding: "utf8",
  });
  expect(run.status, run.stderr).toBe(0);
  const match = /Total Upload: ([\d.]+) KiB \/ gzip: ([\d.]+) KiB/.exec(run.stdout);
  expect(match, run.stdout).not.toBeNull();
  const files = readdirSync(outdir);
  const scriptBytes = files
    .filter((file) => file.endsWith(".js"))
    .reduce((sum, file) => sum + statSync(path.join(outdir, file)).size, 0);
  return { bytes: Number(match![1]) * 1024, gzipBytes: Number(match![2]) * 1024, scriptBytes, files, log: run.stdout };
}

afterAll(() => {
  for (const dir of outDirs) rmSync(dir, { recursive: true, force: true });
});

describe("deployable Workers", () => {
  it("the API Worker is small and carries no wasm", () => {
    const api = dryRun("wrangler.toml");
    console.log(`API Worker: ${(api.bytes / 1024).toFixed(0)} KiB, gzip ${(api.gzipBytes / 1024).toFixed(0)} KiB`);
    expect(api.files.some((file) => file.endsWith(".wasm"))).toBe(false);
    expect(api.gzipBytes).toBeLessThan(10 * MiB);
    expect(api.bytes).toBeLessThan(64 * MiB);
  });

  it("the media Worker carries ffmpeg.wasm within the limits, its fonts as assets", () => {
    const media = dryRun("wrangler.media.jsonc");
    console.log(
      `media Worker: ${(media.bytes / 1024).toFixed(0)} KiB, gzip ${(media.gzipBytes / 1024).toFixed(0)} KiB, script ${(media.scriptBytes / 1024).toFixed(0)} KiB`,
    );
    expect(media.files.some((file) => file.endsWith(".wasm"))).toBe(true);
    expect(media.files.some((file) => file.endsWith(".ttf"))).toBe(false);
    expect(media.log).toMatch(/env\.FONTS\s+Assets/);
    expect(media.gzipBytes).toBeLessThan(10 * MiB);
    // ffmpeg.wasm leaves about 200 KiB of the 10 MiB: the script must stay lean (importing zod's
    // `z` object instead of the namespace brought every zod locale back, 766 KB in all).
    expect(media.scriptBytes).toBeLessThan(512 * 1024);
    expect(media.bytes).toBeLessThan(64 * MiB);
  });
});
