import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    name: "backend",
    include: ["test/**/*.test.ts"],
    environment: "node",
    // Above the 30 s the speech tests wait for a callback, so a slow run fails with that wait's message.
    testTimeout: 120_000,
    hookTimeout: 30_000,
    // Each file starts its own backend process(es); two files at a time suit a 2-core machine.
    maxWorkers: 2,
  },
});
