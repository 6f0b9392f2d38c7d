/**
 * What a page answers when a request fails: a page, never the API's JSON. A refused request
 * (the CSRF check's 403, another 4xx) says what happened; anything else is logged and answered
 * with a plain apology, nothing having been changed by it.
 */
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { MessagePage } from "./pages/auth";

/** `section`: the page's own name when it is not the developer area's (see MessagePage). */
export function pageError(error: Error, c: Context, where: string, section?: string): Response | Promise<Response> {
  if (error instanceof HTTPException && error.status < 500) {
    const message =
      error.status === 403
        ? "This form was sent from another site, or without its origin; nothing was changed."
        : error.message || "Request refused.";
    return c.html(<MessagePage title="Request refused" message={message} section={section} />, error.status);
  }
  console.error(`${where} error`, error.stack ?? String(error));
  return c.html(
    <MessagePage
      title="Something went wrong"
      message="The page could not be shown; nothing was changed by it. Try again in a moment."
      section={section}
    />,
    500,
  );
}
