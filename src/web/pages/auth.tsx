/** Sign-up, sign-in, sign-out and password-reset pages (plain forms, fields `email` and `password`). */
import type { FC } from "hono/jsx";
import { MIN_PASSWORD_LENGTH } from "../../services/accounts/auth";
import { Notice, PublicPage } from "../layout";

export const LoginPage: FC<{
  error?: string;
  info?: string;
  email?: string;
  next?: string;
  action?: string;
  title?: string;
}> = (p) => (
  <PublicPage title={p.title ?? "Sign in"}>
    <h1>{p.title ?? "Sign in"}</h1>
    {p.error && <Notice kind="error">{p.error}</Notice>}
    {p.info && <Notice kind="info">{p.info}</Notice>}
    <form method="post" action={p.action ?? "/app/login"} class="stack card">
      {p.next && <input type="hidden" name="next" value={p.next} />}
      <label>
        Email
        <input type="email" name="email" autocomplete="username" required value={p.email ?? ""} />
      </label>
      <label>
        Password
        <input type="password" name="password" autocomplete="current-password" required />
      </label>
      <button type="submit">Sign in</button>
    </form>
    <p>
      New here?{" "}
      <a href={p.next ? `/app/signup?next=${encodeURIComponent(p.next)}` : "/app/signup"}>Create an account</a> ·{" "}
      <a href="/app/reset">Forgot the password?</a>
    </p>
  </PublicPage>
);

export const SignupPage: FC<{ error?: string; email?: string; next?: string; signupCredits: number }> = (p) => (
  <PublicPage title="Create an account">
    <h1>Create an account</h1>
    <p class="muted">
      Pay as you go: buy credits once, they never expire
      {p.signupCredits > 0 ? `; you start with ${p.signupCredits} free credits` : ""}. Monthly plans are in Billing.
    </p>
    {p.error && <Notice kind="error">{p.error}</Notice>}
    <form method="post" action="/app/signup" class="stack card">
      {p.next && <input type="hidden" name="next" value={p.next} />}
      <label>
        Email
        <input type="email" name="email" autocomplete="username" required value={p.email ?? ""} />
      </label>
      <label>
        Password <span class="muted">(at least {MIN_PASSWORD_LENGTH} characters)</span>
        <input type="password" name="password" autocomplete="new-password" minlength={MIN_PASSWORD_LENGTH} required />
      </label>
      <button type="submit">Create account</button>
    </form>
    <p>
      Already have an account?{" "}
      <a href={p.next ? `/app/login?next=${encodeURIComponent(p.next)}` : "/app/login"}>Sign in</a>
    </p>
  </PublicPage>
);

export const SignOutPage: FC = () => (
  <PublicPage title="Sign out">
    <h1>Sign out</h1>
    <form method="post" action="/app/logout" class="stack card">
      <button type="submit">Sign out of this browser</button>
    </form>
  </PublicPage>
);

export const ResetRequestPage: FC<{ error?: string; sent?: boolean }> = (p) => (
  <PublicPage title="Reset the password">
    <h1>Reset the password</h1>
    {p.error && <Notice kind="error">{p.error}</Notice>}
    {p.sent ? (
      <Notice kind="ok">
        If an account uses this email, a link to choose a new password is on its way. It works once, within one hour.
      </Notice>
    ) : (
      <form method="post" action="/app/reset" class="stack card">
        <label>
          Email
          <input type="email" name="email" autocomplete="username" required />
        </label>
        <button type="submit">Send the reset link</button>
      </form>
    )}
    <p>
      <a href="/app/login">Back to sign in</a>
    </p>
  </PublicPage>
);

export const ResetPasswordPage: FC<{ token: string; valid: boolean; error?: string }> = (p) => (
  <PublicPage title="Choose a new password">
    <h1>Choose a new password</h1>
    {p.error && <Notice kind="error">{p.error}</Notice>}
    {p.valid ? (
      <form method="post" action={`/app/reset/${p.token}`} class="stack card">
        <label>
          New password <span class="muted">(at least {MIN_PASSWORD_LENGTH} characters)</span>
          <input type="password" name="password" autocomplete="new-password" minlength={MIN_PASSWORD_LENGTH} required />
        </label>
        <label class="check">
          <input type="checkbox" name="secure" checked />
          <span>
            Also revoke every API key, remove the webhook URLs of the account and its brands, replace the webhook
            signing secrets and remove the brands' publishing channels (recommended if someone else may have used the
            account). Every browser and connected assistant is signed out either way.
          </span>
        </label>
        <button type="submit">Save and sign in</button>
      </form>
    ) : (
      <Notice kind="error">
        This reset link is invalid, expired or already used. <a href="/app/reset">Ask for a new one</a>.
      </Notice>
    )}
  </PublicPage>
);

/** `section`: a page opened by a link (a post review, an upload) names itself and sends nobody to the developer area. */
export const MessagePage: FC<{ title: string; message: string; kind?: "error" | "info"; section?: string }> = (p) => (
  <PublicPage title={p.title} section={p.section}>
    <h1>{p.title}</h1>
    <Notice kind={p.kind ?? "error"}>{p.message}</Notice>
    {p.section === undefined && (
      <p>
        <a href="/app">Back to the developer area</a>
      </p>
    )}
  </PublicPage>
);
