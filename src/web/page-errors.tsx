/**
 * What a page answers when a request fails: a page, never the API's JSON. The error goes through
 * the one translator (src/error-translator.ts) that also gives REST's body and the connector's
 * tool error: a refused request says what happened; anything else is logged there and answered
 * with a plain apology, nothing having been changed by it.
 */
import type { Context } from "hono";
import { pageMessage, translateError } from "../error-translator";
import { MessagePage } from "./pages/auth";

/** The CSRF check's 403 names what a person can understand, not the check. */
const CROSS_SITE = "This form was sent from another site, or without its origin; nothing was changed.";

/** `section`: the page's own name when it is not the developer area's (see MessagePage). */
export function pageError(error: Error, c: Context, where: string, section?: string): Response | Promise<Response> {
  const { status, message, refused } = pageMessage(translateError(error, `${where} error`));
  if (refused) {
    const words = status === 403 ? CROSS_SITE : message;
    return c.html(<MessagePage title="Request refused" message={words} section={section} />, status as 400);
  }
  return c.html(<MessagePage title="Something went wrong" message={message} section={section} />, 500);
}
