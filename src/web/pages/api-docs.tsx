/**
 * /docs: the API reference rendered on the server from the public OpenAPI document (the same
 * one /api/v1/openapi.json serves), so it needs no script, no CDN, and cannot drift from the
 * routes. One section per operation: parameters, body fields with their rules, answers.
 */
import type { FC } from "hono/jsx";

type Json = Record<string, any>;

const METHODS = ["get", "post", "put", "patch", "delete"] as const;

/** Description text with its Markdown `code` spans as <code> (the only Markdown the descriptions use). */
const Text: FC<{ text: string | undefined }> = ({ text }) => (
  <>{(text ?? "").split("`").map((part, i) => (i % 2 === 1 ? <code>{part}</code> : part))}</>
);

/** The schema behind a `$ref` into components, or the schema itself. */
function resolve(doc: Json, schema: Json | undefined): Json {
  let current = schema ?? {};
  for (let depth = 0; typeof current.$ref === "string" && depth < 5; depth++) {
    current = doc.components?.schemas?.[current.$ref.split("/").pop() ?? ""] ?? {};
  }
  return current;
}

const bounds = (min: number | undefined, max: number | undefined, unit: string): string[] =>
  min !== undefined && max !== undefined ? [`${min} to ${max}${unit}`] : min !== undefined ? [`at least ${min}${unit}`] : max !== undefined ? [`at most ${max}${unit}`] : [];

/** "integer, 10 to 100, default 80" and the like: what a caller must send. */
function rules(doc: Json, raw: Json): string {
  const schema = resolve(doc, raw);
  const variants = (schema.anyOf ?? schema.oneOf) as Json[] | undefined;
  const type = variants ? variants.map((v) => resolve(doc, v).type ?? "object").join(" or ") : schema.type === "array" ? `array of ${resolve(doc, schema.items).type ?? "object"}` : (schema.type ?? "object");
  const parts = [String(type)];
  if (schema.enum) parts.push(`one of ${schema.enum.map((v: unknown) => JSON.stringify(v)).join(", ")}`);
  parts.push(...bounds(schema.minimum, schema.maximum, ""), ...bounds(schema.minLength, schema.maxLength, " characters"), ...bounds(schema.minItems, schema.maxItems, " items"));
  if (schema.pattern) parts.push(`pattern ${schema.pattern}`);
  if (schema.default !== undefined) parts.push(`default ${JSON.stringify(schema.default)}`);
  return parts.join(", ");
}

const Fields: FC<{ doc: Json; schema: Json }> = ({ doc, schema }) => {
  const object = resolve(doc, schema);
  const required = new Set<string>(object.required ?? []);
  const properties = Object.entries((object.properties ?? {}) as Record<string, Json>);
  if (properties.length === 0) return <p class="muted">{rules(doc, object)}</p>;
  return (
    <table>
      <thead>
        <tr>
          <th>Field</th>
          <th>Rules</th>
          <th>Meaning</th>
        </tr>
      </thead>
      <tbody>
        {properties.map(([name, property]) => (
          <tr>
            <td>
              <code>{name}</code>
              {required.has(name) ? " (required)" : ""}
            </td>
            <td>{rules(doc, property)}</td>
            <td>
              <Text text={resolve(doc, property).description} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
};

const Operation: FC<{ doc: Json; path: string; method: string; operation: Json }> = ({ doc, path, method, operation }) => {
  const anchor = `${method}-${path.replace(/[^A-Za-z0-9]+/g, "-")}`;
  const body = operation.requestBody?.content as Record<string, Json> | undefined;
  return (
    <section id={anchor} class="card stack">
      <h3>
        <code>
          {method.toUpperCase()} {path}
        </code>
      </h3>
      <p>{operation.summary}</p>
      {operation.description && (
        <p class="muted">
          <Text text={operation.description} />
        </p>
      )}
      {(operation.parameters ?? []).length > 0 && (
        <>
          <h4>Parameters</h4>
          <ul>
            {(operation.parameters as Json[]).map((p) => (
              <li>
                <code>{p.name}</code> ({p.in}
                {p.required ? ", required" : ""}): {rules(doc, p.schema ?? {})}
                {p.description ? (
                  <>
                    . <Text text={p.description} />
                  </>
                ) : (
                  ""
                )}
              </li>
            ))}
          </ul>
        </>
      )}
      {body &&
        Object.entries(body).map(([type, content]) => (
          <>
            <h4>
              Body <span class="muted">({type})</span>
            </h4>
            <Fields doc={doc} schema={content.schema ?? {}} />
          </>
        ))}
      <h4>Answers</h4>
      <ul>
        {Object.entries((operation.responses ?? {}) as Record<string, Json>).map(([status, response]) => (
          <li>
            <strong>{status}</strong> <Text text={resolve({ components: { schemas: doc.components?.responses } }, response).description} />
          </li>
        ))}
      </ul>
    </section>
  );
};

export const ApiDocsPage: FC<{ doc: Json }> = ({ doc }) => {
  const operations = Object.entries((doc.paths ?? {}) as Record<string, Json>).flatMap(([path, item]) =>
    METHODS.filter((method) => item[method]).map((method) => ({ path, method, operation: item[method] as Json, tag: ((item[method].tags ?? ["Other"]) as string[])[0]! })),
  );
  const tags = [...new Set(operations.map((o) => o.tag))];
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{doc.info?.title ?? "API"} · reference</title>
        <link rel="stylesheet" href="/app/assets/app.css" />
        <style>{`main{max-width:60rem;margin:0 auto;padding:1rem}table{width:100%;border-collapse:collapse;table-layout:fixed}th,td{white-space:normal;text-align:left;vertical-align:top;padding:.3rem .4rem;border-bottom:1px solid #ddd}th:first-child,td:first-child{width:28%}p,li,td,code{overflow-wrap:anywhere}h3 code{font-size:1rem}`}</style>
      </head>
      <body>
        <main class="stack">
          <h1>{doc.info?.title}</h1>
          <p>
            Machine-readable: <a href="/api/v1/openapi.json">/api/v1/openapi.json</a> (OpenAPI 3.1). Accounts and keys: <a href="/app">developer area</a>.
          </p>
          {String(doc.info?.description ?? "")
            .split(/\n\n+/)
            .map((paragraph) => (
              <p>
                <Text text={paragraph} />
              </p>
            ))}
          <nav class="stack">
            {tags.map((tag) => (
              <p>
                <strong>{tag}</strong>:{" "}
                {operations
                  .filter((o) => o.tag === tag)
                  .map((o, i) => (
                    <>
                      {i > 0 ? " · " : ""}
                      <a href={`#${o.method}-${o.path.replace(/[^A-Za-z0-9]+/g, "-")}`}>
                        {o.method.toUpperCase()} {o.path.replace("/api/v1", "")}
                      </a>
                    </>
                  ))}
              </p>
            ))}
          </nav>
          {tags.map((tag) => (
            <>
              <h2>{tag}</h2>
              {operations
                .filter((o) => o.tag === tag)
                .map((o) => (
                  <Operation doc={doc} path={o.path} method={o.method} operation={o.operation} />
                ))}
            </>
          ))}
        </main>
      </body>
    </html>
  );
};

/** For the app's route (a .ts module without JSX). */
export const renderApiDocs = (doc: Json) => <ApiDocsPage doc={doc} />;
