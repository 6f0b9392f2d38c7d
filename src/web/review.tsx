/**
 * The public review page a client opens from a shareable link (`/review/<capability>`): the post
 * as it will look (text, image or video, networks, time in the brand's zone), with Approve and
 * Request changes (comment and name). No account needed; the link is the capability.
 */
import type { Context } from "hono";
import type { FC } from "hono/jsx";
import { capabilityPageApp } from "./capability-page";
import { AppError } from "../errors";
import { postForReview, reviewPost, type PostView } from "../services/social/posts";
import { LINK_PAGES, Notice, PublicPage } from "./layout";
import { MessagePage } from "./pages/auth";
import { capitalized, known } from "./format";
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
};

/** The service's messages name API fields; the page names its own fields instead. */
function formMessage(message: string): string {
  const [, field, rest] = /^(\w+): (.*)$/s.exec(message) ?? [undefined, "", message];
  if (field === "state")
    return "This post is not waiting for a review any more: it was reviewed already or changed since.";
  const label = field === "reviewerName" ? "Your name" : field === "comment" ? "Comment" : "";
  return label ? `${label}: ${rest}` : capitalized(rest);
}

const ReviewPage: FC<{ post: PostView; brandName: string; token: string; error?: string; done?: string }> = ({
  post,
  brandName,
  token,
  error,
  done,
}) => (
  <PublicPage title={`Review a post for ${brandName}`} section={LINK_PAGES.review.section}>
    <h1>Post for {brandName}</h1>
    {error && <Notice kind="error">{error}</Notice>}
    {done && <Notice kind="ok">{done}</Notice>}
    <div class="card" data-testid="post-preview">
      <p style="white-space:pre-wrap">{post.text}</p>
      {post.media?.contentType.startsWith("image/") && (
        <img src={`/review/${token}/media`} alt="" style="max-width:100%;border-radius:8px" />
      )}
      {post.media?.contentType.startsWith("video/") && (
        <video src={`/review/${token}/media`} controls style="max-width:100%;border-radius:8px"></video>
      )}
      {post.media?.contentType.startsWith("audio/") && <audio src={`/review/${token}/media`} controls></audio>}
      <p class="muted">
        On {post.networks.join(", ") || "no network yet"}
        {post.scheduledAtLocal ? ` · planned ${post.scheduledAtLocal.replace("T", " ")} (${post.timeZone})` : ""} ·
        state{" "}
        <span class="badge" data-testid="post-state">
          {stateLabels[post.state] ?? post.state}
        </span>
      </p>
    </div>
    {post.state === "pending_approval" ? (
      <form method="post" action={`/review/${token}`} class="card stack">
        <label>
          Your name
          <input name="reviewerName" maxlength={100} required />
        </label>
        <label>
          Comment <span class="muted">(needed to request changes)</span>
          <textarea
            name="comment"
            maxlength={2000}
            rows={3}
            style="font:inherit;padding:8px;border:1px solid #c9ced6;border-radius:7px"
          ></textarea>
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

const gone = (c: Context) =>
  c.html(
    <MessagePage
      title="Link not valid"
      message="This review link is invalid, expired or was revoked. Ask for a new one."
      section={LINK_PAGES.review.section}
    />,
    404,
  );

export function reviewRoutes() {
  const routes = capabilityPageApp(LINK_PAGES.review.section);
  routes.get("/:token", async (c) => {
    const found = await postForReview(c.env.DB, c.req.param("token"), Date.now());
    if (!found) return gone(c);
    // Thanks only for what the post shows: a link with ?done=approved cannot claim an approval.
    const outcome = c.req.query("done");
    const reviewed =
      (outcome === "approved" && found.post.reviews.at(-1)?.decision === "approved") ||
      (outcome === "changes" && found.post.state === "changes_requested");
    return c.html(
      <ReviewPage
        post={found.post}
        brandName={found.brand.name}
        token={c.req.param("token")}
        done={reviewed ? known(DONE, outcome) : undefined}
      />,
    );
  });
  routes.get("/:token/media", async (c) => {
    const found = await postForReview(c.env.DB, c.req.param("token"), Date.now());
    const object = found?.row.mediaKey ? await c.env.MEDIA.get(found.row.mediaKey) : null;
    if (!found || !object) return gone(c);
    return new Response(object.body, {
      headers: {
        "content-type": found.row.mediaContentType ?? "application/octet-stream",
        "content-length": String(object.size),
        "cache-control": "private, max-age=300",
      },
    });
  });
  routes.post("/:token", async (c) => {
    const token = c.req.param("token");
    const form = await readForm(c);
    const decision = form.decision === "approve" ? "approve" : "request_changes";
    try {
      await reviewPost(
        c.env,
        token,
        {
          decision,
          reviewerName: String(form.reviewerName ?? ""),
          comment: typeof form.comment === "string" ? form.comment : undefined,
        },
        Date.now(),
      );
      // Redirected, so a reload shows the outcome instead of sending the decision again.
      return c.redirect(
        `/review/${encodeURIComponent(token)}?done=${decision === "approve" ? "approved" : "changes"}`,
        303,
      );
    } catch (error) {
      if (!(error instanceof AppError) || error.code === "internal_error") throw error;
      const found = await postForReview(c.env.DB, token, Date.now());
      if (!found) return gone(c);
      return c.html(
        <ReviewPage post={found.post} brandName={found.brand.name} token={token} error={formMessage(error.message)} />,
        400,
      );
    }
  });
  return routes;
}
