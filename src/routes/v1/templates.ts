/**
 * Pipeline templates over REST (free: saving, listing and deleting spend nothing): steps saved
 * under a name, run later by POST /api/v1/pipelines with templateId and variables. Created with
 * 200, as every other resource of the API (brands, posts, uploads): one success status to handle.
 */
import { createRoute } from "@hono/zod-openapi";
import {
  MAX_PIPELINE_STEPS,
  TemplateListSchema,
  TemplateRequestSchema,
  TemplateSchema,
} from "../../contract/pipelines";
import { TemplateDeletedSchema, TemplateRef } from "../../contract/templates";
import { pickErrors } from "../../errors";
import { createRouter } from "../../http";
import { jsonContent } from "../../lib/openapi";
import { accountLimits } from "../../services/accounts/limits";
import { createTemplate, deleteTemplate, getTemplate, listTemplates } from "../../services/media-jobs/templates";

const tags = ["Templates"];
const security = [{ ApiKey: [] }];

const createTemplateRoute = createRoute({
  method: "post",
  path: "/templates",
  operationId: "createTemplate",
  tags,
  security,
  summary: "Save a pipeline's steps under a name, with {{name}} variables",
  description: `The steps are a pipeline's (POST /api/v1/pipelines): 1 to ${MAX_PIPELINE_STEPS} tools in order, each reading the previous result. Any text in a step's params may hold placeholders, {{name}} (a letter, then letters, digits or _; up to 40 characters): a parameter that is exactly "{{start}}" takes the value given at run time as it is (a number stays a number), {{brand}} inside a longer text is replaced by its text. The template lists its variables in order of appearance. Saving checks the shape only (known tools, 1 to ${MAX_PIPELINE_STEPS} steps); each step's parameters are checked, and priced, when the template runs with its variables (POST /api/v1/pipelines or /api/v1/quotes with templateId, variables and uploadId), where a missing or unknown variable answers 400 before any debit. An account keeps at most ${accountLimits.templates} templates, shared by its live and test keys and its connected assistants. Free.`,
  request: { body: { required: true, content: { "application/json": { schema: TemplateRequestSchema } } } },
  responses: { 200: jsonContent(TemplateSchema, "The saved template"), ...pickErrors(400, 401) },
});

const listTemplatesRoute = createRoute({
  method: "get",
  path: "/templates",
  operationId: "listTemplates",
  tags,
  security,
  summary: "The account's templates, newest first",
  description: "Each with its steps as saved (placeholders included) and the {{name}} variables a run must give.",
  responses: { 200: jsonContent(TemplateListSchema, "Templates"), ...pickErrors(401) },
});

const getTemplateRoute = createRoute({
  method: "get",
  path: "/templates/{templateId}",
  operationId: "getTemplate",
  tags,
  security,
  summary: "A template, with the variables a run must give",
  description: "Another account's template answers 404, as an unknown one.",
  request: { params: TemplateRef },
  responses: { 200: jsonContent(TemplateSchema, "Template"), ...pickErrors(400, 401, 404) },
});

const deleteTemplateRoute = createRoute({
  method: "delete",
  path: "/templates/{templateId}",
  operationId: "deleteTemplate",
  tags,
  security,
  summary: "Delete a template",
  description:
    "Jobs already started from it are not affected (a pipeline job keeps its own steps). Another account's template answers 404, as an unknown one.",
  request: { params: TemplateRef },
  responses: { 200: jsonContent(TemplateDeletedSchema, "Deleted"), ...pickErrors(400, 401, 404) },
});

export const templateRoutes = createRouter()
  .openapi(createTemplateRoute, async (c) =>
    c.json(await createTemplate(c.env.DB, c.get("caller").accountId, c.req.valid("json"), Date.now()), 200),
  )
  .openapi(listTemplatesRoute, async (c) =>
    c.json({ templates: await listTemplates(c.env.DB, c.get("caller").accountId) }, 200),
  )
  .openapi(getTemplateRoute, async (c) =>
    c.json(await getTemplate(c.env.DB, c.get("caller").accountId, c.req.valid("param").templateId), 200),
  )
  .openapi(deleteTemplateRoute, async (c) => {
    const { templateId } = c.req.valid("param");
    await deleteTemplate(c.env.DB, c.get("caller").accountId, templateId);
    return c.json({ templateId, deleted: true as const }, 200);
  });
