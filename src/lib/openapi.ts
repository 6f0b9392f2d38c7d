/** The OpenAPI description of a JSON body (a response or a request), kept typed for the handlers. */
import type { z } from "@hono/zod-openapi";

export const jsonContent = <T extends z.ZodType>(schema: T, description: string) => ({ description, content: { "application/json": { schema } } });
