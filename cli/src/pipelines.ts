/**
 * Pipelines and templates from the command line. A pipeline comes from a steps file (a JSON list
 * of steps, or a whole POST /api/v1/pipelines body) or from a saved template with `--var` values;
 * everything a typo could break (the file, the flags, the variables) is checked before the first
 * call, so nothing is uploaded or paid for a command that cannot run.
 */
import { readFileSync } from "node:fs";
import type { components } from "./api-types.ts";
import { type Api, unwrap } from "./client.ts";
import { fieldValue, type ToolInfo } from "./tool-fields.ts";
import { UsageError } from "./usage-error.ts";

export type PipelineRequest = components["schemas"]["PipelineRequest"];
export type PipelineStep = components["schemas"]["PipelineStep"];
export type Template = components["schemas"]["Template"];
export type TemplateRequest = components["schemas"]["TemplateRequest"];
type Variables = NonNullable<PipelineRequest["variables"]>;

/** The fields of a pipeline body a steps file may hold (tsc fails here if the API renames one). */
const BODY_FIELDS = [
  "steps",
  "templateId",
  "variables",
  "uploadId",
  "webhookUrl",
  "maxCredits",
] as const satisfies readonly (keyof PipelineRequest)[];
const TEMPLATE_FIELDS = ["name", "description", "steps"] as const satisfies readonly (keyof TemplateRequest)[];

/** A whole placeholder: the parameter takes the variable's value with its type. */
const WHOLE_PLACEHOLDER = /^\{\{\s*([A-Za-z][A-Za-z0-9_]{0,39})\s*\}\}$/;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** A JSON file (`-`: stdin), refused with its name and the parser's reason. */
function readJson(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file === "-" ? 0 : file, "utf8");
  } catch (error) {
    throw new UsageError(`${file}: cannot read it (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${file}: not JSON (${error instanceof Error ? error.message : String(error)})`);
  }
}

/** Steps as the API takes them: objects with a tool and, optionally, an object of params. */
function checkSteps(file: string, steps: unknown): PipelineStep[] {
  if (!Array.isArray(steps) || steps.length === 0)
    throw new UsageError(`${file}: steps must be a non-empty list of {"tool": ..., "params": {...}}`);
  steps.forEach((step, index) => {
    if (!isObject(step) || typeof step.tool !== "string")
      throw new UsageError(`${file}: step ${index + 1} is not {"tool": "<tool>", "params": {...}}`);
    if (step.params !== undefined && !isObject(step.params))
      throw new UsageError(`${file}: the params of step ${index + 1} (${step.tool}) must be an object`);
    const unknown = Object.keys(step).find((key) => key !== "tool" && key !== "params");
    if (unknown) throw new UsageError(`${file}: step ${index + 1} has a field ${unknown}; a step has tool and params`);
  });
  return steps.map((step: { tool: PipelineStep["tool"]; params?: Record<string, unknown> }) => ({
    tool: step.tool,
    params: step.params ?? {},
  }));
}

/** A steps file: a list of steps, or a whole pipeline body (steps or templateId, uploadId, maxCredits...). */
export function readPipelineFile(file: string): PipelineRequest {
  const content = readJson(file);
  if (Array.isArray(content)) return { steps: checkSteps(file, content) };
  if (!isObject(content))
    throw new UsageError(`${file}: a pipeline file is a list of steps or a pipeline body ({"steps": [...], ...})`);
  const unknown = Object.keys(content).find((key) => !(BODY_FIELDS as readonly string[]).includes(key));
  if (unknown)
    throw new UsageError(`${file}: a pipeline body has no field ${unknown}; its fields: ${BODY_FIELDS.join(", ")}`);
  const body = { ...content } as PipelineRequest;
  if (content.steps !== undefined) body.steps = checkSteps(file, content.steps);
  return body;
}

/** A template file: {name, description?, steps}, or a list of steps saved under `--name`. */
export function readTemplateFile(file: string, name?: string, description?: string): TemplateRequest {
  const content = readJson(file);
  if (Array.isArray(content)) {
    if (name === undefined) throw new UsageError(`${file} is a list of steps: name the template with --name`);
    return { name, ...(description !== undefined ? { description } : {}), steps: checkSteps(file, content) };
  }
  if (!isObject(content))
    throw new UsageError(`${file}: a template file is {"name": ..., "steps": [...]} or a list of steps`);
  const unknown = Object.keys(content).find((key) => !(TEMPLATE_FIELDS as readonly string[]).includes(key));
  if (unknown)
    throw new UsageError(`${file}: a template has no field ${unknown}; its fields: ${TEMPLATE_FIELDS.join(", ")}`);
  for (const [flag, value, field] of [
    ["--name", name, "name"],
    ["--description", description, "description"],
  ] as const)
    if (value !== undefined && content[field] !== undefined)
      throw new UsageError(`${file} names its ${field} already: leave out ${flag} or the file's ${field}`);
  const named = name ?? content.name;
  if (typeof named !== "string") throw new UsageError(`${file}: the template needs a name (in the file or --name)`);
  const described = description ?? content.description;
  return {
    name: named,
    ...(described !== undefined ? { description: String(described) } : {}),
    steps: checkSteps(file, content.steps),
  };
}

