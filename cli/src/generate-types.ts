/**
 * Regenerates src/api-types.ts from the API's OpenAPI document:
 *   node src/generate-types.ts [url-or-file]   (default $MEDIA_CREDITS_BASE_URL/api/v1/openapi.json)
 * The e2e suite checks that the committed file equals what this produces from the running API.
 */
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { DEFAULT_BASE_URL } from "./config.ts";
import { renderTypes } from "./types-source.ts";

const source = process.argv[2] ?? `${process.env.MEDIA_CREDITS_BASE_URL ?? DEFAULT_BASE_URL}/api/v1/openapi.json`;
const document = /^https?:/.test(source)
  ? await (await fetch(source)).json()
  : JSON.parse(await readFile(source, "utf8"));
const target = path.join(import.meta.dirname, "api-types.ts");
await writeFile(target, await renderTypes(document));
console.log(`wrote ${target} from ${source}`);
