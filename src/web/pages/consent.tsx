import type { ConsentDescription } from "@cloudflare/workers-oauth-provider";
import type { FC } from "hono/jsx";
import { shortName } from "../format";
import { LINK_PAGES, Notice, PublicPage } from "../layout";

/** What a person must see before an assistant gets access: who asks, where the tokens go. */

export const ConsentPage: FC<{ details: ConsentDescription; handle: string; email: string; accountId: string }> = ({ details, handle, email, accountId }) => (
  <PublicPage title="Connect an app" section={LINK_PAGES.connect.section}>
    <h1>Allow {shortName(details.clientName)} to use your account?</h1>
    <div class="card">
      <p>
        <strong>{shortName(details.clientName)}</strong> {details.clientDomain ? <>is published by <strong>{details.clientDomain}</strong>.</> : <span class="muted">registered itself; its name is not verified.</span>}
      </p>
      <p>
        Access will be sent to <strong data-testid="redirect-host">{details.redirectHost}</strong>.
      </p>
      {details.redirectIsLoopback && (
        <Notice kind="info">This sends access to an app on your computer. Continue only if you just started connecting from it.</Notice>
      )}
      {!/^https?:/i.test(details.redirectUri) && (
        <Notice kind="info">
          This sends access to an app installed on your device, the one that opens <strong>{details.redirectUri.slice(0, details.redirectUri.indexOf(":") + 1)}</strong> links. Continue only if you just started connecting from it.
        </Notice>
      )}
      <p>It will be able to run the media tools on your behalf (they spend credits of {email}), read your balance and jobs, and manage your brands and posts. You can disconnect it at any time in Connected apps.</p>
      <form method="post" action="/authorize" class="row">
        <input type="hidden" name="handle" value={handle} />
        <input type="hidden" name="account" value={accountId} />
        <button type="submit" name="decision" value="approve">
          Allow
        </button>
        <button type="submit" name="decision" value="deny" class="secondary">
          Deny
        </button>
      </form>
    </div>
  </PublicPage>
);
