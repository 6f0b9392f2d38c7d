import type { FC } from "hono/jsx";
import type { AccountDetails } from "../../services/accounts/accounts";
import { planNames } from "../../services/billing/catalog";
import type { DailyUsage } from "../../services/billing/usage";
import { credits, date } from "../format";
import { AppPage, Notice } from "../layout";
import { UsageChart } from "../usage-chart";

/** `keysPaused`: why the plan refuses REST keys (they exist but answer 401), or null. */
export const OverviewPage: FC<{
  account: AccountDetails;
  usage: DailyUsage;
  activeKeys: number;
  keysPaused: string | null;
  notice?: string;
}> = ({ account, usage, activeKeys, keysPaused, notice }) => (
  <AppPage title="Overview" path="/app" email={account.email} unverified={!account.emailVerified}>
    {notice && <Notice kind="ok">{notice}</Notice>}
    <div class="grid">
      <div class="card stat">
        <div class="label">Balance</div>
        <div class="value" data-testid="balance">
          {credits(account.balance)}
        </div>
        <div class="muted">credits</div>
      </div>
      <div class="card stat">
        <div class="label">Plan credits</div>
        <div class="value" data-testid="plan-credits">
          {credits(account.planCredits)}
        </div>
        <div class="muted">{account.plan === "payg" ? "no monthly plan" : "reset each month, used first"}</div>
      </div>
      <div class="card stat">
        <div class="label">Purchased credits</div>
        <div class="value" data-testid="purchased-credits">
          {credits(account.purchasedCredits)}
        </div>
        <div class="muted">never expire</div>
      </div>
      <div class="card stat">
        <div class="label">Plan</div>
        <div class="value" data-testid="plan">
          {planNames[account.plan]}
        </div>
        <div class="muted">
          {account.plan === "payg"
            ? "pay as you go"
            : account.planCancelAtPeriodEnd
              ? `moves to Solo on ${date(account.planPeriodEnd)}`
              : account.planNext
                ? `moves to ${planNames[account.planNext]} on ${date(account.planPeriodEnd)}`
                : `renews on ${date(account.planPeriodEnd)}`}
        </div>
      </div>
    </div>
    <div class="card">
      <h2 style="margin-top:0">Credits spent per day, last 30 days</h2>
      <UsageChart usage={usage} />
    </div>
    <p>
      {activeKeys === 0 && keysPaused ? (
        <>{keysPaused} The assistant connector works on every plan. </>
      ) : activeKeys === 0 ? (
        <>
          No API key yet: <a href="/app/keys">create one</a>, then call <code>GET /api/v1/account</code> with{" "}
          <code>Authorization: Bearer mk_live_…</code>.{" "}
        </>
      ) : keysPaused ? (
        <>
          {activeKeys} API key{activeKeys > 1 ? "s" : ""}, paused by the plan: {keysPaused}{" "}
        </>
      ) : (
        <>
          {activeKeys} active API key{activeKeys > 1 ? "s" : ""}.{" "}
        </>
      )}
      <a href="/docs">API reference</a> · <a href="/app/billing">Buy credits</a>
    </p>
  </AppPage>
);
