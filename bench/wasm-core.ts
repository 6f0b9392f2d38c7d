/**
 * ffmpeg.wasm (@ffmpeg/core 0.12.10, the binary the Worker runs) driven from Node, the way
 * wasm/ffmpeg-core.ts drives it in workerd: the same factory, a precompiled module handed to
 * `instantiateWasm`, a fake `location`. Node has no wrangler CompiledWasm rule, so the module
 * is compiled here from the file with WebAssembly.compile; and the core, built for a Web
 * Worker, reads `self.location.href`, so `self` must exist too (workerd defines it).
 *
 * runWasm() mirrors src/media-worker/ffmpeg-wasm.ts runFfmpegWasm (which cannot be imported in Node:
 * its loader imports the .wasm as a module): fresh core per run, files written into /job with
 * `canOwn`, one exec, heap size read after the run (the heap never shrinks: it is the peak).
 */
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import type { FFmpegCoreModule } from "@ffmpeg/core";
import createFFmpegCore from "@ffmpeg/core";

/** The file wasm/ffmpeg-core.ts imports, by the same relative path from the repository root. */
export const WASM_PATH = fileURLToPath(
  new URL("../node_modules/@ffmpeg/core/dist/esm/ffmpeg-core.wasm", import.meta.url),
);

/** The module type the Worker uses (wasm/modules.d.ts). */
type Core = FFmpegCoreModule;

let compiled: Promise<WebAssembly.Module> | undefined;

/** Compiles the 32 MB module once (workerd does it once per isolate). */
export function compileWasm(): Promise<WebAssembly.Module> {
  compiled ??= readFile(WASM_PATH).then((bytes) => WebAssembly.compile(bytes));
  return compiled;
}

function ensureWorkerGlobals(): void {
  const scope = globalThis as { self?: unknown; location?: { href: string } };
  if (scope.self === undefined) scope.self = globalThis;
  if (scope.location === undefined) scope.location = { href: "https://ffmpeg-core.invalid/" };
}

export async function createCore(): Promise<Core> {
  const module = await compileWasm();
  ensureWorkerGlobals();
  const factory = createFFmpegCore as unknown as (options: object) => Promise<Core>;
  return factory({
    instantiateWasm(imports: WebAssembly.Imports, receiveInstance: (instance: WebAssembly.Instance) => unknown) {
      return receiveInstance(new WebAssembly.Instance(module, imports));
    },
  });
}

export interface WasmRun {
  /** Core creation + file writes + exec + output read, seconds. */
  seconds: number;
  /** exec alone, seconds. */
  execSeconds: number;
  exitCode: number;
  /** HEAPU8.byteLength after the run. */
  heapBytes: number;
  /** process RSS after the run (core still alive) minus before the core was created. */
  rssDeltaBytes: number;
  output?: Uint8Array;
  logTail: string;
}

export async function runWasm(args: string[], files: Record<string, Uint8Array>, outputName: string): Promise<WasmRun> {
  const rssBefore = process.memoryUsage.rss();
  const start = performance.now();
  const core = await createCore();
  const lines: string[] = [];
  core.setLogger((entry) => {
    if (entry.message === "Aborted()") return;
    lines.push(entry.message);
    if (lines.length > 400) lines.splice(0, lines.length - 400);
  });
  core.FS.mkdir("/job");
  core.FS.chdir("/job");
  // Copies, because canOwn hands the array to MEMFS and the same inputs are reused per run.
  const dirs = new Set(
    Object.keys(files)
      .filter((name) => name.includes("/"))
      .map((name) => name.slice(0, name.lastIndexOf("/"))),
  );
  for (const dir of dirs) core.FS.mkdir(dir); // fonts/ (one level, as src/media-worker/ffmpeg-wasm.ts)
  for (const [name, data] of Object.entries(files)) core.FS.writeFile(name, data.slice(), { canOwn: true });
  const execStart = performance.now();
  let exitCode: number;
  try {
    exitCode = core.exec(...args);
  } catch (error) {
    lines.push(`wasm trap: ${error instanceof Error ? error.message : String(error)}`);
    exitCode = -1;
  }
  const execSeconds = (performance.now() - execStart) / 1000;
  const heapBytes = core.HEAPU8.byteLength;
  let output: Uint8Array | undefined;
  try {
    output = core.FS.readFile(outputName).slice();
  } catch {
    output = undefined;
  }
  const seconds = (performance.now() - start) / 1000;
  const rssDeltaBytes = process.memoryUsage.rss() - rssBefore;
  const logTail = lines
    .filter((line) => !/^\s*(size|frame)=.*speed=/.test(line))
    .slice(-8)
    .join("\n");
  return { seconds, execSeconds, exitCode, heapBytes, rssDeltaBytes, output, logTail };
}
