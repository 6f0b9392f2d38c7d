import type { FC } from "hono/jsx";
import type { AccountDetails } from "../../services/accounts/accounts";
import type { Template } from "../../contract/pipelines";
import { ConfirmedAction, AppPage, DataTable, Notice } from "../layout";

/** Long parameter values (a whole SRT) are cut: the page shows what a step does, the API the rest. */
const MAX_VALUE = 60;

function shown(value: unknown): string {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text.length > MAX_VALUE ? `${text.slice(0, MAX_VALUE - 1)}…` : text;
}

const StepList: FC<{ steps: Template["steps"] }> = ({ steps }) => (
  <ol class="steps">
    {steps.map((step) => {
      const params = Object.entries(step.params ?? {});
      return (
        <li>
          <strong>{step.tool}</strong>
          {params.length > 0 && (
            <span class="muted"> {params.map(([name, value]) => `${name} ${shown(value)}`).join(", ")}</span>
          )}
        </li>
      );
    })}
  </ol>
);

export const TemplatesPage: FC<{
  account: AccountDetails;
  templates: Template[];
  notice?: string;
}> = ({ account, templates, notice }) => (
  <AppPage title="Templates" path="/app/templates" email={account.email} unverified={!account.emailVerified}>
    {notice && <Notice kind="ok">{notice}</Notice>}
    <p class="muted">
      A template is a pipeline (up to ten tools run in order as one job) saved under a name. Its parameters may hold
      variables, <code>{"{{name}}"}</code>, given each time it runs: <code>POST /api/v1/pipelines</code> with{" "}
      <code>templateId</code>, <code>variables</code> and <code>uploadId</code>, or the connector's{" "}
      <code>run_pipeline</code>. Templates are saved with <code>POST /api/v1/templates</code> or the connector's{" "}
      <code>save_template</code>; see the <a href="/docs#post--api-v1-templates">API reference</a>.
    </p>
    <DataTable
      columns={["Name", "Steps", "Variables", "Created", ""]}
      empty="No templates yet."
      count={templates.length}
    >
      {templates.map((template) => (
        <tr data-template-id={template.templateId}>
          <td class="wrap">
            <strong>{template.name}</strong>
            {template.description && <div class="muted">{template.description}</div>}
            {/* On one line: an id is copied whole, and cut in two it reads as two. */}
            <div style="white-space:nowrap">
              <code>{template.templateId}</code>
            </div>
          </td>
          <td class="wrap">
            <StepList steps={template.steps} />
          </td>
          <td class="wrap">
            {template.variables.length ? (
              template.variables.map((name, i) => (
                <>
                  {i > 0 && " "}
                  <code>{name}</code>
                </>
              ))
            ) : (
              <span class="muted">none</span>
            )}
          </td>
          <td>{template.createdAt.slice(0, 16).replace("T", " ")} UTC</td>
          <td>
            <ConfirmedAction
              action={`/app/templates/${template.templateId}/delete`}
              kind="danger"
              confirm={`Delete the template “${template.name}”? Jobs already started from it go on.`}
            >
              Delete
            </ConfirmedAction>
          </td>
        </tr>
      ))}
    </DataTable>
  </AppPage>
);
