import type { FC } from "hono/jsx";
import { dateTime } from "../format";
import { PublicPage } from "../layout";

export const OutboxPage: FC<{
  mails: { id: string; to_email: string; subject: string; body: string; created_at: number }[];
}> = ({ mails }) => (
  <PublicPage title="Dev outbox">
    <h1>Dev outbox</h1>
    <p class="muted">Mail the server would have sent (DEV_MODE only), newest first.</p>
    {mails.length === 0 && <p>No mail yet.</p>}
    {mails.map((mail) => (
      <div class="card" data-mail-to={mail.to_email}>
        <strong>{mail.subject}</strong>
        <div class="muted">
          to {mail.to_email} · {dateTime(mail.created_at)}
        </div>
        <pre class="mail">
          {mail.body.split(/(https?:\/\/\S+)/).map((part, i) => (i % 2 ? <a href={part}>{part}</a> : part))}
        </pre>
      </div>
    ))}
  </PublicPage>
);
