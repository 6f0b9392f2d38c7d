/** Where the credits went and what ran: the ledger (and its CSV), jobs, posts. */
import { Hono } from "hono";
import { isLedgerKind, ledgerCsv, ledgerPage, recentJobs } from "../../services/billing/usage";
import { PostsPage } from "../pages/posts";
import { listBrands } from "../../services/social/brands";
import { listPosts } from "../../services/social/posts";
import { brandStats } from "../../services/social/post-stats";
import { JobsPage } from "../pages/jobs";
import { LedgerPage } from "../pages/ledger";
import { type WebEnv } from "../session";

export function activityPages(area: Hono<WebEnv>): void {
  area.get("/ledger", async (c) => {
    const kindParam = c.req.query("kind");
    const kind = isLedgerKind(kindParam) ? kindParam : undefined;
    const before = c.req.query("before")?.slice(0, 64) || undefined;
    const page = await ledgerPage(c.env.DB, c.get("account").accountId, { kind, before });
    return c.html(
      <LedgerPage
        account={c.get("account")}
        entries={page.entries}
        kind={kind}
        nextBefore={page.nextBefore}
        first={!before}
      />,
    );
  });
  area.get("/ledger.csv", async (c) => {
    const kindParam = c.req.query("kind");
    const csv = await ledgerCsv(c.env.DB, c.get("account").accountId, isLedgerKind(kindParam) ? kindParam : undefined);
    return c.body(csv, 200, {
      "content-type": "text/csv; charset=utf-8",
      "content-disposition": `attachment; filename="ledger-${new Date().toISOString().slice(0, 10)}.csv"`,
    });
  });

  area.get("/jobs", async (c) =>
    c.html(
      <JobsPage account={c.get("account")} jobs={await recentJobs(c.env, c.get("account").accountId, Date.now())} />,
    ),
  );

  area.get("/posts", async (c) => {
    const account = c.get("account");
    const now = Date.now();
    const brands = await listBrands(c.env, account.accountId);
    const sections = await Promise.all(
      brands.map(async (brand) => ({
        brand,
        stats: await brandStats(c.env, account.accountId, brand.brandId, now - 30 * 24 * 3600 * 1000, now + 1),
        posts: await listPosts(c.env.DB, account.accountId, { brandId: brand.brandId }),
      })),
    );
    return c.html(<PostsPage account={account} brands={sections} />);
  });
}
