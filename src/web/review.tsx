/**
 * The public review page a client opens from a shareable link (`/review/<capability>`): the post
 * as it will look (text, image or video, networks, time in the brand's zone), its review thread
 * (comments at moments of the video, "00:12 logo too big", or on the whole post), and Approve and
 * Request changes (with their name). No account needed; the link is the capability.
 *
 * Everything works without a script: a comment's time is typed, and a comment's timestamp links
 * to the page with the video starting there (`?t=12` -> `media#t=12`). With the shared script
 * (assets.ts), the time field follows the paused video and timestamps seek it in place.
 */
import type { Context } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import type { FC } from "hono/jsx";
import { capabilityPageApp } from "./capability-page";
import { AppError } from "../errors";
import { objectResponse } from "../services/media-jobs/downloads";
import { formatTimecode, mediaDurationMs, MAX_COMMENT_TEXT } from "../services/social/post-comments";
import { APPROVAL_LINK_TTL_MS, postForReview, reviewPost, type PostView } from "../services/social/posts";
import { commentAsClient } from "../services/social/review-thread";
import { LINK_PAGES, Notice, PublicPage } from "./layout";
import { MessagePage } from "./pages/auth";
import { capitalized, dateTime, known } from "./format";
import { readForm } from "./form";

/** Post states as a client reads them. */
const stateLabels: Record<string, string> = {
  draft: "draft",
  pending_approval: "waiting for approval",
  changes_requested: "changes requested",
  approved: "approved",
  scheduled: "scheduled",
  published: "published",
  failed: "failed",
  cancelled: "cancelled",
};

const DONE: Record<string, string> = {
  approved: "Thank you: the post is approved.",
  changes: "Thank you: your request for changes was sent.",
  comment: "Your comment was added.",
};

/** The service's messages name API fields; the page names its own fields instead. */
const FIELD_LABELS: Record<string, string> = {
  reviewerName: "Your name",
  authorName: "Your name",
  comment: "Message",
  text: "Comment",
  timecode: "Time",
};

function formMessage(message: string): string {
  const [, field, rest] = /^(\w+): (.*)$/s.exec(message) ?? [undefined, "", message];
  if (field === "state")
    return "This post is not waiting for a review any more: it was reviewed already or changed since.";
  const label = known(FIELD_LABELS, field);
  return label ? `${label}: ${rest}` : capitalized(rest);
}

/** The reviewer's name, kept for this link only, so each form does not ask for it again. */
const NAME_COOKIE = "review_name";

const isTimed = (post: PostView) => /^(video|audio)\//.test(post.media?.contentType ?? "");

interface PageProps {
  post: PostView;
  brandName: string;
  token: string;
  durationMs: number | null;
  name: string;
  /** Where the video starts (seconds), from `?t=` (a timestamp followed without a script). */
  seek?: number;
  error?: string;
  done?: string;
  /** What a refused comment form held, to be sent again. */
  draft?: { timecode: string; text: string; authorName: string };
}

const Thread: FC<PageProps> = ({ post, brandName, token, durationMs, name, draft, done }) => {
  const timed = isTimed(post);
  const open = post.state === "pending_approval";
  return (
    <section class="card" id="comments" data-testid="review-thread">
      <h2 style="margin-top:0">Comments{post.comments.length ? ` (${post.comments.length})` : ""}</h2>
      {done === DONE.comment && <Notice kind="ok">{done}</Notice>}
      {post.comments.length === 0 && (
        <p class="muted">
          No comment yet.
          {open && timed ? " Pause the video where something should change and say what, below." : ""}
        </p>
      )}
      <ol class="thread">
        {post.comments.map((c) => (
          <li data-testid="comment" id={`c-${c.commentId}`}>
            <div class="meta">
              {c.atSeconds !== null ? (
                <a class="timecode" href={`?t=${c.atSeconds}#player`} data-seek={String(c.atSeconds)}>
                  {c.timecode}
                </a>
              ) : (
                <span class="badge">whole post</span>
              )}
              <strong>{c.author === "client" ? c.authorName : `${brandName} (team)`}</strong>
              {c.mediaVersion !== null && post.media && c.mediaVersion !== post.media.version && (
                <span class="badge" title="Made on an earlier version of the media">
                  version {c.mediaVersion}
                </span>
              )}
              <span class="muted">{dateTime(Date.parse(c.createdAt))}</span>
            </div>
            <p>{c.text}</p>
          </li>
        ))}
      </ol>
      {open && (
        <form method="post" action={`/review/${token}/comments`} class="stack" data-once>
          <div class="row">
            {timed && (
              <label class="timefield">
                Time
                <input
                  name="timecode"
                  value={draft?.timecode ?? ""}
                  placeholder="00:12"
                  maxlength={12}
                  autocomplete="off"
                  aria-describedby="time-help"
                  data-timecode
                />
              </label>
            )}
            {timed && (
              <button type="button" class="secondary" data-use-time hidden>
                Use the video's time
              </button>
            )}
            <label class="grow">
              Your name
              <input name="authorName" maxlength={100} required value={draft?.authorName ?? name} autocomplete="name" />
            </label>
          </div>
          {timed && (
            <p class="muted hint" id="time-help">
              The moment as mm:ss or seconds{durationMs ? `, up to ${formatTimecode(durationMs)}` : ""}; empty for a
              comment on the whole post.
            </p>
          )}
          <label>
            Comment
            <textarea name="text" maxlength={MAX_COMMENT_TEXT} rows={3} required>
              {draft?.text ?? ""}
            </textarea>
          </label>
          <div class="row">
            <button type="submit">Add comment</button>
          </div>
        </form>
      )}
    </section>
  );
};

