/**
 * /docs: the API reference rendered on the server from the public OpenAPI document (the same
 * one /api/v1/openapi.json serves), so it needs no script, no CDN, and cannot drift from the
 * routes. How to authenticate and the error shape first, then one section per operation:
 * parameters, body fields with their rules and examples, the fields of each successful answer.
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
  min !== undefined && max !== undefined
    ? [`${min} to ${max}${unit}`]
    : min !== undefined
      ? [`at least ${min}${unit}`]
      : max !== undefined
        ? [`at most ${max}${unit}`]
        : [];

/** "integer, 10 to 100, default 80" and the like: what a caller must send. */
function rules(doc: Json, raw: Json): string {
  const schema = resolve(doc, raw);
  const variants = (schema.anyOf ?? schema.oneOf) as Json[] | undefined;
  const typeName = (t: unknown) => (Array.isArray(t) ? t.join(" or ") : String(t ?? "object"));
  const type = variants
    ? variants.map((v) => typeName(resolve(doc, v).type)).join(" or ")
    : schema.type === "array"
      ? `array of ${typeName(resolve(doc, schema.items).type)}`
      : typeName(schema.type);
  const parts = [String(type)];
  if (schema.enum) parts.push(`one of ${schema.enum.map((v: unknown) => JSON.stringify(v)).join(", ")}`);
  parts.push(
    ...bounds(schema.minimum, schema.maximum, ""),
    ...bounds(schema.minLength, schema.maxLength, " characters"),
    ...bounds(schema.minItems, schema.maxItems, " items"),
  );
  if (schema.pattern) parts.push(`pattern ${schema.pattern}`);
  if (schema.default !== undefined) parts.push(`default ${JSON.stringify(schema.default)}`);
  return parts.join(", ");
}

/** A field of an object, nested ones named by their path (`result.downloadUrl`, `channels[].url`). */
interface FieldRow {
  name: string;
  required: boolean;
  schema: Json;
}

/** The object's fields and, three levels deep, the fields of the objects (and lists of objects) inside it. */
function fieldRows(doc: Json, schema: Json, prefix = "", depth = 0): FieldRow[] {
  const object = resolve(doc, schema);
  const required = new Set<string>(object.required ?? []);
  return Object.entries((object.properties ?? {}) as Record<string, Json>).flatMap(([name, property]) => {
    const row = { name: `${prefix}${name}`, required: required.has(name), schema: property };
    const inner = resolve(doc, property);
    const items = inner.type === "array" ? resolve(doc, inner.items) : undefined;
    const nested = items?.properties
      ? { schema: items, path: `${prefix}${name}[].` }
      : inner.properties
        ? { schema: inner, path: `${prefix}${name}.` }
        : undefined;
    return nested && depth < 2 ? [row, ...fieldRows(doc, nested.schema, nested.path, depth + 1)] : [row];
  });
}

const Fields: FC<{ doc: Json; schema: Json }> = ({ doc, schema }) => {
  const rows = fieldRows(doc, schema);
  if (rows.length === 0) return <p class="muted">{rules(doc, resolve(doc, schema))}</p>;
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
        {rows.map(({ name, required, schema: property }) => {
          const resolved = resolve(doc, property);
          const example = property.example ?? resolved.example;
          return (
            <tr>
              <td>
                <code>{name}</code>
                {required ? " (required)" : ""}
              </td>
              <td>{rules(doc, property)}</td>
              <td>
                <Text text={property.description ?? resolved.description} />
                {example !== undefined && (
                  <>
                    {" "}
                    <span class="muted">
                      Example: <code>{JSON.stringify(example)}</code>
                    </span>
                  </>
                )}
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
};

/** How an operation is authorised: the API key (as the document's security scheme says) or nothing. */
const Access: FC<{ operation: Json }> = ({ operation }) =>
  Array.isArray(operation.security) && operation.security.length === 0 ? (
    <p class="muted">No API key needed.</p>
  ) : (
    <p class="muted">
      API key: <code>Authorization: Bearer mk_live_...</code>
    </p>
  );

const Operation: FC<{ doc: Json; path: string; method: string; operation: Json }> = ({
  doc,
  path,
  method,
  operation,
}) => {
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
      <Access operation={operation} />
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
        {Object.entries((operation.responses ?? {}) as Record<string, Json>).map(([status, raw]) => {
          const response = resolve({ components: { schemas: doc.components?.responses } }, raw);
          const content = Object.entries((response.content ?? {}) as Record<string, Json>);
          // Success bodies in full; every error has the shape shown once under "Errors".
          const shown = status.startsWith("2") ? content : [];
          return (
            <li>
              <strong>{status}</strong> <Text text={response.description} />
              {shown.map(([type, body]) =>
                type === "application/json" && body.schema ? (
                  <Fields doc={doc} schema={body.schema} />
                ) : (
                  <span class="muted"> ({type})</span>
                ),
              )}
            </li>
          );
        })}
      </ul>
    </section>
  );
};

export const ApiDocsPage: FC<{ doc: Json }> = ({ doc }) => {
  const operations = Object.entries((doc.paths ?? {}) as Record<string, Json>).flatMap(([path, item]) =>
    METHODS.filter((method) => item[method]).map((method) => ({
      path,
      method,
      operation: item[method] as Json,
      tag: ((item[method].tags ?? ["Other"]) as string[])[0]!,
    })),
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
            Machine-readable: <a href="/api/v1/openapi.json">/api/v1/openapi.json</a> (OpenAPI 3.1). Accounts and keys:{" "}
            <a href="/app">developer area</a>.
          </p>
          <h2>Authentication</h2>
          {Object.entries((doc.components?.securitySchemes ?? {}) as Record<string, Json>).map(([name, scheme]) => (
            <p>
              The operations that say so take an API key ({name}), sent as an HTTP {scheme.scheme ?? scheme.type} token
              with each call: <Text text={scheme.description} />. Create keys in the{" "}
              <a href="/app/keys">developer area</a>.
            </p>
          ))}
          <h2>How it works</h2>
          {String(doc.info?.description ?? "")
            .split(/\n\n+/)
            .map((paragraph) => (
              <p>
                <Text text={paragraph} />
              </p>
            ))}
          <h2>Errors</h2>
          <p>
            Every error answer has this JSON body (the status and the code say what happened; the message names the
            field at fault):
          </p>
          {doc.components?.schemas?.Error && <Fields doc={doc} schema={doc.components.schemas.Error} />}
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
