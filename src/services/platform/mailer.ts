/**
 * Outgoing mail behind one interface. Production: an HTTP mail provider with a
 * Resend-compatible JSON API (MAIL_API_URL, MAIL_API_KEY, MAIL_FROM secrets). Locally
 * (DEV_MODE=true): a D1 outbox shown at /app/dev/outbox. Mail bodies are never logged: they
 * carry reset links.
 */
import type { Env } from "../../env";
import { AppError } from "../../errors";
import { newId } from "../../lib/ids";

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  send(mail: Mail): Promise<void>;
}

class HttpMailer implements Mailer {
  constructor(
    private readonly url: string,
    private readonly apiKey: string,
    private readonly from: string,
  ) {}

  async send(mail: Mail): Promise<void> {
    const response = await fetch(this.url, {
      method: "POST",
      headers: { authorization: `Bearer ${this.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ from: this.from, to: [mail.to], subject: mail.subject, text: mail.text }),
    });
    if (!response.ok) throw new Error(`mail provider answered ${response.status}`);
  }
}

class DevOutboxMailer implements Mailer {
  constructor(private readonly db: D1Database) {}

  async send(mail: Mail): Promise<void> {
    const now = Date.now();
    await this.db
      .prepare("INSERT INTO dev_outbox (id, to_email, subject, body, created_at) VALUES (?, ?, ?, ?, ?)")
      .bind(newId("mail", now), mail.to, mail.subject, mail.text, now)
      .run();
  }
}

class UnconfiguredMailer implements Mailer {
  async send(mail: Mail): Promise<void> {
    console.warn(`mail not configured: "${mail.subject}" was not sent (set MAIL_API_URL, MAIL_API_KEY, MAIL_FROM)`);
  }
}

export function mailerFor(env: Env): Mailer {
  if (env.MAIL_API_URL && env.MAIL_API_KEY && env.MAIL_FROM)
    return new HttpMailer(env.MAIL_API_URL, env.MAIL_API_KEY, env.MAIL_FROM);
  if (env.DEV_MODE === "true") return new DevOutboxMailer(env.DB);
  return new UnconfiguredMailer();
}

export async function readDevOutbox(db: D1Database, limit = 50) {
  const rows = await db
    .prepare("SELECT id, to_email, subject, body, created_at FROM dev_outbox ORDER BY created_at DESC, id DESC LIMIT ?")
    .bind(limit)
    .all<{ id: string; to_email: string; subject: string; body: string; created_at: number }>();
  return rows.results;
}

/**
 * The origin of links sent by mail. Outside local development only PUBLIC_BASE_URL is trusted:
 * a request's origin comes from its Host header, which whoever asks for the mail controls
 * wherever a proxy or custom domain passes it on, and the link would lead someone else's mail
 * to the asker's host.
 */
export function mailLinkOrigin(env: Pick<Env, "PUBLIC_BASE_URL" | "DEV_MODE">, requestOrigin: string): string {
  if (env.PUBLIC_BASE_URL) return new URL(env.PUBLIC_BASE_URL).origin;
  if (env.DEV_MODE === "true") return requestOrigin;
  throw new AppError(
    "internal_error",
    "Links in mails need PUBLIC_BASE_URL (the public origin of the service) outside local development.",
  );
}
