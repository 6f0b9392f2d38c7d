/**
 * What the developer area's pages share: refusals worded for people, signed notices carried
 * through a redirect, the plans' prices, small readers of forms and requests.
 */
import { type Context } from "hono";
import { AppError } from "../errors";
import { authSecret, signGrant, verifyGrant } from "../lib/signing";
import { paidPlans, planLookupKey, type PaidPlan } from "../services/billing/catalog";
import { ACCEPTED_IMAGE_FORMATS } from "../media/sniff";
import { stripeFor } from "../services/billing/stripe-client";
import { type WebEnv } from "./session";
import { capitalized, known } from "./format";

/** Seconds until the sign-in, sign-up and reset limiters (60 s windows, wrangler.toml) count afresh. */
export const AUTH_RETRY_AFTER_SECONDS = 60;

/**
 * A refusal a person can act on (bad input, too many attempts); anything else is a server error.
 * Given the request's context, a 429 also says when to try again (Retry-After).
 */
export function userError(error: unknown, c?: Context): { message: string; status: 400 | 429 } {
  if (error instanceof AppError && error.code === "invalid_request") return { message: error.message, status: 400 };
  if (error instanceof AppError && error.code === "rate_limited") {
    c?.header("Retry-After", String(AUTH_RETRY_AFTER_SECONDS));
    return { message: error.message, status: 429 };
  }
  throw error;
}

export const text = (value: unknown) => (typeof value === "string" ? value : "");

/** How long the notice of a redirect stays readable (a reload a while later shows the plain page). */
export const NOTICE_TTL_MS = 10 * 60 * 1000;
export interface SignedNotice {
  purpose: "notice";
  accountId: string;
  text: string;
  exp: number;
}

/**
 * The query parameter carrying a notice whose words depend on what was done (a plan change) through
 * the redirect after the form post, so a reload does not post again. Signed and bound to the
 * account: a link cannot put its own words on anyone's page.
 */
export async function noticeParameter(c: Context<WebEnv>, words: string): Promise<string> {
  const notice: SignedNotice = {
    purpose: "notice",
    accountId: c.get("account").accountId,
    text: words,
    exp: Date.now() + NOTICE_TTL_MS,
  };
  return `notice=${encodeURIComponent(await signGrant(authSecret(c.env, "Notices are not signed"), notice))}`;
}

/** The notice of the query string, when this server signed it for this account; anything else shows nothing. */
export async function signedNotice(c: Context<WebEnv>): Promise<string | undefined> {
  const token = c.req.query("notice");
  if (!token || token.length > 2048 || !c.env.AUTH_SECRET) return undefined;
  const notice = await verifyGrant<SignedNotice>(c.env.AUTH_SECRET, token, Date.now()).catch(() => null);
  return notice?.purpose === "notice" && notice.accountId === c.get("account").accountId ? notice.text : undefined;
}

/** The upload and voice services' messages in the voice form's words: no API field names, no image formats. */
export function voiceSampleMessage(message: string): string {
  const rest = message.replace(/^(file|uploadId): /, "");
  if (/^Required\b/.test(rest)) return "Choose a sample file: audio, or a video with sound.";
  return capitalized(rest.replace(`; ${ACCEPTED_IMAGE_FORMATS}`, ""));
}

export const NOTICES: Record<string, string> = {
  revoked: "Key revoked: requests with it are refused from now on.",
  "key-already-created":
    "That form already created its key (listed below, newest first); its secret was shown once, when it was made. If you did not copy it, revoke that key and create another.",
  "voice-deleted": "Cloned voice deleted.",
  "no-voice": "There is no cloned voice to delete: nothing was changed.",
  disconnected: "App disconnected: its access is revoked and its next call is refused.",
  "not-connected": "That app is not connected (any more): nothing was changed.",
  cancelled: "Plan cancelled: it stays active until the end of the paid period, then moves to Solo.",
  resumed: "Cancellation undone: the plan renews as usual.",
  "checkout-success":
    "Back from checkout. Once Stripe confirms the payment, usually within seconds, the credits appear here and in the ledger: refresh this page.",
  "checkout-cancelled": "Checkout cancelled: nothing was charged.",
  "verification-sent": "A new confirmation link is on its way; it works for 24 hours.",
  "webhook-saved": "Webhook URL saved: jobs created from now on notify it.",
  "webhook-removed": "Webhook URL removed: no more events go there.",
  "connection-saved": "Saved: the app's next call follows the new settings.",
  "template-deleted": "Template deleted: jobs already started from it go on.",
  "no-template": "That template is not there (any more): nothing was changed.",
};

/** Plan prices change rarely: one Stripe call per isolate every 5 minutes, not one per page view. */
let priceCache: { at: number; prices: Partial<Record<PaidPlan, number | null>> } | undefined;
export const PRICE_CACHE_MS = 5 * 60 * 1000;

export async function planPrices(c: Context<WebEnv>): Promise<Partial<Record<PaidPlan, number | null>>> {
  if (priceCache && Date.now() - priceCache.at < PRICE_CACHE_MS) return priceCache.prices;
  try {
    const list = await stripeFor(c.env).prices.list({
      lookup_keys: paidPlans.map(planLookupKey),
      active: true,
      limit: 10,
    });
    const prices = Object.fromEntries(
      paidPlans.map((plan) => [plan, list.data.find((p) => p.lookup_key === planLookupKey(plan))?.unit_amount ?? null]),
    );
    priceCache = { at: Date.now(), prices };
    return prices;
  } catch (error) {
    console.warn("plan prices unavailable:", error instanceof Error ? error.message : String(error));
    return {};
  }
}

/** The notice a redirect asked for (`?done=`), if it is one the pages know. */
export const notice = (c: Context<WebEnv>) => known(NOTICES, c.req.query("done"));
/** The origin the page was asked on: links and return URLs are built on it. */
export const origin = (c: Context<WebEnv>) => new URL(c.req.url).origin;
