/**
 * The tools and their fields, read from the API's OpenAPI document at run time (public, no key):
 * the CLI turns `--field value` flags into a JSON body with each field's declared type, and lists
 * a tool's fields in `media-credits help <tool>`, without a copy of the schemas that could drift.
 */
import { readFileSync } from "node:fs";
import { UsageError } from "./usage-error.ts";

interface SchemaObject {
  type?: string | string[];
  enum?: unknown[];
  items?: SchemaObject;
  anyOf?: SchemaObject[];
  oneOf?: SchemaObject[];
  allOf?: SchemaObject[];
  properties?: Record<string, SchemaObject>;
  required?: string[];
  description?: string;
  default?: unknown;
  $ref?: string;
}

export interface ToolField {
  name: string;
  type: string;
  required: boolean;
  description?: string;
  values?: unknown[];
  defaultValue?: unknown;
}

export interface ToolInfo {
  name: string;
  summary: string;
  fields: ToolField[];
}

interface OpenApiDocument {
  paths: Record<
    string,
    Record<
      string,
      { tags?: string[]; summary?: string; requestBody?: { content?: Record<string, { schema?: SchemaObject }> } }
    >
  >;
  components?: { schemas?: Record<string, SchemaObject> };
}

export async function fetchTools(baseUrl: string): Promise<Map<string, ToolInfo>> {
  const response = await fetch(`${baseUrl}/api/v1/openapi.json`);
  if (!response.ok) throw new Error(`cannot read ${baseUrl}/api/v1/openapi.json (HTTP ${response.status})`);
  return toolsOf((await response.json()) as OpenApiDocument);
}

function resolve(document: OpenApiDocument, schema: SchemaObject | undefined): SchemaObject {
  let current = schema ?? {};
  for (let depth = 0; current.$ref && depth < 10; depth++) {
    current = document.components?.schemas?.[current.$ref.replace("#/components/schemas/", "")] ?? {};
  }
  return current;
}

function typeOf(document: OpenApiDocument, schema: SchemaObject): string {
  const resolved = resolve(document, schema);
  const types = Array.isArray(resolved.type)
    ? resolved.type.filter((t) => t !== "null")
    : resolved.type
      ? [resolved.type]
      : [];
  if (types.length > 0) return types[0]!;
  for (const option of [...(resolved.anyOf ?? []), ...(resolved.oneOf ?? []), ...(resolved.allOf ?? [])]) {
    const type = typeOf(document, option);
    if (type !== "unknown") return type;
  }
  return "unknown";
}

export function toolsOf(document: OpenApiDocument): Map<string, ToolInfo> {
  const tools = new Map<string, ToolInfo>();
  for (const [pathname, operations] of Object.entries(document.paths)) {
    const post = operations.post;
    if (!post?.tags?.includes("Tools")) continue;
    const schema = resolve(document, post.requestBody?.content?.["application/json"]?.schema);
    const required = new Set(schema.required ?? []);
    const fields = Object.entries(schema.properties ?? {}).map(([name, property]) => {
      const resolved = resolve(document, property);
      return {
        name,
        type: typeOf(document, resolved),
        required: required.has(name),
        description: resolved.description,
        values: resolved.enum ?? resolve(document, resolved.items).enum,
        defaultValue: resolved.default,
      };
    });
    const name = pathname.replace(/^\/api\/v1\//, "");
    tools.set(name, { name, summary: post.summary ?? "", fields });
  }
  return tools;
}

const kebab = (name: string) => name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);

/** `--srt-content @subs.srt`, `--start 2`, `--upload-ids a --upload-ids b`: a typed JSON body. */
export function buildBody(
  tool: ToolInfo,
  positionals: string[],
  flags: Map<string, string[]>,
): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  const byFlag = new Map(
    tool.fields.flatMap((field) => [[kebab(field.name), field] as const, [field.name, field] as const]),
  );
  for (const [flag, values] of flags) {
    const field = byFlag.get(flag);
    if (!field)
      throw new UsageError(
        `${tool.name} has no field --${flag}; its fields: ${tool.fields.map((f) => `--${kebab(f.name)}`).join(", ")}`,
      );
    const typed = values.map((value) => coerce(field, fieldValue(flag, value)));
    body[field.name] = field.type === "array" ? typed.flatMap((v) => (Array.isArray(v) ? v : [v])) : typed.at(-1);
  }
  // Positional arguments fill the first required field the flags left empty: the upload ids
  // (one, or the merge's list), or the text to speak.
  if (positionals.length > 0) {
    const target = tool.fields.find((field) => field.required && body[field.name] === undefined);
    if (!target) throw new UsageError(`${tool.name}: unexpected argument ${positionals[0]}`);
    if (target.type === "array") body[target.name] = positionals;
    else if (positionals.length === 1) body[target.name] = coerce(target, positionals[0]!);
    else throw new UsageError(`${tool.name}: one ${target.name} expected, got ${positionals.length} arguments`);
  }
  return body;
}

/** `@file` reads the file; `@@text` is the text `@text` (a handle as watermark text). */
export function fieldValue(flag: string, value: string): string {
  if (value.startsWith("@@")) return value.slice(1);
  if (!value.startsWith("@")) return value;
  try {
    return readFileSync(value.slice(1), "utf8");
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error instanceof Error ? error.message : String(error));
    throw new UsageError(
      `--${flag} ${value}: cannot read ${value.slice(1)} (${reason}); write @@ for a value that starts with @`,
    );
  }
}

function coerce(field: ToolField, value: string): unknown {
  switch (field.type) {
    case "integer":
    case "number": {
      const number = Number(value);
      // Decimal notation only: Number() would also take 0x1 and 1e0.
      if (!/^-?(\d+\.?\d*|\.\d+)$/.test(value.trim()) || !Number.isFinite(number))
        throw new UsageError(`--${kebab(field.name)} takes a number, not "${value}"`);
      return number;
    }
    case "boolean":
      if (value !== "true" && value !== "false") throw new UsageError(`--${kebab(field.name)} takes true or false`);
      return value === "true";
    case "array":
      if (!value.startsWith("[")) return value.split(",").filter(Boolean);
      try {
        return JSON.parse(value);
      } catch {
        throw new UsageError(`--${kebab(field.name)} takes a JSON list or comma-separated values, not ${value}`);
      }
    default:
      return value;
  }
}

export function describeTool(tool: ToolInfo): string {
  const lines = [`${tool.name}: ${tool.summary}`, ""];
  for (const field of tool.fields) {
    const values = field.values ? ` (${field.values.join(" | ")})` : "";
    const fallback = field.defaultValue !== undefined ? ` [default ${JSON.stringify(field.defaultValue)}]` : "";
    lines.push(`  --${kebab(field.name)} <${field.type}>${field.required ? " (required)" : ""}${values}${fallback}`);
    if (field.description) lines.push(`      ${field.description}`);
  }
  return lines.join("\n");
}
