/** The account's webhook URLs (live and test) and the brands' ones. */
import { Hono, type Context } from "hono";
import { AppError } from "../../errors";
import { type KeyMode } from "../../services/accounts/accounts";
import { listBrands, updateBrand } from "../../services/social/brands";
import { getAccountWebhook, setAccountWebhookUrl } from "../../services/webhooks/settings";
import { WebhooksPage } from "../pages/webhooks";
import { type WebEnv } from "../session";
import { readForm } from "../form";
import { userError, text, notice } from "../area-kit";

export function webhooksPages(area: Hono<WebEnv>): void {
  const webhooksPage = async (
    c: Context<WebEnv>,
    extra: { error?: string; notice?: string } = {},
    status: 200 | 400 = 200,
  ) => {
    const account = c.get("account");
    const [live, test, brands] = await Promise.all([
      getAccountWebhook(c.env, account.accountId, "live"),
      getAccountWebhook(c.env, account.accountId, "test"),
      listBrands(c.env, account.accountId),
    ]);
    const brandUrls = brands.map((brand) => ({
      brandId: brand.brandId,
      name: brand.name,
      webhookUrl: brand.webhookUrl,
    }));
    return c.html(
      <WebhooksPage
        account={account}
        live={live}
        test={test}
        brands={brandUrls}
        notice={extra.notice ?? notice(c)}
        error={extra.error}
      />,
      status,
    );
  };
  const webhookMode = (value: unknown): KeyMode => (value === "test" ? "test" : "live");
  area.get("/webhooks", (c) => webhooksPage(c));
  area.post("/webhooks", async (c) => {
    const form = await readForm(c);
    try {
      await setAccountWebhookUrl(c.env, c.get("account").accountId, text(form.url), webhookMode(form.mode));
    } catch (error) {
      return webhooksPage(c, { error: userError(error).message.replace(/^url: /, "URL refused: ") }, 400);
    }
    return c.redirect("/app/webhooks?done=webhook-saved", 303);
  });
  area.post("/webhooks/remove", async (c) => {
    const form = await readForm(c);
    await setAccountWebhookUrl(c.env, c.get("account").accountId, null, webhookMode(form.mode));
    return c.redirect("/app/webhooks?done=webhook-removed", 303);
  });
  area.post("/webhooks/brands/:brandId/remove", async (c) => {
    try {
      await updateBrand(c.env, c.get("account").accountId, c.req.param("brandId"), { webhookUrl: null }, Date.now());
    } catch (error) {
      if (!(error instanceof AppError && error.code === "not_found")) throw error;
      return webhooksPage(c, { error: "No such brand on this account." }, 400);
    }
    return c.redirect("/app/webhooks?done=webhook-removed", 303);
  });
}
