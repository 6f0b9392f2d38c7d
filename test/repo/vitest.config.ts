import { defineConfig } from "vitest/config";

// Checks of the repository itself (no Worker, no server): plain Node, a few seconds.
export default defineConfig({
  test: {
    name: "repo",
    root: new URL("../..", import.meta.url).pathname,
    environment: "node",
    include: ["test/repo/**/*.test.ts"],
  },
});
