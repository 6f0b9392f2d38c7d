/**
 * The developer area at /app: server-rendered pages over the same services as the REST API.
 * Every form post is CSRF-checked (hono/csrf: Origin / Sec-Fetch-Site must be this origin);
 * sign-in, sign-up and reset requests are rate limited per address and per email.
 */
import { Hono } from "hono";
import { csrf } from "hono/csrf";
import { trimTrailingSlash } from "hono/trailing-slash";
import { appCss, appJs } from "./assets";
import { MessagePage } from "./pages/auth";
import { requireSession, type WebEnv } from "./session";
import { pageHeaders } from "./page-headers";
import { pageError } from "./page-errors";
import { authPages } from "./areas/auth";
import { overviewPages } from "./areas/overview";
import { webhooksPages } from "./areas/webhooks";
import { keysPages } from "./areas/keys";
import { activityPages } from "./areas/activity";
import { voicePages } from "./areas/voice";
import { billingPages } from "./areas/billing";
import { connectedPages } from "./areas/connected";
import { templatesPages } from "./areas/templates";

export function webRoutes() {
  const web = new Hono<WebEnv>();

  web.use("*", pageHeaders);
  web.use("*", async (c, next) => {
    await next();
    c.header("Referrer-Policy", "same-origin");
    if (!c.req.path.startsWith("/app/assets/")) c.header("Cache-Control", "no-store");
  });
  web.use("*", csrf());
  // "/app/keys/" and the like: the page without the slash (301), not the not-found page.
  web.use("*", trimTrailingSlash());

  web.get("/assets/app.css", (c) =>
    c.body(appCss, 200, { "content-type": "text/css; charset=utf-8", "cache-control": "public, max-age=3600" }),
  );
  web.get("/assets/app.js", (c) =>
    c.body(appJs, 200, { "content-type": "text/javascript; charset=utf-8", "cache-control": "public, max-age=3600" }),
  );

  authPages(web);

  // --- Signed-in pages ------------------------------------------------------------------------
  // Registered on the web app itself: a sub-app's "*" middleware would also cover /login.
  const area = web;
  for (const path of [
    "/",
    "/keys",
    "/keys/*",
    "/webhooks",
    "/webhooks/*",
    "/verify/send",
    "/ledger",
    "/ledger.csv",
    "/jobs",
    "/templates",
    "/templates/*",
    "/voice",
    "/voice/*",
    "/billing",
    "/billing/*",
    "/connected",
    "/connected/*",
    "/posts",
  ]) {
    area.use(path, requireSession);
  }
  overviewPages(area);
  webhooksPages(area);
  keysPages(area);
  activityPages(area);
  templatesPages(area);
  voicePages(area);
  billingPages(area);
  connectedPages(area);

  web.all("*", (c) => c.html(<MessagePage title="Not found" message="No such page in the developer area." />, 404));
  web.onError((error, c) => pageError(error, c, "developer area"));
  return web;
}
