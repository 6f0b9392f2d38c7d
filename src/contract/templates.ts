/**
 * What addresses a saved template and what deleting one answers, shared by REST and the connector.
 * The template itself (TemplateRequest, Template) is declared with the pipeline's steps it saves,
 * in pipelines.ts.
 */
import { z } from "@hono/zod-openapi";

export const TemplateRef = z.object({
  templateId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: "templateId", in: "path" }, example: "tpl_01JD3Y0QZ8W1T0X7M4R2N6C9PB" }),
});

export const TemplateDeletedSchema = z
  .object({ templateId: z.string(), deleted: z.literal(true) })
  .openapi("TemplateDeleted");
