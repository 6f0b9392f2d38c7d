/**
 * Gives zod schemas their `.openapi()` metadata method without naming zod's `z` object: modules
 * the media Worker bundles too import zod as a namespace (`import * as z from "zod"`) and this module
 * for its effect, which keeps the rest of zod (its locales) out of that Worker.
 * Why, with the sizes: docs/decisions/0001-two-workers.md.
 */
import { extendZodWithOpenApi } from "@asteasolutions/zod-to-openapi";
import { ZodType } from "zod";

// The extension patches `ZodType.prototype` only; @hono/zod-openapi's own call, in the API
// Worker, then finds it done and returns.
extendZodWithOpenApi({ ZodType } as unknown as Parameters<typeof extendZodWithOpenApi>[0]);
