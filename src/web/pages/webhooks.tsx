/**
 * Where the account's events go: the default job webhook of live keys and of test keys (each with
 * its own signing secret), and each brand's webhook. An owner who took the account back sees
 * here whatever someone else pointed elsewhere, and removes it.
 */
import type { FC } from "hono/jsx";
import type { AccountDetails, KeyMode } from "../../services/accounts/accounts";
import type { AccountWebhookView } from "../../services/webhooks/settings";
import { AppPage, ConfirmedAction, DataTable, Notice } from "../layout";

const MODE_LABEL: Record<KeyMode, string> = { live: "Live keys", test: "Test keys" };

const AccountWebhook: FC<{ mode: KeyMode; view: AccountWebhookView; canSet: boolean }> = ({ mode, view, canSet }) => (
  <div class="card stack" data-testid={`webhook-${mode}`}>
    <h2 style="margin:0">{MODE_LABEL[mode]}</h2>
    <p class="muted" style="margin:0">
      {mode === "live"
        ? "Jobs of live keys without their own webhookUrl notify this URL."
        : "Jobs of test keys notify this URL only (or their own webhookUrl), signed with the test secret: never the live endpoint."}
    </p>
    <p style="margin:0">
      URL: {view.url ? <code data-testid={`webhook-${mode}-url`}>{view.url}</code> : <span class="muted">none</span>}
    </p>
    <div class="secret">
      <input id={`secret-${mode}`} readonly value={view.secret} aria-label={`${MODE_LABEL[mode]} signing secret`} />
      <button type="button" data-copy={`secret-${mode}`} hidden>
        Copy
      </button>
    </div>
    <p class="muted" style="margin:0">
      Signing secret, version {view.secretVersion} (Standard Webhooks: verify <code>webhook-signature</code> with it).
    </p>
    {canSet && (
      <form method="post" action="/app/webhooks" class="row">
        <input type="hidden" name="mode" value={mode} />
        <label style="flex:1">
          New URL
          <input name="url" type="url" maxlength={2048} required placeholder="https://example.com/hooks/media" />
        </label>
        <button type="submit">Save</button>
      </form>
    )}
    {view.url && (
      <ConfirmedAction
        action="/app/webhooks/remove"
        fields={{ mode }}
        kind="secondary"
        inline={false}
        confirm="Remove this webhook URL? Its events stop at once."
      >
        Remove the URL
      </ConfirmedAction>
    )}
  </div>
);

export const WebhooksPage: FC<{
  account: AccountDetails;
  live: AccountWebhookView;
  test: AccountWebhookView;
  brands: { brandId: string; name: string; webhookUrl: string | null }[];
  error?: string;
  notice?: string;
}> = ({ account, live, test, brands, error, notice }) => (
  <AppPage title="Webhooks" path="/app/webhooks" email={account.email} unverified={!account.emailVerified}>
    {error && <Notice kind="error">{error}</Notice>}
    {notice && <Notice kind="ok">{notice}</Notice>}
    <AccountWebhook mode="live" view={live} canSet={account.emailVerified} />
    <AccountWebhook mode="test" view={test} canSet={account.emailVerified} />
    <h2>Brands</h2>
    <DataTable columns={["Brand", "Webhook URL", ""]} empty="No brand yet." count={brands.length}>
      {brands.map((brand) => (
        <tr>
          <td>{brand.name}</td>
          <td>{brand.webhookUrl ? <code>{brand.webhookUrl}</code> : <span class="muted">none</span>}</td>
          <td>
            {brand.webhookUrl && (
              <ConfirmedAction
                action={`/app/webhooks/brands/${brand.brandId}/remove`}
                kind="secondary"
                inline={false}
                confirm="Remove this brand's webhook URL? Its events stop at once."
              >
                Remove
              </ConfirmedAction>
            )}
          </td>
        </tr>
      ))}
    </DataTable>
  </AppPage>
);
