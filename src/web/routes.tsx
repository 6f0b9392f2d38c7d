/**
 * The developer area at /app: server-rendered pages over the same services as the REST API.
 * Every form post is CSRF-checked (hono/csrf: Origin / Sec-Fetch-Site must be this origin);
 * sign-in, sign-up and reset requests are rate limited per address and per email.
 */
import { Hono, type Context } from "hono";
import { csrf } from "hono/csrf";
import { trimTrailingSlash } from "hono/trailing-slash";
import { AppError } from "../errors";
import { randomToken } from "../lib/ids";
import { authSecret, signGrant, verifyGrant } from "../lib/signing";
import {
  createOwnApiKey,
  getAccountDetails,
  listApiKeys,
  restAccessRefusal,
  revokeApiKey,
  type KeyMode,
} from "../services/accounts/accounts";
import {
  checkResetToken,
  limitAttempts,
  normalizeEmail,
  requestPasswordReset,
  resetPassword,
  signIn,
  signUp,
} from "../services/accounts/auth";
import { cancelPlan, choosePlan, listPayments, resumePlan, startCreditCheckout } from "../services/billing/purchases";
import {
  assistantScopes,
  listConnectedApps,
  parseConnectionSettings,
  revokeConnectedApp,
  updateConnection,
} from "../services/accounts/connected-apps";
import { paidPlans, planLookupKey, type PaidPlan } from "../services/billing/catalog";
import { readDevOutbox } from "../services/platform/mailer";
import { ACCEPTED_IMAGE_FORMATS } from "../media/sniff";
import { stripeFor } from "../services/billing/stripe-client";
import { uploadFromMultipart } from "../services/media-jobs/uploads";
import { dailyUsage, isLedgerKind, ledgerCsv, ledgerPage, recentJobs } from "../services/billing/usage";
import { deleteClonedVoice, getClonedVoice, registerClonedVoice } from "../services/media-jobs/voices";
import { appCss, appJs } from "./assets";
import { LoginPage, MessagePage, ResetPasswordPage, ResetRequestPage, SignOutPage, SignupPage } from "./pages/auth";
import { BillingPage } from "./pages/billing";
import { ConnectedAppsPage } from "./pages/connected";
import { PostsPage } from "./pages/posts";
import { listBrands, updateBrand } from "../services/social/brands";
import { sendVerificationMail, verifyEmail } from "../services/accounts/email-verification";
import { getAccountWebhook, setAccountWebhookUrl } from "../services/webhooks/settings";
import { WebhooksPage } from "./pages/webhooks";
import { listPosts } from "../services/social/posts";
import { brandStats } from "../services/social/post-stats";
import { JobsPage } from "./pages/jobs";
import { KeysPage } from "./pages/keys";
import { LedgerPage } from "./pages/ledger";
import { OutboxPage } from "./pages/outbox";
import { OverviewPage } from "./pages/overview";
import { VoicePage } from "./pages/voice";
import { clientAddress, endSession, requireSession, safeNext, startSession, type WebEnv } from "./session";
import { pageHeaders } from "./page-headers";
import { capitalized, known } from "./format";
import { readForm } from "./form";
import { pageError } from "./page-errors";

/** Seconds until the sign-in, sign-up and reset limiters (60 s windows, wrangler.toml) count afresh. */
const AUTH_RETRY_AFTER_SECONDS = 60;

/**
 * A refusal a person can act on (bad input, too many attempts); anything else is a server error.
 * Given the request's context, a 429 also says when to try again (Retry-After).
 */
function userError(error: unknown, c?: Context): { message: string; status: 400 | 429 } {
  if (error instanceof AppError && error.code === "invalid_request") return { message: error.message, status: 400 };
  if (error instanceof AppError && error.code === "rate_limited") {
    c?.header("Retry-After", String(AUTH_RETRY_AFTER_SECONDS));
    return { message: error.message, status: 429 };
  }
  throw error;
}

const text = (value: unknown) => (typeof value === "string" ? value : "");

