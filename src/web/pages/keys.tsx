import type { FC } from "hono/jsx";
import type { AccountDetails, ApiKeyView, KeyMode } from "../../services/accounts/accounts";
import { dateTime } from "../format";
import { AppPage, ConfirmedAction, DataTable, Notice } from "../layout";

export const KeysPage: FC<{
  account: AccountDetails;
  keys: ApiKeyView[];
  refusal: string | null;
  created?: { apiKey: string; name: string; mode: KeyMode };
  error?: string;
  notice?: string;
  /** One-time token of the "create key" form: sending the form again makes no second key. */
  formNonce: string;
}> = ({ account, keys, refusal, created, error, notice, formNonce }) => (
  <AppPage title="API keys" path="/app/keys" email={account.email} unverified={!account.emailVerified}>
    {error && <Notice kind="error">{error}</Notice>}
    {notice && <Notice kind="ok">{notice}</Notice>}
    {created && (
      <div class="card" data-testid="new-key">
        <p>
          <strong>
            {created.mode === "test" ? "Test key" : "Key"} “{created.name}” created.
          </strong>{" "}
          Copy it now: it is shown only once and only its hash is stored.
        </p>
        {created.mode === "test" && (
          <p class="muted">
            Test keys spend no credits, see only what test keys uploaded, take at most 2 minutes of media or 1000
            characters per call, and their results are marked TEST.
          </p>
        )}
        <div class="secret">
          <input id="new-key" readonly value={created.apiKey} aria-label="New API key" />
          <button type="button" data-copy="new-key" hidden>
            Copy
          </button>
        </div>
        <p class="muted">
          Use it as <code>Authorization: Bearer {created.apiKey.slice(0, 12)}…</code> on <code>/api/v1</code>.
        </p>
      </div>
    )}
    {refusal ? (
      <Notice kind="info">
        {refusal} <a href="/app/billing">Change the plan</a> to create keys. The assistant connector works on every
        plan.
      </Notice>
    ) : (
      <form method="post" action="/app/keys" class="card row" data-once>
        <input type="hidden" name="nonce" value={formNonce} />
        <label style="flex:1">
          Name
          <input name="name" maxlength={60} required placeholder="e.g. production server" />
        </label>
        <label>
          Mode
          <select name="mode">
            <option value="live" selected>
              Live (spends credits)
            </option>
            <option value="test">Test (free, results marked TEST)</option>
          </select>
        </label>
        <button type="submit">Create key</button>
      </form>
    )}
    <DataTable
      columns={["Name", "Key", "Mode", "Created", "Last used", "Status", ""]}
      empty="No keys yet."
      count={keys.length}
    >
      {keys.map((key) => (
        <tr data-key-id={key.keyId}>
          <td>{key.name || <span class="muted">(unnamed)</span>}</td>
          <td>
            <code>{key.prefix}…</code>
          </td>
          <td>{key.mode === "test" ? <span class="badge queued">test</span> : <span class="badge">live</span>}</td>
          <td>{dateTime(key.createdAt)}</td>
          <td>{key.lastUsedAt ? dateTime(key.lastUsedAt) : <span class="muted">never</span>}</td>
          <td>
            {key.revokedAt ? (
              <span class="badge revoked">revoked</span>
            ) : refusal ? (
              <span class="badge" title={refusal}>
                paused: plan
              </span>
            ) : (
              <span class="badge active">active</span>
            )}
          </td>
          <td>
            {!key.revokedAt && (
              <ConfirmedAction
                action={`/app/keys/${key.keyId}/revoke`}
                kind="danger"
                confirm={`Revoke “${key.name}”? Calls with it fail at once.`}
              >
                Revoke
              </ConfirmedAction>
            )}
          </td>
        </tr>
      ))}
    </DataTable>
  </AppPage>
);
