import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    name: "backend",
    include: ["test/**/*.test.ts"],
    environment: "node",
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Each file starts its own backend process(es); two files at a time suit a 2-core machine.
    maxWorkers: 2,
  },
});
