import { defineConfig } from "vitest/config";

// Four suites: inside workerd (two projects: routes and services in one shared workerd, files that
// run ffmpeg.wasm in one each; vitest.workers.config.ts), end to end against `wrangler dev` plus
// the container backend as real processes, the backend's own tests, and checks of the repository
// itself (test/repo/: every path cited in docs and comments exists).
export default defineConfig({
  test: {
    projects: [
      "./vitest.workers.config.ts",
      "./vitest.workers-media.config.ts",
      "./test/e2e/vitest.config.ts",
      "./backend/vitest.config.ts",
      "./test/repo/vitest.config.ts",
    ],
  },
});
