/**
 * Module shapes the Worker bundler gives us but TypeScript cannot infer: wrangler's
 * CompiledWasm rule (wrangler.toml) turns a `.wasm` import into a compiled module, and
 * `@ffmpeg/core` ships no typings.
 */
declare module "*.wasm" {
  const module: WebAssembly.Module;
  export default module;
}

declare module "@ffmpeg/core" {
  /** The subset of the Emscripten module object of @ffmpeg/core 0.12 that we use. */
  export interface FFmpegCoreModule {
    FS: {
      /** With `canOwn`, MEMFS keeps `data` itself instead of a copy. */
      writeFile(path: string, data: Uint8Array, options?: { canOwn?: boolean }): void;
      readFile(path: string): Uint8Array;
      mkdir(path: string): void;
      chdir(path: string): void;
    };
    HEAPU8: Uint8Array;
    /** Runs ffmpeg with `-nostdin -y` prepended; returns the exit code. */
    exec(...args: string[]): number;
    setLogger(logger: (entry: { type: "stdout" | "stderr"; message: string }) => void): void;
  }

  export interface FFmpegCoreOptions {
    instantiateWasm(
      imports: WebAssembly.Imports,
      receiveInstance: (instance: WebAssembly.Instance) => unknown,
    ): unknown;
  }

  const createFFmpegCore: (options: FFmpegCoreOptions) => Promise<FFmpegCoreModule>;
  export default createFFmpegCore;
}
