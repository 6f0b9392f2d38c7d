/** The overview page and the verification mail sent again. */
import { Hono } from "hono";
import { listApiKeys, restAccessRefusal } from "../../services/accounts/accounts";
import { limitAttempts } from "../../services/accounts/auth";
import { dailyUsage } from "../../services/billing/usage";
import { MessagePage } from "../pages/auth";
import { sendVerificationMail } from "../../services/accounts/email-verification";
import { OverviewPage } from "../pages/overview";
import { clientAddress, type WebEnv } from "../session";
import { userError, notice } from "../area-kit";

export function overviewPages(area: Hono<WebEnv>): void {
  area.get("/", async (c) => {
    const account = c.get("account");
    const [usage, keys] = await Promise.all([
      dailyUsage(c.env.DB, account.accountId, Date.now()),
      listApiKeys(c.env.DB, account.accountId),
    ]);
    const unrevoked = keys.filter((k) => !k.revokedAt).length;
    return c.html(
      <OverviewPage
        account={account}
        usage={usage}
        activeKeys={unrevoked}
        keysPaused={restAccessRefusal(account.plan)}
        notice={notice(c)}
      />,
    );
  });

  area.post("/verify/send", async (c) => {
    const account = c.get("account");
    try {
      await limitAttempts(c.env, "verify", clientAddress(c), account.email);
      await sendVerificationMail(c.env, account.accountId, new URL(c.req.url).origin, Date.now());
    } catch (error) {
      return c.html(<MessagePage title="Not sent" message={userError(error, c).message} />, 429);
    }
    return c.redirect("/app?done=verification-sent", 303);
  });
}
