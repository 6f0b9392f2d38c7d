/** The OpenAPI description of a JSON body (a response or a request), kept typed for the handlers. */
import * as z from "zod";
import "./zod-openapi";

export const jsonContent = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { "application/json": { schema } },
});

/**
 * A whole number in a query string, from `min` to `max`, written with digits only: coercion
 * alone read an empty value as 0 and took " 5" or "1e1". The type and bounds are stated for the
 * document generator, which cannot read them through the transform.
 */
export const queryInteger = (min: number, max: number) =>
  z
    .string()
    .regex(/^[0-9]+$/, "must be a whole number written with digits")
    .transform(Number)
    .pipe(z.number().int().min(min).max(max))
    .openapi({ type: "integer", minimum: min, maximum: max });
