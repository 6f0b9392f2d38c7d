/**
 * The part of the WebAssembly API the backend uses (RNNoise, packages/wire/src/rnnoise.ts). Node
 * has all of it at run time, but @types/node 24.19 declares none of it (lib.dom does, which this
 * Node-only project does not load).
 */
declare namespace WebAssembly {
  interface Memory {
    readonly buffer: ArrayBuffer;
    grow(delta: number): number;
  }
  class Module {
    constructor(bytes: ArrayBufferView | ArrayBuffer);
  }
  class Instance {
    constructor(module: Module, imports?: Record<string, Record<string, unknown>>);
    readonly exports: Record<string, unknown>;
  }
}
