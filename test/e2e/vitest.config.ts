import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    name: "e2e",
    root: new URL("../..", import.meta.url).pathname,
    environment: "node",
    include: ["test/e2e/**/*.test.ts"],
    globalSetup: ["./test/e2e/setup.ts"],
    testTimeout: 120_000,
    hookTimeout: 180_000,
    // One wrangler dev pair serves every file; files run one after another on 2 cores.
    fileParallelism: false,
  },
});
