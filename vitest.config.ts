import { defineConfig } from "vitest/config";

// Three suites: inside workerd (routes, services, ffmpeg.wasm), end to end against `wrangler dev`
// plus the container backend as real processes, and the backend's own tests.
export default defineConfig({
  test: {
    projects: ["./vitest.workers.config.ts", "./test/e2e/vitest.config.ts", "./backend/vitest.config.ts"],
  },
});
