/**
 * The bytes of the shipped subtitle fonts (src/media/fonts.ts). They are static assets of the
 * media Worker (`assets` in wrangler.media.jsonc, binding FONTS), not bundled modules: assets
 * do not count toward a Worker's size, and ffmpeg.wasm alone takes most of that budget. The
 * files are generated into assets/fonts by scripts/build-fonts.mjs (npm postinstall); wrangler
 * uploads them with the Worker.
 */
import { drawtextFonts, fontFiles, scriptFaces, subtitleFonts } from "../media/fonts";

const shippedFiles = new Set([
  ...Object.values(subtitleFonts).flatMap(fontFiles),
  ...Object.values(scriptFaces).map((face) => face.file),
  ...drawtextFonts,
]);

/** A fresh copy of a shipped font file's bytes (ffmpeg's MEMFS keeps and may modify what it is given). */
export async function loadFont(fonts: Fetcher | undefined, file: string): Promise<Uint8Array> {
  if (!shippedFiles.has(file)) throw new TypeError(`unknown font file: ${JSON.stringify(file)}`);
  if (!fonts) throw new Error("the FONTS assets binding is missing (wrangler.media.jsonc)");
  const response = await fonts.fetch(`https://fonts.assets/${file}`);
  if (!response.ok) throw new Error(`font ${file} is not among the media Worker's assets (HTTP ${response.status})`);
  return new Uint8Array(await response.arrayBuffer());
}