const ReviewPage: FC<PageProps> = (props) => {
  const { post, brandName, token, durationMs, name, seek, error, done } = props;
  const media = `/review/${token}/media`;
  return (
    <PublicPage title={`Review a post for ${brandName}`} section={LINK_PAGES.review.section} wide>
      <h1>Post for {brandName}</h1>
      {error && <Notice kind="error">{error}</Notice>}
      {done && done !== DONE.comment && <Notice kind="ok">{done}</Notice>}
      <div class="card" data-testid="post-preview">
        <p style="white-space:pre-wrap">{post.text}</p>
        {post.media?.contentType.startsWith("image/") && (
          <img src={media} alt="" style="max-width:100%;border-radius:8px" />
        )}
        {post.media?.contentType.startsWith("video/") && (
          <video
            id="player"
            class="player"
            src={seek ? `${media}#t=${seek}` : media}
            controls
            playsinline
            preload="metadata"
            data-review-player
          ></video>
        )}
        {post.media?.contentType.startsWith("audio/") && (
          <audio id="player" src={seek ? `${media}#t=${seek}` : media} controls data-review-player></audio>
        )}
        <p class="muted">
          On {post.networks.join(", ") || "no network yet"}
          {post.scheduledAtLocal ? ` · planned ${post.scheduledAtLocal.replace("T", " ")} (${post.timeZone})` : ""}
          {isTimed(post) && post.media
            ? ` · version ${post.media.version}${durationMs ? `, ${formatTimecode(durationMs)}` : ""}`
            : ""}{" "}
          · state{" "}
          <span class="badge" data-testid="post-state">
            {stateLabels[post.state] ?? post.state}
          </span>
        </p>
      </div>
      <Thread {...props} />
      {post.state === "pending_approval" ? (
        <form method="post" action={`/review/${token}`} class="card stack" data-testid="decision">
          <h2 style="margin:0">Your decision</h2>
          <label>
            Your name
            <input name="reviewerName" maxlength={100} required value={name} autocomplete="name" />
          </label>
          <label>
            Message{" "}
            <span class="muted">
              (to request changes: say what should change, here or in comments above; they go with your request)
            </span>
            <textarea name="comment" maxlength={2000} rows={3}></textarea>
          </label>
          <div class="row">
            <button type="submit" name="decision" value="approve">
              Approve
            </button>
            <button type="submit" name="decision" value="request_changes" class="secondary">
              Request changes
            </button>
          </div>
        </form>
      ) : (
        <p class="muted">This post is not waiting for a review any more.</p>
      )}
      {post.reviews.length > 0 && (
        <div class="card">
          {post.reviews.map((r) => (
            <p>
              <strong>{r.reviewerName}</strong> {r.decision === "approved" ? "approved" : "asked for changes"} on{" "}
              {r.at.slice(0, 16).replace("T", " ")} UTC{r.comment ? `: “${r.comment}”` : ""}
            </p>
          ))}
        </div>
      )}
    </PublicPage>
  );
};

const gone = (c: Context) =>
  c.html(
    <MessagePage
      title="Link not valid"
      message="This review link is invalid, expired or was revoked. Ask for a new one."
      section={LINK_PAGES.review.section}
    />,
    404,
  );

