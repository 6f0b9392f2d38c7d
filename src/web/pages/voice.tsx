import type { FC } from "hono/jsx";
import type { AccountDetails } from "../../services/accounts/accounts";
import type { ClonedVoiceView } from "../../services/media-jobs/voices";
import { AppPage, ConfirmedAction, Notice } from "../layout";

export const VoicePage: FC<{
  account: AccountDetails;
  voice: ClonedVoiceView | null;
  error?: string;
  notice?: string;
}> = ({ account, voice, error, notice }) => (
  <AppPage title="Cloned voice" path="/app/voice" email={account.email}>
    {error && <Notice kind="error">{error}</Notice>}
    {notice && <Notice kind="ok">{notice}</Notice>}
    <div class="card">
      {voice ? (
        <>
          <p>
            Status:{" "}
            <span class={`badge ${voice.status}`} data-testid="voice-status">
              {voice.status}
            </span>{" "}
            · registered {voice.createdAt.slice(0, 16).replace("T", " ")} UTC
          </p>
          <p class="muted">
            Use it with <code>"voice": "clone"</code> on text-to-speech and voice-change. It lasts until you replace or
            delete it.
          </p>
          <ConfirmedAction action="/app/voice/delete" kind="danger" confirm="Delete the cloned voice?">
            Delete the voice
          </ConfirmedAction>
        </>
      ) : (
        <p data-testid="voice-status">No cloned voice registered.</p>
      )}
    </div>
    <form method="post" action="/app/voice" enctype="multipart/form-data" class="card stack">
      <label>
        {voice ? "Replace with a new sample" : "Upload a sample"}{" "}
        <span class="muted">(audio or video, at least 10 seconds of speech; free)</span>
        <input type="file" name="file" accept="audio/*,video/*" required />
      </label>
      <button type="submit">Register the voice</button>
    </form>
  </AppPage>
);
