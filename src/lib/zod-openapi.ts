/**
 * Gives zod schemas their `.openapi()` metadata method (@asteasolutions/zod-to-openapi, as
 * @hono/zod-openapi does) without naming zod's `z` object.
 *
 * Modules that the media Worker bundles too (the tools' schemas, the error shapes, the backend
 * protocol) import zod as a namespace, `import * as z from "zod"`, and this module for its
 * effect. Importing the `z` object instead (`import { z } from "zod"` or from
 * "@hono/zod-openapi", which passes it to `extendZodWithOpenApi`) makes esbuild keep every
 * export of zod, its 50 locales included: about 370 KB more in a Worker whose ffmpeg.wasm already
 * takes 10,025 of the 10,240 KiB a deployed Worker may weigh gzipped.
 */
import { extendZodWithOpenApi } from "@asteasolutions/zod-to-openapi";
import { ZodType } from "zod";

// The extension patches `ZodType.prototype` only; @hono/zod-openapi's own call, in the API
// Worker, then finds it done and returns.
extendZodWithOpenApi({ ZodType } as unknown as Parameters<typeof extendZodWithOpenApi>[0]);
