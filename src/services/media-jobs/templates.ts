/**
 * Pipeline templates: steps saved under a name, with `{{name}}` placeholders in their parameters
 * that a pipeline call fills with `variables`. A template is checked for its shape when saved (the
 * tools exist, 1 to 10 steps, placeholders well named); its parameters are checked, as every
 * pipeline's, when it runs with its variables.
 */
import { and, desc, eq } from "drizzle-orm";
import { orm } from "../../db/client";
import { pipelineTemplates } from "../../db/schema";
import { invalidRequest, notFound } from "../../errors";
import { newId, quotedId } from "../../lib/ids";
import type { PipelineStep, Template, TemplateRequest } from "../../contract/pipelines";
import { accountLimits } from "../accounts/limits";
import { checkStepsSize } from "./pipeline-steps";

const PLACEHOLDER = /\{\{\s*([A-Za-z][A-Za-z0-9_]{0,39})\s*\}\}/g;
const WHOLE_PLACEHOLDER = /^\{\{\s*([A-Za-z][A-Za-z0-9_]{0,39})\s*\}\}$/;

type Value = string | number | boolean;

/** The placeholders of the steps' parameters, in order of first appearance. */
export function templateVariables(steps: PipelineStep[]): string[] {
  const names: string[] = [];
  const visit = (value: unknown): void => {
    if (typeof value === "string") for (const match of value.matchAll(PLACEHOLDER)) names.push(match[1]!);
    else if (Array.isArray(value)) value.forEach(visit);
    else if (value && typeof value === "object") Object.values(value).forEach(visit);
  };
  steps.forEach((step) => visit(step.params));
  return [...new Set(names)];
}

/** The steps with every placeholder replaced: a whole-value placeholder takes the value's type. */
export function fillTemplate(steps: PipelineStep[], variables: Record<string, Value>): PipelineStep[] {
  const needed = templateVariables(steps);
  for (const name of needed)
    if (!Object.hasOwn(variables, name))
      throw invalidRequest(`variables.${name}: Required (the template uses {{${name}}}).`);
  for (const name of Object.keys(variables))
    if (!needed.includes(name))
      throw invalidRequest(
        `variables.${name}: the template has no such variable (it has ${needed.length ? needed.join(", ") : "none"}).`,
      );
  const fill = (value: unknown): unknown => {
    if (typeof value === "string") {
      const whole = WHOLE_PLACEHOLDER.exec(value);
      if (whole) return variables[whole[1]!];
      return value.replace(PLACEHOLDER, (_, name: string) => String(variables[name]));
    }
    if (Array.isArray(value)) return value.map(fill);
    if (value && typeof value === "object")
      return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, fill(inner)]));
    return value;
  };
  return steps.map((step) => ({ tool: step.tool, params: fill(step.params) as Record<string, unknown> }));
}

type TemplateRow = typeof pipelineTemplates.$inferSelect;

function templateView(row: TemplateRow): Template {
  const steps = JSON.parse(row.steps) as PipelineStep[];
  return {
    templateId: row.id,
    name: row.name,
    ...(row.description ? { description: row.description } : {}),
    steps,
    variables: templateVariables(steps),
    createdAt: new Date(row.createdAt).toISOString(),
  };
}

export async function createTemplate(
  db: D1Database,
  accountId: string,
  request: TemplateRequest,
  now: number,
): Promise<Template> {
  checkStepsSize(request.steps);
  const id = newId("tpl", now);
  // The count and the insert in one statement: two saves at once cannot pass the limit together.
  const inserted = await db
    .prepare(
      `INSERT INTO pipeline_templates (id, account_id, name, description, steps, created_at)
       SELECT ?1, ?2, ?3, ?4, ?5, ?6 WHERE (SELECT COUNT(*) FROM pipeline_templates WHERE account_id = ?2) < ?7`,
    )
    .bind(
      id,
      accountId,
      request.name,
      request.description ?? null,
      JSON.stringify(request.steps),
      now,
      accountLimits.templates,
    )
    .run();
  if (inserted.meta.changes === 0)
    throw invalidRequest(`An account keeps at most ${accountLimits.templates} templates; delete one first.`);
  return templateView({
    id,
    accountId,
    name: request.name,
    description: request.description ?? null,
    steps: JSON.stringify(request.steps),
    createdAt: now,
  });
}

export async function listTemplates(db: D1Database, accountId: string): Promise<Template[]> {
  const rows = await orm(db)
    .select()
    .from(pipelineTemplates)
    .where(eq(pipelineTemplates.accountId, accountId))
    .orderBy(desc(pipelineTemplates.createdAt))
    .all();
  return rows.map(templateView);
}

async function templateRow(db: D1Database, accountId: string, templateId: string): Promise<TemplateRow> {
  const row = await orm(db)
    .select()
    .from(pipelineTemplates)
    .where(and(eq(pipelineTemplates.id, templateId), eq(pipelineTemplates.accountId, accountId)))
    .get();
  if (!row) throw notFound(`Template ${quotedId(templateId)} not found.`);
  return row;
}

export async function getTemplate(db: D1Database, accountId: string, templateId: string): Promise<Template> {
  return templateView(await templateRow(db, accountId, templateId));
}

export async function deleteTemplate(db: D1Database, accountId: string, templateId: string): Promise<void> {
  const deleted = await orm(db)
    .delete(pipelineTemplates)
    .where(and(eq(pipelineTemplates.id, templateId), eq(pipelineTemplates.accountId, accountId)))
    .run();
  if (deleted.meta.changes === 0) throw notFound(`Template ${quotedId(templateId)} not found.`);
}

/** A template's steps with the call's variables in place; a template of another account is 404. */
export async function resolveTemplateSteps(
  db: D1Database,
  accountId: string,
  templateId: string,
  variables: Record<string, Value>,
): Promise<PipelineStep[]> {
  const row = await templateRow(db, accountId, templateId);
  return fillTemplate(JSON.parse(row.steps) as PipelineStep[], variables);
}
