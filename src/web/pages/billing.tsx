import type { FC } from "hono/jsx";
import type { AccountDetails } from "../../services/accounts/accounts";
import type { PaymentView } from "../../services/billing/purchases";
import {
  offerName,
  packs,
  paidPlans,
  planAllowance,
  planNames,
  topups,
  type CreditOffer,
  type PaidPlan,
} from "../../services/billing/catalog";
import { plansDifferences } from "../../services/billing/pricing";
import { credits, date, dateTime, euros } from "../format";
import { AppPage, ConfirmedAction, DataTable, Notice } from "../layout";

const OfferCard: FC<{ offer: CreditOffer }> = ({ offer }) => (
  <form method="post" action="/app/billing/checkout" class="offer">
    <input type="hidden" name="offer" value={offer.id} />
    <strong>{offer.label}</strong>
    <span class="price">{euros(offer.amountCents)}</span>
    <span class="muted">never expire</span>
    <button type="submit">Buy</button>
  </form>
);

const PlanCard: FC<{ plan: "solo" | PaidPlan; account: AccountDetails; price: number | null | undefined }> = ({
  plan,
  account,
  price,
}) => {
  const current = account.plan === plan;
  const apiAccess = plan === "pro" || plan === "scale";
  // A cancellation wins over a pending downgrade: the account ends on Solo.
  const next = account.planNext === plan && !account.planCancelAtPeriodEnd;
  // The current plan can be kept when it is set to end or to move down; the next one is chosen already.
  const keepable = current && (account.planCancelAtPeriodEnd || account.planNext !== null) && plan !== "solo";
  return (
    <form method="post" action="/app/billing/plan" class={`offer${current ? " current" : ""}`}>
      <input type="hidden" name="plan" value={plan} />
      <strong>{planNames[plan]}</strong>
      <span class="price">{plan === "solo" ? "Free" : price ? `${euros(price)} / month` : "—"}</span>
      <span>{credits(planAllowance[plan])} credits / month</span>
      <span class="muted">{apiAccess ? "REST API + assistant connector" : "assistant connector only"}</span>
      <button type="submit" disabled={(current && !keepable) || next} class={current || next ? "secondary" : ""}>
        {keepable
          ? "Keep this plan"
          : current
            ? "Current plan"
            : next
              ? `From ${date(account.planPeriodEnd)}`
              : account.stripeSubscriptionId && plan !== "solo"
                ? "Switch"
                : "Choose"}
      </button>
    </form>
  );
};

export const BillingPage: FC<{
  account: AccountDetails;
  payments: PaymentView[];
  planPrices: Partial<Record<PaidPlan, number | null>>;
  paymentsReady: boolean;
  notice?: string;
  error?: string;
}> = ({ account, payments, planPrices, paymentsReady, notice, error }) => (
  <AppPage title="Billing" path="/app/billing" email={account.email} unverified={!account.emailVerified}>
    {error && <Notice kind="error">{error}</Notice>}
    {notice && <Notice kind="ok">{notice}</Notice>}
    {!paymentsReady && <Notice kind="info">Payments are not configured on this server (STRIPE_SECRET_KEY).</Notice>}
    <div class="card" data-testid="current-plan">
      <strong>{planNames[account.plan]}</strong>
      {account.plan === "payg" ? (
        <span class="muted"> · credits bought once, never expire; every tool at the contract's prices.</span>
      ) : (
        <span class="muted">
          {" "}
          · {credits(planAllowance[account.plan])} plan credits per month, no rollover;{" "}
          {account.planCancelAtPeriodEnd
            ? `cancelled: moves to Solo on ${date(account.planPeriodEnd)}`
            : account.planNext
              ? `moves to ${planNames[account.planNext]} on ${date(account.planPeriodEnd)}`
              : `next renewal ${date(account.planPeriodEnd)}`}
          .
        </span>
      )}
      <div class="row" style="margin-top:10px">
        {account.stripeSubscriptionId && !account.planCancelAtPeriodEnd && (
          <ConfirmedAction
            action="/app/billing/cancel"
            kind="danger"
            confirm="Cancel the plan? It stays active until the end of the paid period, then moves to Solo."
          >
            Cancel the plan
          </ConfirmedAction>
        )}
        {account.stripeSubscriptionId && account.planCancelAtPeriodEnd && (
          <form method="post" action="/app/billing/resume" class="inline">
            <button type="submit" class="secondary">
              Keep the plan (undo cancellation)
            </button>
          </form>
        )}
        {account.plan === "solo" && !account.stripeSubscriptionId && (
          <form method="post" action="/app/billing/plan" class="inline">
            <input type="hidden" name="plan" value="payg" />
            <button type="submit" class="secondary">
              Switch to pay as you go
            </button>
          </form>
        )}
      </div>
    </div>

    {account.plan === "payg" ? (
      <>
        <h2>Buy credits</h2>
        <div class="offers">
          {packs.map((offer) => (
            <OfferCard offer={offer} />
          ))}
        </div>
      </>
    ) : (
      <>
        <h2>Top up</h2>
        <p class="muted">
          Subscriber top-ups are purchased credits: they never expire and are used after the plan credits.
        </p>
        <div class="offers">
          {topups.map((offer) => (
            <OfferCard offer={offer} />
          ))}
        </div>
      </>
    )}

    <h2>Monthly plans</h2>
    <p class="muted">Plans reset their credits each month. {plansDifferences()}</p>
    <div class="offers">
      <PlanCard plan="solo" account={account} price={null} />
      {paidPlans.map((plan) => (
        <PlanCard plan={plan} account={account} price={planPrices[plan]} />
      ))}
    </div>

    <h2>Payments and invoices</h2>
    <DataTable
      columns={["Date", "What", "Credits#", "Amount#", "Status", "Invoice"]}
      empty="No payments yet."
      count={payments.length}
    >
      {payments.map((p) => (
        <tr data-payment-id={p.id}>
          <td>{dateTime(p.createdAt)}</td>
          <td>{p.kind === "plan" ? `${planNames[p.item as PaidPlan] ?? p.item} plan` : offerName(p.item)}</td>
          <td class="num">
            {credits(p.credits)}
            {p.creditsReversed > 0 ? ` (−${credits(p.creditsReversed)} reversed)` : ""}
          </td>
          <td class="num">{euros(p.amountCents, p.currency)}</td>
          <td>
            <span class={`badge ${p.status}`}>{p.status}</span>
          </td>
          <td>
            {p.invoiceUrl ? <a href={p.invoiceUrl}>View invoice</a> : <span class="muted">receipt by email</span>}
          </td>
        </tr>
      ))}
    </DataTable>
  </AppPage>
);