/** The flags a pipeline body takes, each once; a field the file sets as well is refused. */
export function withFlags(
  body: PipelineRequest,
  given: { uploadId?: string; maxCredits?: string; webhookUrl?: string; templateId?: string },
  source: string,
): PipelineRequest {
  const merged: PipelineRequest = { ...body };
  const set = <K extends keyof PipelineRequest>(field: K, flag: string, value: PipelineRequest[K] | undefined) => {
    if (value === undefined) return;
    if (body[field] !== undefined) throw new UsageError(`${source} sets ${field} already: leave out ${flag} or it`);
    merged[field] = value;
  };
  set("templateId", "--template", given.templateId);
  set("uploadId", "--upload-id", given.uploadId);
  set("webhookUrl", "--webhook-url", given.webhookUrl);
  if (given.maxCredits !== undefined && !/^\d+$/.test(given.maxCredits))
    throw new UsageError(`--max-credits takes a whole number of credits, not "${given.maxCredits}"`);
  set("maxCredits", "--max-credits", given.maxCredits === undefined ? undefined : Number(given.maxCredits));
  return merged;
}

/** Checks the first input: one, from the first step, the body's uploadId or --upload, not two. */
export function checkFirstInput(body: PipelineRequest, uploadingFile: boolean): void {
  const first = body.steps?.[0]?.params;
  const named = first && (first.uploadId !== undefined || first.uploadIds !== undefined);
  if (named && (body.uploadId !== undefined || uploadingFile))
    throw new UsageError(
      `the first step names its input already: leave out ${uploadingFile ? "--upload" : "the pipeline's uploadId (or --upload-id)"}, or the step's`,
    );
  if (uploadingFile && body.uploadId !== undefined) throw new UsageError("--upload and an uploadId: give one input");
}

/** `--var name=value` flags, by name (`@file` reads a file, `@@` starts a value with @). */
export function parseVars(values: string[]): Map<string, string> {
  const vars = new Map<string, string>();
  for (const value of values) {
    const match = /^([A-Za-z][A-Za-z0-9_]{0,39})=(.*)$/s.exec(value);
    if (!match) throw new UsageError(`--var takes name=value (a name of letters, digits and _), not "${value}"`);
    const [, name, raw] = match as unknown as [string, string, string];
    if (vars.has(name)) throw new UsageError(`--var ${name} is given twice`);
    vars.set(name, fieldValue(`var ${name}`, raw));
  }
  return vars;
}

/** Where a whole placeholder `{{name}}` sits: the tool and the field it fills. */
function wholePlaceholders(template: Template): Map<string, { tool: string; field: string }[]> {
  const places = new Map<string, { tool: string; field: string }[]>();
  for (const step of template.steps)
    for (const [field, value] of Object.entries(step.params ?? {})) {
      const name = typeof value === "string" ? WHOLE_PLACEHOLDER.exec(value)?.[1] : undefined;
      if (name) places.set(name, [...(places.get(name) ?? []), { tool: step.tool, field }]);
    }
  return places;
}

/**
 * The template's variables from `--var`, each typed by the field it fills (as a tool's flags are):
 * `--var start=2` is the number 2 where {{start}} is trim's start, text anywhere else. A missing or
 * unknown variable is refused here, before anything is uploaded or paid.
 */
export function typedVariables(template: Template, tools: Map<string, ToolInfo>, vars: Map<string, string>): Variables {
  const unknown = [...vars.keys()].filter((name) => !template.variables.includes(name));
  if (unknown.length > 0)
    throw new UsageError(
      `template ${template.templateId} has no variable ${unknown.join(", ")}; its variables: ${template.variables.join(", ") || "none"}`,
    );
  const missing = template.variables.filter((name) => !vars.has(name));
  if (missing.length > 0)
    throw new UsageError(
      `template ${template.templateId} needs ${missing.map((name) => `--var ${name}=...`).join(" ")}`,
    );
  const places = wholePlaceholders(template);
  const typed: Variables = {};
  for (const [name, value] of vars) {
    const place = places.get(name)?.[0];
    const field = place && tools.get(place.tool)?.fields.find((candidate) => candidate.name === place.field);
    if (field?.type === "number" || field?.type === "integer") {
      if (!/^-?(\d+\.?\d*|\.\d+)$/.test(value.trim()))
        throw new UsageError(`--var ${name}: {{${name}}} is ${place!.tool}'s ${field.name}, a number, not "${value}"`);
      typed[name] = Number(value);
    } else if (field?.type === "boolean") {
      if (value !== "true" && value !== "false")
        throw new UsageError(`--var ${name}: {{${name}}} is ${place!.tool}'s ${field.name}: true or false`);
      typed[name] = value === "true";
    } else typed[name] = value;
  }
  return typed;
}

export async function getTemplate(api: Api, templateId: string): Promise<Template> {
  return unwrap(await api.GET("/api/v1/templates/{templateId}", { params: { path: { templateId } } }));
}

const credits = (n: number) => `${n} credit${n === 1 ? "" : "s"}`;

/** A quote of a pipeline: its total, then each step. */
export function describeQuote(quote: components["schemas"]["Quote"]): string {
  const steps = quote.steps ?? [];
  return [
    `${quote.tool}: ${credits(quote.creditsRequired)} (about ${quote.estimatedSeconds} s); balance ${quote.balance}${quote.sufficient ? "" : ", not enough"}`,
    ...steps.map(
      (step, index) =>
        `  step ${index + 1}/${steps.length} ${step.tool}: ${credits(step.creditsRequired)} (about ${step.estimatedSeconds} s)`,
    ),
  ].join("\n");
}

/** The templates, one a line: id, name, its tools in order, its variables. */
export function describeTemplates(templates: Template[]): string {
  if (templates.length === 0) return "no templates (media-credits templates save FILE)";
  return templates
    .map(
      (template) =>
        `${template.templateId}  ${template.name}  (${template.steps.map((step) => step.tool).join(" -> ")}${template.variables.length ? `; variables: ${template.variables.join(", ")}` : ""})`,
    )
    .join("\n");
}

export { credits };
