/**
 * Session plumbing of the developer area: the `__Host-session` cookie (Secure, HttpOnly,
 * SameSite=Lax, path /), the middleware that requires a signed-in account, and the
 * sign-in step shared by the login form and, later, the connector's authorization page.
 */
import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { createMiddleware } from "hono/factory";
import type { Env } from "../env";
import { getAccountDetails, type AccountDetails } from "../services/accounts/accounts";
import { createSession, deleteSession, resolveSession, type Session } from "../services/accounts/sessions";

export type WebEnv = { Bindings: Env; Variables: { session: Session; account: AccountDetails } };

const COOKIE = "session";
const cookieOptions = { prefix: "host", path: "/", secure: true, httpOnly: true, sameSite: "Lax" } as const;

export const sessionToken = (c: Context) => getCookie(c, COOKIE, "host");

/** Starts a fresh session (the old token, if any, is deleted: rotation at sign-in). */
export async function startSession(c: Context<WebEnv>, accountId: string, now: number): Promise<void> {
  await deleteSession(c.env.DB, sessionToken(c));
  const { token, expiresAt } = await createSession(c.env.DB, accountId, now);
  setCookie(c, COOKIE, token, { ...cookieOptions, expires: new Date(expiresAt) });
}

export async function endSession(c: Context<WebEnv>): Promise<void> {
  await deleteSession(c.env.DB, sessionToken(c));
  deleteCookie(c, COOKIE, cookieOptions);
}

const SAME_ORIGIN = "https://same-origin.invalid";

/**
 * Only same-site paths: `next` must never send a person to another origin. Control characters
 * and backslashes are refused outright (browsers drop a tab in "/\t/evil.example" and read
 * "//evil.example"), and what remains must resolve to this origin.
 */
export function safeNext(next: unknown): string {
  if (
    typeof next !== "string" ||
    next.length >= 2000 ||
    !/^\/(?![/\\])/.test(next) ||
    /[\u0000-\u001f\u007f\\]/.test(next)
  )
    return "/app";
  const url = new URL(next, SAME_ORIGIN);
  // Checked again once normalised: dot segments can leave `//host` ("/app/..//evil.example"),
  // which a browser reads as another site.
  if (url.origin !== SAME_ORIGIN || /^\/[/\\]/.test(url.pathname)) return "/app";
  return url.pathname + url.search + url.hash;
}

/** Resolves the session or sends the person to sign in, coming back here afterwards. */
export const requireSession = createMiddleware<WebEnv>(async (c, next) => {
  const token = sessionToken(c);
  const now = Date.now();
  const session = await resolveSession(c.env.DB, token, now);
  if (!session) {
    const url = new URL(c.req.url);
    const back = c.req.method === "GET" ? url.pathname + url.search : "/app";
    return c.redirect(`/app/login?next=${encodeURIComponent(back)}`, 303);
  }
  if (session.slid && token) setCookie(c, COOKIE, token, { ...cookieOptions, expires: new Date(session.expiresAt) });
  c.set("session", session);
  c.set("account", await getAccountDetails(c.env.DB, session.accountId));
  await next();
});

export const clientAddress = (c: Context) => c.req.header("cf-connecting-ip") ?? "unknown";
