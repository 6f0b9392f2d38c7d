/** Buying credits and plans, cancelling and resuming a plan, the payments. */
import { Hono, type Context } from "hono";
import { getAccountDetails } from "../../services/accounts/accounts";
import {
  cancelPlan,
  choosePlan,
  listPayments,
  resumePlan,
  startCreditCheckout,
} from "../../services/billing/purchases";
import { BillingPage } from "../pages/billing";
import { type WebEnv } from "../session";
import { known } from "../format";
import { readForm } from "../form";
import { userError, noticeParameter, signedNotice, NOTICES, planPrices, notice, origin } from "../area-kit";

export function billingPages(area: Hono<WebEnv>): void {
  const billingPage = async (
    c: Context<WebEnv>,
    extra: { error?: string; notice?: string } = {},
    status: 200 | 400 = 200,
  ) => {
    const account = c.get("account");
    const ready = Boolean(c.env.STRIPE_SECRET_KEY);
    const [payments, prices] = await Promise.all([
      listPayments(c.env.DB, account.accountId),
      ready ? planPrices(c) : Promise.resolve({}),
    ]);
    const checkout = c.req.query("checkout");
    const shown =
      notice(c) ?? (await signedNotice(c)) ?? (checkout ? known(NOTICES, `checkout-${checkout}`) : undefined);
    return c.html(
      <BillingPage
        account={account}
        payments={payments}
        planPrices={prices}
        paymentsReady={ready}
        notice={shown}
        {...extra}
      />,
      status,
    );
  };
  const billingAction =
    (action: (c: Context<WebEnv>, form: Record<string, unknown>) => Promise<Response>) =>
    async (c: Context<WebEnv>) => {
      const form = await readForm(c);
      try {
        return await action(c, form);
      } catch (error) {
        return billingPage(c, { error: userError(error).message }, 400);
      }
    };
  area.get("/billing", (c) => billingPage(c));
  area.post(
    "/billing/checkout",
    billingAction(async (c, form) =>
      c.redirect(await startCreditCheckout(c.env, c.get("account").accountId, form.offer, origin(c), Date.now()), 303),
    ),
  );
  area.post(
    "/billing/plan",
    billingAction(async (c, form) => {
      const outcome = await choosePlan(c.env, c.get("account").accountId, form.plan, origin(c), Date.now());
      if ("redirect" in outcome) return c.redirect(outcome.redirect, 303);
      if (c.env.AUTH_SECRET) return c.redirect(`/app/billing?${await noticeParameter(c, outcome.done)}`, 303);
      c.set("account", await getAccountDetails(c.env.DB, c.get("account").accountId));
      return billingPage(c, { notice: outcome.done });
    }),
  );
  area.post(
    "/billing/cancel",
    billingAction(async (c) => {
      await cancelPlan(c.env, c.get("account").accountId);
      return c.redirect("/app/billing?done=cancelled", 303);
    }),
  );
  area.post(
    "/billing/resume",
    billingAction(async (c) => {
      await resumePlan(c.env, c.get("account").accountId);
      return c.redirect("/app/billing?done=resumed", 303);
    }),
  );
}
