/// <reference path="./modules.d.ts" />
/**
 * Loads @ffmpeg/core (single-thread FFmpeg compiled to wasm) inside workerd.
 *
 * The `@ffmpeg/ffmpeg` wrapper needs a Web Worker, which workerd lacks, so we drive the
 * Emscripten factory directly. The wasm is imported by relative path into node_modules:
 * the package's `@ffmpeg/core/wasm` export has no loader, while a relative `.wasm` path
 * matches wrangler's CompiledWasm rule, so the 32 MB binary is compiled once per isolate
 * and never copied into the repository. See wasm/README.md for provenance.
 */
import createFFmpegCore, { type FFmpegCoreModule } from "@ffmpeg/core";

export type { FFmpegCoreModule };

/** Placeholder base URL: the core only uses it to build the wasm URL, which we never fetch. */
const FAKE_SCRIPT_URL = "https://ffmpeg-core.invalid/";

/**
 * The core is built for a Web Worker environment and reads `self.location.href` while it
 * starts, even though `instantiateWasm` makes it skip the fetch that URL would serve.
 */
function ensureLocation(): void {
  const scope = globalThis as { location?: { href: string } };
  if (scope.location === undefined) scope.location = { href: FAKE_SCRIPT_URL };
}

let compiledWasm: Promise<WebAssembly.Module> | undefined;

/**
 * The wasm is imported on first use rather than statically: modules that merely reference
 * this file (the Worker entry, through the Durable Object) then do not load 32 MB. Under
 * @cloudflare/vitest-plugin that load costs 15-20 s per test file, because the plugin ships
 * the module to workerd as a JSON array of bytes.
 */
function loadWasm(): Promise<WebAssembly.Module> {
  compiledWasm ??= import("../node_modules/@ffmpeg/core/dist/esm/ffmpeg-core.wasm").then(
    (module) => module.default,
    (error: unknown) => {
      compiledWasm = undefined;
      throw error;
    },
  );
  return compiledWasm;
}

/** A fresh FFmpeg instance with its own wasm memory and MEMFS. */
export async function createFfmpegCore(): Promise<FFmpegCoreModule> {
  const ffmpegCoreWasm = await loadWasm();
  ensureLocation();
  return createFFmpegCore({
    // Instantiating synchronously from the precompiled module keeps failures on the
    // factory's promise: Emscripten rejects it when this callback throws.
    instantiateWasm(imports, receiveInstance) {
      return receiveInstance(new WebAssembly.Instance(ffmpegCoreWasm, imports));
    },
  });
}
