/**
 * Connector tools as rows of a table: name, title, description, input and output schemas,
 * annotations, scope and the service call. One loop (`registerTools`) registers them.
 *
 * Input: the contract's zod schema (src/contract/), the one REST validates with. The SDK is given
 * a schema that only advertises it (its JSON Schema, with descriptions worded for assistants);
 * the row's schema checks the arguments inside the guard, so a bad call is refused as REST
 * refuses it: `invalid_request` with describeZodError's message, before anything runs.
 */
import type { McpServer, StandardSchemaWithJSON } from "@modelcontextprotocol/server";
import { getOpenApiMetadata } from "@asteasolutions/zod-to-openapi";
import type * as z from "zod";
import type { AssistantScope } from "../services/accounts/connected-apps";
import { invalidInput } from "../error-translator";
import { guarded, ok, type McpContext, type ToolResult } from "./tool-context";

export interface ToolAnnotations {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

export const readOnly = {
  readOnlyHint: true,
  idempotentHint: true,
  openWorldHint: false,
} as const satisfies ToolAnnotations;
export const writes = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: false,
  openWorldHint: false,
} as const satisfies ToolAnnotations;
export const destroys = { ...writes, destructiveHint: true } as const satisfies ToolAnnotations;

/** A result with its own text for the assistant (instead of its JSON). */
export class Worded<O> {
  constructor(
    readonly data: O,
    readonly text: string,
  ) {}
}

/** What a row's service call answers: the structured result, worded or not. */
export type Answer<O> = O | Worded<O>;

export interface ConnectorTool<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> {
  name: string;
  title: string;
  description: string;
  /** Checks the arguments (the contract's schema: REST's bounds and messages). */
  input: I;
  /** What assistants are shown of the input, when not `input` itself (the media tools' documented schemas). */
  advertised?: StandardSchemaWithJSON;
  /** Connector-only descriptions of input fields; the others show their OpenAPI description. */
  fields?: Partial<Record<string, string>>;
  output: O;
  annotations: ToolAnnotations;
  /** The grant scope the tool needs (none: every connection may call it). */
  scope?: AssistantScope;
  run(input: z.output<I>, context: McpContext): Promise<Answer<z.output<O>>>;
}

/** A row, typed: its service call receives the parsed input and returns the output schema's type. */
export const tool = <I extends z.ZodType, O extends z.ZodType>(row: ConnectorTool<I, O>): ConnectorTool =>
  row as unknown as ConnectorTool;

type JsonObject = Record<string, unknown>;
type JsonOptions = Parameters<StandardSchemaWithJSON["~standard"]["jsonSchema"]["input"]>[0];

/** The input's JSON Schema with each top-level field described (connector text, else REST's OpenAPI description). */
function describedJsonSchema(row: ConnectorTool, options: JsonOptions): JsonObject {
  const schema = structuredClone(
    (row.input as unknown as StandardSchemaWithJSON)["~standard"].jsonSchema.input(options),
  ) as JsonObject;
  const properties = (schema.properties ?? {}) as Record<string, JsonObject>;
  const shape = (row.input as unknown as { shape?: Record<string, z.ZodType> }).shape ?? {};
  for (const [field, property] of Object.entries(properties)) {
    const text =
      row.fields?.[field] ?? (shape[field] ? getOpenApiMetadata(shape[field] as never).description : undefined);
    if (typeof text === "string") property.description = text;
  }
  return schema;
}

/** The schema the SDK sees: advertises the input, lets every value through to the row's own check. */
function advertisedInput(row: ConnectorTool): StandardSchemaWithJSON {
  if (row.advertised) {
    const advertised = row.advertised["~standard"];
    return { "~standard": { ...advertised, validate: (value: unknown) => ({ value }) } };
  }
  const cache = new Map<string, JsonObject>();
  const json = (options: JsonOptions) => {
    const key = JSON.stringify(options);
    if (!cache.has(key)) cache.set(key, describedJsonSchema(row, options));
    return cache.get(key)!;
  };
  return {
    "~standard": {
      version: 1,
      vendor: "zod",
      validate: (value: unknown) => ({ value }),
      jsonSchema: { input: json, output: json },
    },
  };
}

const answered = <O>(answer: Answer<O>): ToolResult => {
  if (answer instanceof Worded) return ok(answer.data as Record<string, unknown>, answer.text);
  return ok(answer as Record<string, unknown>);
};

export function registerTools(server: McpServer, context: McpContext, rows: readonly ConnectorTool[]): void {
  for (const row of rows) {
    server.registerTool(
      row.name,
      {
        title: row.title,
        description: row.description,
        inputSchema: advertisedInput(row),
        outputSchema: row.output as unknown as StandardSchemaWithJSON,
        annotations: row.annotations,
      },
      async (args: unknown) =>
        guarded(
          context,
          async () => {
            const parsed = row.input.safeParse(args ?? {});
            if (!parsed.success) throw invalidInput(parsed.error);
            return answered(await row.run(parsed.data, context));
          },
          row.scope,
        ),
    );
  }
}
