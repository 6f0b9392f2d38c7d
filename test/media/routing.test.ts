import { describe, expect, it } from "vitest";
import type { Env } from "../../src/env";
import { chooseEngine as chooseWithConfig } from "../../src/media/routing";
import { routingConfig } from "../../src/services/job-stages";
import type { MediaCommand, MediaInput } from "../../src/media/tools/command";

const MiB = 1024 * 1024;
const env = (vars: Partial<Env> = {}) => vars as Env;
/** Through the Worker's settings, as the job runner reads them. */
const chooseEngine = (settings: Env, ...rest: Parameters<typeof chooseWithConfig> extends [unknown, ...infer R] ? R : never) =>
  chooseWithConfig(routingConfig(settings), ...rest);
const command = (wasmHeapBytes: number, wasmCapable = true): MediaCommand => ({
  args: [], files: {}, fonts: [], outputName: "out.mp4", resultFilename: "r.mp4", contentType: "video/mp4", wasmCapable, wasmHeapBytes,
});
const input = (sizeBytes: number, seconds: number, width = 1280, height = 720): MediaInput => ({
  name: "in0.mp4", filename: "a.mp4", sizeBytes,
  probe: { kind: "video", container: "mp4", mimeType: "video/mp4", durationMs: seconds * 1000, hasAudio: true, hasVideo: true, width, height },
});

describe("engine routing", () => {
  it("keeps a small copy or audio job in the Worker", () => {
    expect(chooseEngine(env(), command(32 * MiB), [input(20 * MiB, 60)], true).engine).toBe("wasm");
  });

  it("sends inputs whose memory would not fit 128 MB to the backend", () => {
    const decision = chooseEngine(env(), command(32 * MiB), [input(60 * MiB, 60)], true);
    expect(decision.engine).toBe("backend");
    expect(decision.reason).toMatch(/memory/);
  });

  it("sends long re-encodes to the backend by estimated CPU time, short ones stay", () => {
    expect(chooseEngine(env(), command(55 * MiB), [input(5 * MiB, 30)], true).engine).toBe("backend");
    expect(chooseEngine(env(), command(55 * MiB), [input(2 * MiB, 10, 320, 240)], true).engine).toBe("wasm");
  });

  it("sends settings ffmpeg.wasm cannot run to the backend", () => {
    expect(chooseEngine(env(), command(32 * MiB, false), [input(1 * MiB, 2)], true).engine).toBe("backend");
  });

  it("follows configured thresholds and the forcing switch", () => {
    const small = [input(1 * MiB, 2, 320, 240)];
    expect(chooseEngine(env({ WASM_MEMORY_BUDGET_BYTES: String(48 * MiB) }), command(55 * MiB), small, true).engine).toBe("backend");
    expect(chooseEngine(env({ WASM_MEMORY_BUDGET_BYTES: String(48 * MiB) }), command(32 * MiB), small, true).engine).toBe("wasm");
    expect(chooseEngine(env({ WASM_MAX_CPU_SECONDS: "0.01" }), command(32 * MiB), small, true).engine).toBe("backend");
    expect(chooseEngine(env({ MEDIA_ENGINE: "backend" }), command(32 * MiB), small, true).engine).toBe("backend");
    expect(chooseEngine(env({ MEDIA_ENGINE: "wasm" }), command(55 * MiB), [input(500 * MiB, 600)], true).engine).toBe("wasm");
  });
});