/** `?t=` as a start time in seconds (a timestamp link), or undefined. */
function seekOf(raw: string | undefined): number | undefined {
  const seconds = Number(raw);
  return raw && Number.isFinite(seconds) && seconds > 0 && seconds <= 86_400 ? seconds : undefined;
}

const field = (value: string | File | undefined) => (typeof value === "string" ? value : "");

/** The page for the link's post, or the "link not valid" page. */
async function renderReview(
  c: Context,
  token: string,
  extra: Pick<PageProps, "error" | "done" | "draft" | "seek">,
  status: 200 | 400 = 200,
) {
  const found = await postForReview(c.env.DB, token, Date.now());
  if (!found) return gone(c);
  return c.html(
    <ReviewPage
      post={found.post}
      brandName={found.brand.name}
      token={token}
      durationMs={await mediaDurationMs(c.env, found.row)}
      name={getCookie(c, NAME_COOKIE) ?? ""}
      {...extra}
    />,
    status,
  );
}

export function reviewRoutes() {
  const routes = capabilityPageApp(LINK_PAGES.review.section);
  const remember = (c: Context, token: string, name: string) =>
    setCookie(c, NAME_COOKIE, name.slice(0, 200), {
      path: `/review/${token}`,
      secure: true,
      httpOnly: true,
      sameSite: "Strict",
      maxAge: APPROVAL_LINK_TTL_MS / 1000,
    });

  routes.get("/:token", async (c) => {
    const token = c.req.param("token");
    const found = await postForReview(c.env.DB, token, Date.now());
    if (!found) return gone(c);
    // Thanks only for what the post shows: a link with ?done=approved cannot claim an approval.
    const outcome = c.req.query("done");
    const reviewed =
      (outcome === "approved" && found.post.reviews.at(-1)?.decision === "approved") ||
      (outcome === "changes" && found.post.state === "changes_requested") ||
      (outcome === "comment" && found.post.comments.length > 0);
    return renderReview(c, token, {
      done: reviewed ? known(DONE, outcome) : undefined,
      seek: seekOf(c.req.query("t")),
    });
  });
  routes.get("/:token/media", async (c) => {
    const found = await postForReview(c.env.DB, c.req.param("token"), Date.now());
    if (!found?.row.mediaKey) return gone(c);
    // Ranges, so the player seeks to a comment's moment without loading all that comes before.
    return objectResponse(
      c.env.MEDIA,
      found.row.mediaKey,
      c.req.raw,
      new Headers({ "content-type": found.row.mediaContentType ?? "application/octet-stream" }),
      "This post has no media.",
    );
  });
  routes.post("/:token/comments", async (c) => {
    const token = c.req.param("token");
    const form = await readForm(c);
    const draft = {
      timecode: field(form.timecode).slice(0, 40),
      text: field(form.text).slice(0, 8000),
      authorName: field(form.authorName).slice(0, 400),
    };
    const authorName = draft.authorName;
    try {
      const comment = await commentAsClient(c.env, token, draft, Date.now());
      remember(c, token, authorName);
      // Back at the thread, the video starting where the comment points.
      const at = comment.atSeconds === null ? "" : `&t=${comment.atSeconds}`;
      return c.redirect(`/review/${encodeURIComponent(token)}?done=comment${at}#comments`, 303);
    } catch (error) {
      if (!(error instanceof AppError) || error.code === "internal_error") throw error;
      if (error.code === "not_found") return gone(c);
      return renderReview(c, token, { error: formMessage(error.message), draft }, 400);
    }
  });
  routes.post("/:token", async (c) => {
    const token = c.req.param("token");
    const form = await readForm(c);
    const decision = form.decision === "approve" ? "approve" : "request_changes";
    const reviewerName = field(form.reviewerName);
    try {
      await reviewPost(
        c.env,
        token,
        { decision, reviewerName, comment: typeof form.comment === "string" ? form.comment : undefined },
        Date.now(),
      );
      remember(c, token, reviewerName);
      // Redirected, so a reload shows the outcome instead of sending the decision again.
      return c.redirect(
        `/review/${encodeURIComponent(token)}?done=${decision === "approve" ? "approved" : "changes"}`,
        303,
      );
    } catch (error) {
      if (!(error instanceof AppError) || error.code === "internal_error") throw error;
      return renderReview(c, token, { error: formMessage(error.message) }, 400);
    }
  });
  return routes;
}
