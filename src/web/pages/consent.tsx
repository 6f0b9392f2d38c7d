import type { ConsentDescription } from "@cloudflare/workers-oauth-provider";
import type { FC } from "hono/jsx";
import { shortName } from "../format";
import { LINK_PAGES, Notice, PublicPage } from "../layout";

/** What a person must see before an assistant gets access: who asks, where the tokens go. */

export const ConsentPage: FC<{
  details: ConsentDescription;
  handle: string;
  email: string;
  accountId: string;
  defaultDailyCap: number;
}> = ({ details, handle, email, accountId, defaultDailyCap }) => (
  <PublicPage title="Connect an app" section={LINK_PAGES.connect.section}>
    <h1>Allow {shortName(details.clientName)} to use your account?</h1>
    <div class="card">
      <p>
        <strong>{shortName(details.clientName)}</strong>{" "}
        {details.clientDomain ? (
          <>
            is published by <strong>{details.clientDomain}</strong>.
          </>
        ) : (
          <span class="muted">registered itself; its name is not verified.</span>
        )}
      </p>
      <p>
        Access will be sent to <strong data-testid="redirect-host">{details.redirectHost}</strong>.
      </p>
      {details.redirectIsLoopback && (
        <Notice kind="info">
          This sends access to an app on your computer. Continue only if you just started connecting from it.
        </Notice>
      )}
      {!/^https?:/i.test(details.redirectUri) && (
        <Notice kind="info">
          This sends access to an app installed on your device, the one that opens{" "}
          <strong>{details.redirectUri.slice(0, details.redirectUri.indexOf(":") + 1)}</strong> links. Continue only if
          you just started connecting from it.
        </Notice>
      )}
      <form method="post" action="/authorize" class="stack">
        <input type="hidden" name="handle" value={handle} />
        <input type="hidden" name="account" value={accountId} />
        <fieldset class="stack">
          <legend>What it may do</legend>
          <label class="check">
            <input type="checkbox" name="scope_media" checked />
            <span>
              Process media: run the tools (they spend credits of {email}), upload files, read your balance and jobs.
            </span>
          </label>
          <label class="check">
            <input type="checkbox" name="scope_social" checked />
            <span>Manage your brands and posts and publish them to your networks (free).</span>
          </label>
        </fieldset>
        <fieldset class="stack">
          <legend>How much it may spend</legend>
          <label>
            Credits per day <span class="muted">(empty: no cap of its own)</span>
            <input
              type="number"
              name="daily_cap"
              min={0}
              max={100000000}
              step={1}
              inputmode="numeric"
              value={String(defaultDailyCap)}
            />
          </label>
          <label>
            Credits per call <span class="muted">(empty: no cap of its own)</span>
            <input type="number" name="call_cap" min={0} max={100000000} step={1} inputmode="numeric" value="" />
          </label>
        </fieldset>
        <p class="muted">
          A call over a cap is refused and spends nothing. You can change all of this, or disconnect it, at any time in
          Connected apps.
        </p>
        <div class="row">
          <button type="submit" name="decision" value="approve">
            Allow
          </button>
          <button type="submit" name="decision" value="deny" class="secondary" formnovalidate>
            Deny
          </button>
        </div>
      </form>
    </div>
  </PublicPage>
);
