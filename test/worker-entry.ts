/**
 * The Worker under test in workerd: the API Worker with the media Worker's Durable Object in
 * the same script. In production they are two Workers (wrangler.toml, wrangler.media.toml)
 * joined by the MEDIA_RUNNER binding's script_name; the e2e suite runs them that way under
 * `wrangler dev`. Here the binding is pointed at this script (vitest.workers.config.ts).
 */
export { default, BrandScheduler } from "../src/index";
export { MediaRunner } from "../src/media-worker/index";
