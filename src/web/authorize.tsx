/**
 * `/authorize` of the connector's OAuth: the developer-area sign-in form when there is no
 * session (fields `email` and `password`, back here afterwards), then a consent page naming
 * the client and where its tokens go, with Allow and Deny. The library validates the request
 * (client, redirect URI, PKCE) and binds the consent form to this browser.
 */
import { AuthorizationError, CimdFetchError } from "@cloudflare/workers-oauth-provider";
import { Hono, type Context } from "hono";
import { csrf } from "hono/csrf";
import { getAccountDetails } from "../services/accounts/accounts";
import { isEmailVerified } from "../services/accounts/email-verification";
import { resolveSession } from "../services/accounts/sessions";
import type { McpGrantProps } from "../mcp/oauth";
import { AppError } from "../errors";
import {
  assistantScopes,
  createConnection,
  DEFAULT_DAILY_CREDIT_CAP,
  parseConnectionSettings,
} from "../services/accounts/connected-apps";
import { LINK_PAGES } from "./layout";
import { LoginPage, MessagePage } from "./pages/auth";
import { ConsentPage } from "./pages/consent";
import { sessionToken, type WebEnv } from "./session";
import { pageHeaders } from "./page-headers";
import { capitalized } from "./format";
import { readForm } from "./form";

function oauthOf(c: Context<WebEnv>) {
  const oauth = c.env.OAUTH_PROVIDER;
  if (!oauth) throw new Error("OAuth provider helpers missing: /authorize must be served through oauthProviderFor()");
  return oauth;
}

/** The client's redirect URI with error=invalid_request (RFC 6749 4.1.2.1): it started without PKCE. */
function pkceRequired(redirectUri: string, state: string | undefined): string {
  const url = new URL(redirectUri);
  url.searchParams.set("error", "invalid_request");
  url.searchParams.set("error_description", "PKCE (code_challenge with S256) is required.");
  if (state) url.searchParams.set("state", state);
  return url.toString();
}

/** The library's descriptions ("Invalid redirect URI", "...; start again") as one sentence of a message. */
const sentence = (text: string) => {
  const trimmed = text.trim().replace(/[;,]\s*start again\.?$/i, "");
  return `${capitalized(trimmed)}${/[.!?]$/.test(trimmed) ? "" : "."}`;
};

/** Errors the person can do nothing about except start again, shown here, never redirected. */
function refusal(c: Context<WebEnv>, error: unknown) {
  if (error instanceof AuthorizationError && error.redirectTo) return c.redirect(error.redirectTo, 302);
  if (error instanceof AuthorizationError || error instanceof CimdFetchError) {
    const message =
      error instanceof AuthorizationError
        ? error.description || "This authorization request is not valid."
        : "This app could not be verified.";
    return c.html(
      <MessagePage
        title="Cannot connect this app"
        message={`${sentence(message)} Start the connection again from the app.`}
        section={LINK_PAGES.connect.section}
      />,
      400,
    );
  }
  throw error;
}

function unverifiedEmail(c: Context<WebEnv>) {
  return c.html(
    <MessagePage
      title="Confirm your email first"
      message="Open the link mailed to the account's address (the developer area's overview sends it again), then start the connection again from the app."
      section={LINK_PAGES.connect.section}
    />,
    400,
  );
}

export function authorizeRoutes() {
  const routes = new Hono<WebEnv>();
  routes.use("*", csrf());
  routes.use("*", pageHeaders);
  routes.get("/", async (c) => {
    const url = new URL(c.req.url);
    try {
      const oauth = oauthOf(c);
      // Checked before the sign-in: nobody signs in only to learn the link could never work.
      const request = await oauth.parseAuthRequest(c.req.raw);
      // OAuth 2.1 with PKCE for every client: the library asks it of public clients only.
      if (!request.codeChallenge) return c.redirect(pkceRequired(request.redirectUri, request.state), 302);
      const session = await resolveSession(c.env.DB, sessionToken(c), Date.now());
      if (!session) {
        return c.html(
          <LoginPage
            title="Sign in to connect an app"
            action="/app/login"
            next={url.pathname + url.search}
            info="Sign in to your account to let the app use it."
          />,
        );
      }
      const account = await getAccountDetails(c.env.DB, session.accountId);
      // An assistant spends the account's credits and posts in its name: the email must be the owner's.
      if (!account.emailVerified) return unverifiedEmail(c);
      const details = await oauth.describeConsent(request);
      const consent = await oauth.beginConsent(request);
      const page = await c.html(
        <ConsentPage
          details={details}
          handle={consent.handle}
          email={account.email}
          accountId={account.accountId}
          defaultDailyCap={DEFAULT_DAILY_CREDIT_CAP}
        />,
      );
      consent.headers.forEach((value, name) => page.headers.append(name, value));
      return page;
    } catch (error) {
      return refusal(c, error);
    }
  });
  routes.post("/", async (c) => {
    const session = await resolveSession(c.env.DB, sessionToken(c), Date.now());
    if (!session)
      return c.html(
        <MessagePage
          title="Signed out"
          message="Your session ended. Start the connection again from the app."
          section={LINK_PAGES.connect.section}
        />,
        400,
      );
    const form = await readForm(c);
    const handle = typeof form.handle === "string" ? form.handle : "";
    // The page named one account; a grant must not go to another signed in since (another tab).
    if (form.decision === "approve" && form.account !== session.accountId) {
      return c.html(
        <MessagePage
          title="Signed in as another account"
          message="This page was shown for another account than the one signed in now. Start the connection again from the app."
          section={LINK_PAGES.connect.section}
        />,
        400,
      );
    }
    // Checked again at the grant, not only when the page was shown: a post may come without the page.
    if (form.decision === "approve" && !(await isEmailVerified(c.env.DB, session.accountId))) return unverifiedEmail(c);
    try {
      const oauth = oauthOf(c);
      if (form.decision !== "approve") {
        const denied = await oauth.denyConsent(c.req.raw, handle);
        return new Response(null, { status: 302, headers: denied.headers });
      }
      // What the owner allows: checked boxes and caps (an empty cap is none). Refused with a page that says why.
      let settings;
      try {
        settings = parseConnectionSettings({
          scopes: assistantScopes.filter((scope) => form[`scope_${scope}`] === "on"),
          dailyCreditCap: form.daily_cap,
          perCallCreditCap: form.call_cap,
        });
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        return c.html(
          <MessagePage
            title="Nothing was connected"
            message={`${error.message} Start the connection again from the app.`}
            section={LINK_PAGES.connect.section}
          />,
          400,
        );
      }
      const approved = await oauth.approveConsent(c.req.raw, handle, { scope: settings.scopes });
      const connectionId = await createConnection(c.env.DB, session.accountId, settings, Date.now());
      const props: McpGrantProps = { accountId: session.accountId, connectionId };
      const { redirectTo } = await oauth.completeAuthorization({
        request: approved.request,
        userId: session.accountId,
        metadata: { approvedAt: Date.now(), connectionId },
        scope: settings.scopes,
        props,
      });
      approved.headers.set("Location", redirectTo);
      return new Response(null, { status: 302, headers: approved.headers });
    } catch (error) {
      return refusal(c, error);
    }
  });
  return routes;
}
