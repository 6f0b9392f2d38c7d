/**
 * Import rules, checked by `npm run lint` (and so by CI). Runtime imports only: a type import
 * vanishes when TypeScript compiles, so it neither cycles nor bundles anything.
 */
module.exports = {
  forbidden: [
    {
      name: "no-runtime-cycle",
      comment: "A cycle makes module order decide what is initialised: split the module instead.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    {
      name: "api-worker-bundles-no-media-worker-code",
      comment:
        "src/media-worker/ is bundled only by the media Worker (ffmpeg.wasm, the runner, the stages); " +
        "the API Worker reaches it through the MEDIA_RUNNER binding, never by import.",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/media-worker/" },
      to: { path: "^src/media-worker/" },
    },
    {
      name: "services-below-surfaces",
      comment: "Services serve REST, the connector, pages and queues: they never import them.",
      severity: "error",
      from: { path: "^src/services/" },
      to: { path: "^src/(routes|mcp|web|queues|app\\.ts|index\\.ts)" },
    },
    {
      name: "foundations-below-services",
      comment: "lib/ and db/ are the floor: they import nothing above them.",
      severity: "error",
      from: { path: "^src/(lib|db)/" },
      to: { path: "^src/(services|routes|mcp|web|queues|durable-objects|media-worker|backend-client)/" },
    },
  ],
  options: {
    tsConfig: { fileName: "tsconfig.json" },
    tsPreCompilationDeps: false,
    doNotFollow: { path: "node_modules" },
    exclude: { path: "node_modules" },
  },
};