/** How long the notice of a redirect stays readable (a reload a while later shows the plain page). */
const NOTICE_TTL_MS = 10 * 60 * 1000;
interface SignedNotice {
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
async function noticeParameter(c: Context<WebEnv>, words: string): Promise<string> {
  const notice: SignedNotice = {
    purpose: "notice",
    accountId: c.get("account").accountId,
    text: words,
    exp: Date.now() + NOTICE_TTL_MS,
  };
  return `notice=${encodeURIComponent(await signGrant(authSecret(c.env, "Notices are not signed"), notice))}`;
}

/** The notice of the query string, when this server signed it for this account; anything else shows nothing. */
async function signedNotice(c: Context<WebEnv>): Promise<string | undefined> {
  const token = c.req.query("notice");
  if (!token || token.length > 2048 || !c.env.AUTH_SECRET) return undefined;
  const notice = await verifyGrant<SignedNotice>(c.env.AUTH_SECRET, token, Date.now()).catch(() => null);
  return notice?.purpose === "notice" && notice.accountId === c.get("account").accountId ? notice.text : undefined;
}

/** The upload and voice services' messages in the voice form's words: no API field names, no image formats. */
function voiceSampleMessage(message: string): string {
  const rest = message.replace(/^(file|uploadId): /, "");
  if (/^Required\b/.test(rest)) return "Choose a sample file: audio, or a video with sound.";
  return capitalized(rest.replace(`; ${ACCEPTED_IMAGE_FORMATS}`, ""));
}

const NOTICES: Record<string, string> = {
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
};

/** Plan prices change rarely: one Stripe call per isolate every 5 minutes, not one per page view. */
let priceCache: { at: number; prices: Partial<Record<PaidPlan, number | null>> } | undefined;
const PRICE_CACHE_MS = 5 * 60 * 1000;

async function planPrices(c: Context<WebEnv>): Promise<Partial<Record<PaidPlan, number | null>>> {
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

  // --- Sign-up, sign-in, sign-out, password reset -------------------------------------------
  const signupCredits = (c: Context<WebEnv>) => Math.max(0, Number(c.env.SIGNUP_CREDITS ?? 0) || 0);
  // `next` carries a connection in progress (/authorize) through sign-up, as through sign-in.
  web.get("/signup", (c) => c.html(<SignupPage next={c.req.query("next")} signupCredits={signupCredits(c)} />));
  web.post("/signup", async (c) => {
    const form = await readForm(c);
    try {
      await limitAttempts(c.env, "signup", clientAddress(c), text(form.email).trim().toLowerCase() || undefined);
      const account = await signUp(c.env, { email: form.email, password: form.password }, Date.now());
      await startSession(c, account.accountId, Date.now());
      // After the answer: the page never waits on, nor fails with, the mail provider.
      c.executionCtx.waitUntil(
        sendVerificationMail(c.env, account.accountId, new URL(c.req.url).origin, Date.now()).catch((error: unknown) =>
          console.error("verification mail not sent:", error instanceof Error ? error.message : String(error)),
        ),
      );
      return c.redirect(safeNext(form.next), 303);
    } catch (error) {
      const { message, status } = userError(error, c);
      return c.html(
        <SignupPage
          error={message}
          email={text(form.email)}
          next={text(form.next) || undefined}
          signupCredits={signupCredits(c)}
        />,
        status,
      );
    }
  });

  web.get("/login", (c) =>
    c.html(
      <LoginPage
        next={c.req.query("next")}
        info={c.req.query("signed_out") !== undefined ? "You are signed out." : undefined}
      />,
    ),
  );
  web.post("/login", async (c) => {
    const form = await readForm(c);
    try {
      await limitAttempts(c.env, "signin", clientAddress(c), text(form.email).trim().toLowerCase() || undefined);
      const accountId = await signIn(c.env.DB, { email: form.email, password: form.password });
      await startSession(c, accountId, Date.now());
      return c.redirect(safeNext(form.next), 303);
    } catch (error) {
      const { message, status } = userError(error, c);
      return c.html(<LoginPage error={message} email={text(form.email)} next={text(form.next) || undefined} />, status);
    }
  });

  web.get("/logout", (c) => c.html(<SignOutPage />));
  web.post("/logout", async (c) => {
    await endSession(c);
    return c.redirect("/app/login?signed_out", 303);
  });

  web.get("/reset", (c) => c.html(<ResetRequestPage />));
  web.post("/reset", async (c) => {
    const form = await readForm(c);
    try {
      const email = normalizeEmail(form.email);
      await limitAttempts(c.env, "reset", clientAddress(c), email);
      // After the answer, known email or not: the page takes the same time and never fails on the mailer.
      c.executionCtx.waitUntil(
        requestPasswordReset(c.env, email, new URL(c.req.url).origin, Date.now()).catch((error: unknown) =>
          console.error("reset mail not sent:", error instanceof Error ? error.message : String(error)),
        ),
      );
      return c.html(<ResetRequestPage sent />);
    } catch (error) {
      const { message, status } = userError(error, c);
      return c.html(<ResetRequestPage error={message} />, status);
    }
  });
  web.get("/reset/:token", async (c) => {
    const valid = (await checkResetToken(c.env, c.req.param("token"), Date.now())) !== null;
    return c.html(<ResetPasswordPage token={c.req.param("token")} valid={valid} />, valid ? 200 : 400);
  });
  web.post("/reset/:token", async (c) => {
    const form = await readForm(c);
    const token = c.req.param("token");
    try {
      await limitAttempts(c.env, "reset", clientAddress(c));
      // The box is checked by default; a browser leaves an unchecked box out of the form.
      const accountId = await resetPassword(c.env, token, form.password, Date.now(), { secure: form.secure === "on" });
      await startSession(c, accountId, Date.now());
      return c.redirect("/app", 303);
    } catch (error) {
      const { message, status } = userError(error, c);
      const valid = (await checkResetToken(c.env, token, Date.now())) !== null;
      return c.html(<ResetPasswordPage token={token} valid={valid} error={message} />, status);
    }
  });

  // The link mailed at sign-up; opening it needs no session (it may open in another browser).
  web.get("/verify/:token", async (c) => {
    const accountId = await verifyEmail(c.env, c.req.param("token"), Date.now());
    return accountId
      ? c.html(
          <MessagePage
            title="Email confirmed"
            kind="info"
            message="Thank you: the email is confirmed. API keys, webhooks and payments are open to the account."
          />,
        )
      : c.html(
          <MessagePage
            title="Link not valid"
            message="This confirmation link is invalid or expired. Sign in and ask for a new one on the overview."
          />,
          400,
        );
  });

  web.get("/dev/outbox", async (c) => {
    if (c.env.DEV_MODE !== "true") return c.html(<MessagePage title="Not found" message="No such page." />, 404);
    return c.html(<OutboxPage mails={await readDevOutbox(c.env.DB)} />);
  });

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
  const notice = (c: Context<WebEnv>) => known(NOTICES, c.req.query("done"));

  area.get("/", async (c) => {
    const account = c.get("account");
    const [usage, keys] = await Promise.all([
      dailyUsage(c.env.DB, account.accountId, Date.now()),
      listApiKeys(c.env.DB, account.accountId),
    ]);
    const unrevoked = keys.filter((k) => !k.revokedAt).length;
    return c.html(
      <OverviewPage
        account={account}
        usage={usage}
        activeKeys={unrevoked}
        keysPaused={restAccessRefusal(account.plan)}
        notice={notice(c)}
      />,
    );
  });

  area.post("/verify/send", async (c) => {
    const account = c.get("account");
    try {
      await limitAttempts(c.env, "verify", clientAddress(c), account.email);
      await sendVerificationMail(c.env, account.accountId, new URL(c.req.url).origin, Date.now());
    } catch (error) {
      return c.html(<MessagePage title="Not sent" message={userError(error, c).message} />, 429);
    }
    return c.redirect("/app?done=verification-sent", 303);
  });

  const webhooksPage = async (
    c: Context<WebEnv>,
    extra: { error?: string; notice?: string } = {},
    status: 200 | 400 = 200,
  ) => {
    const account = c.get("account");
    const [live, test, brands] = await Promise.all([
      getAccountWebhook(c.env, account.accountId, "live"),
      getAccountWebhook(c.env, account.accountId, "test"),
      listBrands(c.env, account.accountId),
    ]);
    const brandUrls = brands.map((brand) => ({
      brandId: brand.brandId,
      name: brand.name,
      webhookUrl: brand.webhookUrl,
    }));
    return c.html(
      <WebhooksPage
        account={account}
        live={live}
        test={test}
        brands={brandUrls}
        notice={extra.notice ?? notice(c)}
        error={extra.error}
      />,
      status,
    );
  };
  const webhookMode = (value: unknown): KeyMode => (value === "test" ? "test" : "live");
  area.get("/webhooks", (c) => webhooksPage(c));
  area.post("/webhooks", async (c) => {
    const form = await readForm(c);
    try {
      await setAccountWebhookUrl(c.env, c.get("account").accountId, text(form.url), webhookMode(form.mode));
    } catch (error) {
      return webhooksPage(c, { error: userError(error).message.replace(/^url: /, "URL refused: ") }, 400);
    }
    return c.redirect("/app/webhooks?done=webhook-saved", 303);
  });
  area.post("/webhooks/remove", async (c) => {
    const form = await readForm(c);
    await setAccountWebhookUrl(c.env, c.get("account").accountId, null, webhookMode(form.mode));
    return c.redirect("/app/webhooks?done=webhook-removed", 303);
  });
  area.post("/webhooks/brands/:brandId/remove", async (c) => {
    try {
      await updateBrand(c.env, c.get("account").accountId, c.req.param("brandId"), { webhookUrl: null }, Date.now());
    } catch (error) {
      if (!(error instanceof AppError && error.code === "not_found")) throw error;
      return webhooksPage(c, { error: "No such brand on this account." }, 400);
    }
    return c.redirect("/app/webhooks?done=webhook-removed", 303);
  });

  const keysPage = async (
    c: Context<WebEnv>,
    extra: { created?: { apiKey: string; name: string; mode: KeyMode }; error?: string } = {},
    status: 200 | 400 = 200,
  ) => {
    const account = c.get("account");
    const keys = await listApiKeys(c.env.DB, account.accountId);
    return c.html(
      <KeysPage
        account={account}
        keys={keys}
        refusal={restAccessRefusal(account.plan)}
        notice={notice(c)}
        formNonce={randomToken(18)}
        {...extra}
      />,
      status,
    );
  };
  area.get("/keys", (c) => keysPage(c));
  area.post("/keys", async (c) => {
    const form = await readForm(c);
    try {
      const created = await createOwnApiKey(
        c.env.DB,
        c.get("account").accountId,
        form.name,
        Date.now(),
        form.mode ?? "live",
        form.nonce,
      );
      if (!created) return c.redirect("/app/keys?done=key-already-created", 303);
      return keysPage(c, { created });
    } catch (error) {
      return keysPage(c, { error: userError(error).message }, 400);
    }
  });
  area.post("/keys/:keyId/revoke", async (c) => {
    try {
      await revokeApiKey(c.env.DB, c.req.param("keyId"), Date.now(), c.get("account").accountId);
    } catch (error) {
      if (!(error instanceof AppError && error.code === "not_found")) throw error;
      return keysPage(c, { error: "No such key on this account." }, 400);
    }
    return c.redirect("/app/keys?done=revoked", 303);
  });

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

  const voicePage = async (
    c: Context<WebEnv>,
    extra: { error?: string; notice?: string } = {},
    status: 200 | 400 = 200,
  ) => {
    const account = c.get("account");
    const voice = await getClonedVoice(c.env.DB, account).catch((error) => {
      if (error instanceof AppError && error.code === "not_found") return null;
      throw error;
    });
    return c.html(<VoicePage account={account} voice={voice} notice={notice(c)} {...extra} />, status);
  };
  area.get("/voice", (c) => voicePage(c));
  area.post("/voice", async (c) => {
    const account = c.get("account");
    try {
      const now = Date.now();
      const upload = await uploadFromMultipart(c.env, account.accountId, c.req.raw, now);
      await registerClonedVoice(c.env.DB, c.env.MEDIA, account, upload.uploadId, now);
      return voicePage(c, { notice: 'Voice registered: use "voice": "clone" on text-to-speech and voice-change.' });
    } catch (error) {
      return voicePage(c, { error: voiceSampleMessage(userError(error).message) }, 400);
    }
  });
  area.post("/voice/delete", async (c) => {
    const deleted = await deleteClonedVoice(c.env.DB, c.env.MEDIA, c.get("account")).then(
      () => true,
      (error) => {
        if (error instanceof AppError && error.code === "not_found") return false;
        throw error;
      },
    );
    return c.redirect(`/app/voice?done=${deleted ? "voice-deleted" : "no-voice"}`, 303);
  });

  const billingPage = async (
    c: Context<WebEnv>,
    extra: { error?: string; notice?: string } = {},
    status: 200 | 400 = 200,
  ) => {
    const account = c.get("account");
    const ready = Boolean(c.env.STRIPE_SECRET_KEY);
    const [payments, prices] = await Promise.all([
      listPayments(c.env.DB, account.accountId),
      ready ? planPrices(c) : Promise.resolve({}),
    ]);
    const checkout = c.req.query("checkout");
    const shown =
      notice(c) ?? (await signedNotice(c)) ?? (checkout ? known(NOTICES, `checkout-${checkout}`) : undefined);
    return c.html(
      <BillingPage
        account={account}
        payments={payments}
        planPrices={prices}
        paymentsReady={ready}
        notice={shown}
        {...extra}
      />,
      status,
    );
  };
  const billingAction =
    (action: (c: Context<WebEnv>, form: Record<string, unknown>) => Promise<Response>) =>
    async (c: Context<WebEnv>) => {
      const form = await readForm(c);
      try {
        return await action(c, form);
      } catch (error) {
        return billingPage(c, { error: userError(error).message }, 400);
      }
    };
  const origin = (c: Context<WebEnv>) => new URL(c.req.url).origin;
  area.get("/billing", (c) => billingPage(c));
  area.post(
    "/billing/checkout",
    billingAction(async (c, form) =>
      c.redirect(await startCreditCheckout(c.env, c.get("account").accountId, form.offer, origin(c), Date.now()), 303),
    ),
  );
  area.post(
    "/billing/plan",
    billingAction(async (c, form) => {
      const outcome = await choosePlan(c.env, c.get("account").accountId, form.plan, origin(c), Date.now());
      if ("redirect" in outcome) return c.redirect(outcome.redirect, 303);
      if (c.env.AUTH_SECRET) return c.redirect(`/app/billing?${await noticeParameter(c, outcome.done)}`, 303);
      c.set("account", await getAccountDetails(c.env.DB, c.get("account").accountId));
      return billingPage(c, { notice: outcome.done });
    }),
  );
  area.post(
    "/billing/cancel",
    billingAction(async (c) => {
      await cancelPlan(c.env, c.get("account").accountId);
      return c.redirect("/app/billing?done=cancelled", 303);
    }),
  );
  area.post(
    "/billing/resume",
    billingAction(async (c) => {
      await resumePlan(c.env, c.get("account").accountId);
      return c.redirect("/app/billing?done=resumed", 303);
    }),
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

  const connectedPage = async (c: Context<WebEnv>, extra: { error?: string } = {}, status: 200 | 400 = 200) => {
    const account = c.get("account");
    const apps = c.env.OAUTH_PROVIDER ? await listConnectedApps(c.env.OAUTH_PROVIDER, account.accountId, c.env.DB) : [];
    const connectorUrl = `${new URL(c.req.url).origin}/api/mcp`;
    return c.html(
      <ConnectedAppsPage account={account} apps={apps} connectorUrl={connectorUrl} notice={notice(c)} {...extra} />,
      status,
    );
  };
  area.get("/connected", (c) => connectedPage(c));
  area.post("/connected/:grantId/settings", async (c) => {
    const form = await readForm(c);
    const account = c.get("account");
    const apps = c.env.OAUTH_PROVIDER ? await listConnectedApps(c.env.OAUTH_PROVIDER, account.accountId, c.env.DB) : [];
    const connection = apps.find((app) => app.grantId === c.req.param("grantId"))?.connection;
    if (!connection)
      return connectedPage(
        c,
        {
          error: "That app is not connected (any more), or was connected before settings existed: nothing was changed.",
        },
        400,
      );
    try {
      const settings = parseConnectionSettings({
        scopes: assistantScopes.filter((scope) => form[`scope_${scope}`] === "on"),
        dailyCreditCap: form.daily_cap,
        perCallCreditCap: form.call_cap,
      });
      await updateConnection(c.env.DB, account.accountId, connection.connectionId, settings);
    } catch (error) {
      return connectedPage(c, { error: userError(error).message }, 400);
    }
    return c.redirect("/app/connected?done=connection-saved", 303);
  });
  area.post("/connected/:grantId/revoke", async (c) => {
    // Served without the OAuth provider (plain http on a non-loopback host), no app can be connected.
    if (!c.env.OAUTH_PROVIDER) return c.redirect("/app/connected?done=disconnected", 303);
    const gone = await revokeConnectedApp(
      c.env.OAUTH_PROVIDER,
      c.get("account").accountId,
      c.req.param("grantId"),
    ).then(
      () => false,
      (error) => {
        if (!(error instanceof AppError && error.code === "not_found")) throw error;
        return true;
      },
    );
    // A second click (or another tab) finds it gone already: said as such, not as a disconnection.
    return c.redirect(`/app/connected?done=${gone ? "not-connected" : "disconnected"}`, 303);
  });

  web.all("*", (c) => c.html(<MessagePage title="Not found" message="No such page in the developer area." />, 404));
  web.onError((error, c) => pageError(error, c, "developer area"));
  return web;
}
