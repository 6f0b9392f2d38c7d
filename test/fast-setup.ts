/**
 * `npm run test:fast` runs its files in one shared workerd isolate (vitest.workers.config.ts).
 * The ffmpeg.wasm loader (wasm/ffmpeg-core.ts), which some of these files still reach, leaves a
 * placeholder `globalThis.location` with an `href` only; in a later file it makes the MCP client's
 * JSON Schema validator throw at import ("Invalid URL string"). Every file starts without it: the
 * loader sets it again before any core it creates.
 */
const scope = globalThis as { location?: { href?: string } };
if (scope.location?.href === "https://ffmpeg-core.invalid/") delete scope.location;
