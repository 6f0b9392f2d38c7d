/**
 * Pages opened by a capability link (client review, one-time upload): no session, the link is
 * the credential, so they are never cached, never leak the link as a referrer, stay out of
 * search engines, and their form posts are CSRF-checked like the developer area's.
 */
import { Hono } from "hono";
import { csrf } from "hono/csrf";
import type { Env } from "../env";
import { pageError } from "./page-errors";
import { pageHeaders } from "./page-headers";

/** `section`: how the pages name themselves (LINK_PAGES in layout.tsx). */
export function capabilityPageApp(section: string) {
  const routes = new Hono<{ Bindings: Env }>();
  routes.use("*", csrf());
  // A refused post (another site's form) is a page for the person holding the link, not JSON.
  routes.onError((error, c) => pageError(error, c, section, section));
  routes.use("*", pageHeaders);
  routes.use("*", async (c, next) => {
    await next();
    c.header("Cache-Control", "no-store");
    c.header("Referrer-Policy", "no-referrer");
    c.header("X-Robots-Tag", "noindex");
  });
  return routes;
}
