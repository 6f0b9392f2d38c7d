/**
 * Reads a page's form post. A body that is not a form (a truncated or hand-made multipart
 * upload) is the sender's mistake: 400 with a page saying so, never a 500.
 */
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";

const UNREADABLE_FORM = "The form could not be read: send it again from the page.";

export async function readForm(c: Context): Promise<Record<string, string | File>> {
  try {
    return (await c.req.parseBody()) as Record<string, string | File>;
  } catch {
    throw new HTTPException(400, { message: UNREADABLE_FORM });
  }
}
