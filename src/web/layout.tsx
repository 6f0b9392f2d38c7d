/** Page shells of the developer area: a public one (sign-in forms) and one with the navigation. */
import type { Child, FC } from "hono/jsx";

const Head: FC<{ title: string }> = ({ title }) => (
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <meta name="referrer" content="same-origin" />
    <title>{title} · Media API</title>
    <link rel="stylesheet" href="/app/assets/app.css" />
    <script src="/app/assets/app.js" defer></script>
  </head>
);

export const Notice: FC<{ kind: "error" | "ok" | "info"; children?: Child }> = ({ kind, children }) => (
  <div class={`notice ${kind}`} role={kind === "error" ? "alert" : "status"}>
    {children}
  </div>
);

/** What the pages opened by a link are for, under the product's name; the rest is the developer area. */
export const LINK_PAGES = {
  review: { prefix: "/review/", section: "post review" },
  upload: { prefix: "/upload/", section: "file upload" },
  connect: { prefix: "/authorize", section: "connect an app" },
} as const;

/** The section of the link page at `path`, or undefined for the developer area's. */
export const linkPageSection = (path: string): string | undefined =>
  Object.values(LINK_PAGES).find((page) => path.startsWith(page.prefix))?.section;

/**
 * Sign-in, sign-up and reset forms, and the pages people without an account open (a client's
 * review, an assistant's upload page, the consent page): `section` names what the page is for.
 */
export const PublicPage: FC<{ title: string; section?: string; wide?: boolean; children?: Child }> = ({
  title,
  section = "developer area",
  wide = false,
  children,
}) => (
  <html lang="en">
    <Head title={title} />
    <body>
      <main class={wide ? "narrow wide" : "narrow"}>
        <p>
          <strong>Media API</strong> <span class="muted">· {section}</span>
        </p>
        {children}
      </main>
    </body>
  </html>
);

export const tabs = [
  ["/app", "Overview"],
  ["/app/keys", "API keys"],
  ["/app/webhooks", "Webhooks"],
  ["/app/ledger", "Ledger"],
  ["/app/jobs", "Jobs"],
  ["/app/templates", "Templates"],
  ["/app/voice", "Cloned voice"],
  ["/app/billing", "Billing"],
  ["/app/posts", "Posts"],
  ["/app/connected", "Connected apps"],
] as const;

/**
 * Until the owner confirms the email, keys, webhooks and payments are refused: the pages that
 * offer them say so and send the link again (src/services/accounts/email-verification.ts).
 */
export const VerifyEmailNotice: FC<{ email: string }> = ({ email }) => (
  <div class="notice info" role="status" data-testid="verify-email">
    <p style="margin:0 0 .5rem">
      Confirm your email: open the link mailed to <strong>{email}</strong>. Until then the account cannot create API
      keys, set webhooks, buy credits or connect an assistant.
    </p>
    <form method="post" action="/app/verify/send" class="row">
      <button class="secondary" type="submit">
        Send the link again
      </button>
    </form>
  </div>
);

/** `unverified`: the account's email is not confirmed yet (the notice above is shown). */
export const AppPage: FC<{ title: string; path: string; email: string; unverified?: boolean; children?: Child }> = ({
  title,
  path,
  email,
  unverified,
  children,
}) => (
  <html lang="en">
    <Head title={title} />
    <body>
      <header class="top">
        <div class="bar">
          <a class="brand" href="/app">
            Media API
          </a>
          <nav class="tabs" aria-label="Developer area">
            {tabs.map(([href, label]) => (
              <a href={href} aria-current={href === path ? "page" : undefined}>
                {label}
              </a>
            ))}
          </nav>
          <form method="post" action="/app/logout" class="who">
            <span>{email}</span>
            <button class="secondary" type="submit">
              Sign out
            </button>
          </form>
        </div>
      </header>
      <main>
        <h1>{title}</h1>
        {unverified && <VerifyEmailNotice email={email} />}
        {children}
      </main>
    </body>
  </html>
);

/** Each column's name in front of its cells, for the phone layout (app.css: `table.cards`). */
const cardLabels = (tableClass: string, columns: string[]) =>
  `@media (max-width:600px){${columns
    .map((column, i) =>
      column ? `.${tableClass} td:nth-child(${i + 1})::before{content:"${column.replace(/[^A-Za-z0-9 ]/g, "")}"}` : "",
    )
    .join("")}}`;

/**
 * A table with its column headers and a line for the empty case. Columns ending in `#` are
 * numeric. On a phone each row is a card, every cell under its column's name, so nothing (the
 * Revoke or Disconnect button in the last column) is hidden off to the right.
 */
export const DataTable: FC<{ columns: string[]; empty: string; count: number; children?: Child }> = ({
  columns,
  empty,
  count,
  children,
}) => {
  const tableClass = `cards-${columns.length}-${columns
    .join("")
    .replace(/[^A-Za-z]/g, "")
    .toLowerCase()}`;
  return (
    <div class="table-wrap">
      {/* Raw: the text of a <style> is not HTML (escaped quotes would void it); labels keep letters, digits and spaces only. */}
      <style dangerouslySetInnerHTML={{ __html: cardLabels(tableClass, columns) }} />
      <table class={`cards ${tableClass}`}>
        <thead>
          <tr>
            {columns.map((column) =>
              column.endsWith("#") ? <th class="num">{column.slice(0, -1)}</th> : <th>{column}</th>,
            )}
          </tr>
        </thead>
        <tbody>
          {count === 0 ? (
            <tr>
              <td colspan={columns.length} class="muted">
                {empty}
              </td>
            </tr>
          ) : (
            children
          )}
        </tbody>
      </table>
    </div>
  );
};

/**
 * A one-button form that changes something at once (revoke, remove, cancel): the button asks
 * `confirm` first where scripts run (assets' data-confirm handler); without them it posts.
 */
export const ConfirmedAction: FC<{
  action: string;
  confirm: string;
  kind: "danger" | "secondary";
  fields?: Record<string, string>;
  inline?: boolean;
  children?: Child;
}> = ({ action, confirm, kind, fields = {}, inline = true, children }) => (
  <form method="post" action={action} class={inline ? "inline" : undefined}>
    {Object.entries(fields).map(([name, value]) => (
      <input type="hidden" name={name} value={value} />
    ))}
    <button type="submit" class={kind} data-confirm={confirm}>
      {children}
    </button>
  </form>
);
