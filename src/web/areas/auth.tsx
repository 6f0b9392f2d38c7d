/** Sign-up, sign-in, sign-out, password reset, email verification and the dev outbox. */
import { Hono, type Context } from "hono";
import {
  checkResetToken,
  limitAttempts,
  normalizeEmail,
  requestPasswordReset,
  resetPassword,
  signIn,
  signUp,
} from "../../services/accounts/auth";
import { readDevOutbox } from "../../services/platform/mailer";
import { LoginPage, MessagePage, ResetPasswordPage, ResetRequestPage, SignOutPage, SignupPage } from "../pages/auth";
import { sendVerificationMail, verifyEmail } from "../../services/accounts/email-verification";
import { OutboxPage } from "../pages/outbox";
import { clientAddress, endSession, safeNext, startSession, type WebEnv } from "../session";
import { readForm } from "../form";
import { userError, text } from "../area-kit";

export function authPages(web: Hono<WebEnv>): void {
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
}
