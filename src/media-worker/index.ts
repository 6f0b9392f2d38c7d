/**
 * Entry of the media Worker (wrangler.media.jsonc): it only hosts the MediaRunner Durable
 * Object, which runs ffmpeg.wasm and drives jobs through their stages. The API Worker
 * (src/index.ts) reaches it through the `MEDIA_RUNNER` binding with `script_name`, so the
 * 32 MB wasm ships here and not with the API, and a job's CPU never competes with API calls
 * in the same isolate.
 */
import type { Env } from "../env";

export { MediaRunner } from "./media-runner";

export default {
  // Nothing is served over HTTP: jobs arrive as Durable Object RPC calls from the API Worker.
  fetch() {
    return new Response("Not found", { status: 404 });
  },
} satisfies ExportedHandler<Env>;
