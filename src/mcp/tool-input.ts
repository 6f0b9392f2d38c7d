/**
 * Input schemas of the ten registry tools as the connector advertises them. (Checking is the
 * registry's own zod schema plus `idempotencyKey`, in the tool's row: media-tools.ts, with REST's
 * messages, "end: must be greater than start", before anything is charged.)
 *
 * Advertising: zod's JSON Schema of that schema (input side: fields with defaults are optional)
 * plus each field's description (and integer type) from the OpenAPI metadata REST publishes (`.openapi({description})`
 * lives in zod-to-openapi's registry, which zod's own JSON Schema does not read), worded for an
 * assistant, plus the optional `idempotencyKey`.
 */
import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { StandardSchemaWithJSON } from "@modelcontextprotocol/server";
import { toolNames, tools, type ToolName } from "../tools";

export const idempotencyKeyField = z
  .string()
  .min(1)
  .max(255)
  .describe(
    "Optional. Send the same key to retry a call safely: within 24 hours the first answer is replayed and nothing is charged twice.",
  );

type JsonObject = Record<string, unknown>;

/** Wording of the REST descriptions that does not fit an assistant. */
const forAssistants = (description: string) =>
  description.replace(
    /uploadIds? returned by POST \/api\/v1\/uploads/g,
    (m) => `${m.startsWith("uploadIds") ? "uploadIds" : "uploadId"} from upload_from_url or create_upload_link`,
  );

let documented: Record<string, JsonObject> | undefined;

/** The OpenAPI 3.1 components of the tools' request schemas, built once per isolate. */
function documentedSchemas(): Record<string, JsonObject> {
  if (documented) return documented;
  const registry = new OpenAPIHono();
  for (const tool of toolNames) registry.openAPIRegistry.register(`McpInput_${tool}`, tools[tool].params);
  const doc = registry.getOpenAPI31Document({ openapi: "3.1.0", info: { title: "connector", version: "1" } });
  documented = (doc.components?.schemas ?? {}) as Record<string, JsonObject>;
  return documented;
}

function documentedProperties(tool: ToolName): Record<string, JsonObject> {
  const schemas = documentedSchemas();
  let schema: JsonObject | undefined = schemas[`McpInput_${tool}`];
  // A schema that carries its own name (`.openapi("TrimRequest")`) may be emitted as a $ref to it.
  const ref = schema?.$ref;
  if (typeof ref === "string") schema = schemas[ref.replace("#/components/schemas/", "")];
  return (schema?.properties ?? {}) as Record<string, JsonObject>;
}

const jsonSchemas = new Map<string, JsonObject>();

function describedJsonSchema(
  tool: ToolName,
  options: { target: string; libraryOptions?: Record<string, unknown> },
): JsonObject {
  const cacheKey = `${tool}\n${options.target}`;
  const cached = jsonSchemas.get(cacheKey);
  if (cached) return cached;
  const params = tools[tool].params as unknown as StandardSchemaWithJSON;
  const schema = structuredClone(params["~standard"].jsonSchema.input(options as never)) as JsonObject;
  const properties = (schema.properties ?? {}) as Record<string, JsonObject>;
  const docs = documentedProperties(tool);
  for (const [field, property] of Object.entries(properties)) {
    const description = docs[field]?.description;
    if (typeof description === "string" && property.description === undefined)
      property.description = forAssistants(description);
    // A choice of whole numbers (captionWords 1/2/4, interval 3/5/8) is typed integer in the
    // OpenAPI document; zod's own JSON Schema only knows its literals are numbers.
    if (docs[field]?.type === "integer" && property.type === "number") property.type = "integer";
    // Bounds checked by a refinement (text-to-speech counts code points) exist only in the OpenAPI document.
    if (docs[field]?.maxLength !== undefined && property.maxLength === undefined)
      property.maxLength = docs[field].maxLength;
  }
  properties.idempotencyKey = {
    ...(idempotencyKeyField["~standard"].jsonSchema.input(options as never) as JsonObject),
  };
  delete properties.idempotencyKey.$schema;
  properties.maxCredits = {
    type: "integer",
    minimum: 0,
    description:
      "Optional. The most this call may cost, in credits (the price quote gave): a call that would cost more is refused and nothing is spent.",
  };
  schema.properties = properties;
  jsonSchemas.set(cacheKey, schema);
  return schema;
}

/**
 * The MCP input schema of a registry tool as advertised: zod's JSON Schema of the tool's own
 * schema, described for assistants. Validation lets everything through: the row checks it.
 */
export function mediaToolInput(tool: ToolName): StandardSchemaWithJSON {
  return {
    "~standard": {
      version: 1,
      vendor: "zod",
      validate: (value: unknown) => ({ value }),
      jsonSchema: {
        input: (options) => describedJsonSchema(tool, options),
        output: (options) => describedJsonSchema(tool, options),
      },
    },
  };
}
