/**
 * Headers of every server-rendered page: scripts, styles and images from this origin only,
 * never framed (clickjacking on forms that spend credits, grant access or approve posts), no
 * MIME sniffing. A header a route already set (the OAuth consent's) is kept.
 */
import { createMiddleware } from "hono/factory";

const CONTENT_SECURITY_POLICY =
  "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; frame-ancestors 'none'; base-uri 'none'";

export const pageHeaders = createMiddleware(async (c, next) => {
  await next();
  if (!c.res.headers.has("Content-Security-Policy")) c.header("Content-Security-Policy", CONTENT_SECURITY_POLICY);
  if (!c.res.headers.has("X-Frame-Options")) c.header("X-Frame-Options", "DENY");
  c.header("X-Content-Type-Options", "nosniff");
});
