/** Pipeline templates: the account's list, and a delete per template (saving is the API's and the connector's). */
import { Hono } from "hono";
import { AppError } from "../../errors";
import { deleteTemplate, listTemplates } from "../../services/media-jobs/templates";
import { TemplatesPage } from "../pages/templates";
import { type WebEnv } from "../session";
import { notice } from "../area-kit";

export function templatesPages(area: Hono<WebEnv>): void {
  area.get("/templates", async (c) => {
    const account = c.get("account");
    const templates = await listTemplates(c.env.DB, account.accountId);
    return c.html(<TemplatesPage account={account} templates={templates} notice={notice(c)} />);
  });
  area.post("/templates/:templateId/delete", async (c) => {
    const deleted = await deleteTemplate(c.env.DB, c.get("account").accountId, c.req.param("templateId")).then(
      () => true,
      (error) => {
        if (error instanceof AppError && error.code === "not_found") return false;
        throw error;
      },
    );
    // A second click (another tab, a reload) finds it gone: said as such, not as a deletion.
    return c.redirect(`/app/templates?done=${deleted ? "template-deleted" : "no-template"}`, 303);
  });
}
