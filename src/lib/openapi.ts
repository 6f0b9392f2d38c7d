/** The OpenAPI description of a JSON body (a response or a request), kept typed for the handlers. */
import { z } from "@hono/zod-openapi";

export const jsonContent = <T extends z.ZodType>(schema: T, description: string) => ({ description, content: { "application/json": { schema } } });

/**
 * A whole number in a query string, from `min` to `max`. The type and bounds are stated: coerce
 * turns a null into 0, which the document generator reads as "integer or null".
 */
export const queryInteger = (min: number, max: number) => z.coerce.number().int().min(min).max(max).openapi({ type: "integer", minimum: min, maximum: max });
