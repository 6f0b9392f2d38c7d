import { workersProject } from "./vitest.workers.config.ts";

/** The workerd tests that run media through ffmpeg.wasm, each file in its own workerd (vitest.workers.config.ts). */
export default workersProject("media");
