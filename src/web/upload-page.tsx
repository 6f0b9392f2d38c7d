/**
 * `/upload/<capability>`: the one-time page where a person gives the assistant a local file. A
 * plain multipart form (works without JavaScript), streamed into storage like any upload.
 */
import { capabilityPageApp } from "./capability-page";
import { AppError } from "../errors";
import { openUploadLink, uploadLinkOf, uploadThroughLink } from "../services/media-jobs/upload-capabilities";
import { LINK_PAGES, Notice, PublicPage } from "./layout";
import { MessagePage } from "./pages/auth";

export function uploadPageRoutes() {
  const routes = capabilityPageApp(LINK_PAGES.upload.section);
  const gone = () => (
    <MessagePage
      title="Link not valid"
      message="This upload link is invalid, expired or already used. Ask the assistant for a new one."
      section={LINK_PAGES.upload.section}
    />
  );
  routes.get("/:token", async (c) => {
    const link = await uploadLinkOf(c.env.DB, c.req.param("token"), Date.now());
    if (!link) return c.html(gone(), 404);
    // Used: the page the upload redirected to (a reload shows it again, it does not upload twice).
    if (link.uploadId) {
      return c.html(
        <PublicPage title="Uploaded" section={LINK_PAGES.upload.section}>
          <h1>Uploaded</h1>
          <Notice kind="ok">
            The file is with your assistant now (upload <code data-testid="upload-id">{link.uploadId}</code>). You can
            close this page.
          </Notice>
        </PublicPage>,
      );
    }
    return c.html(
      <PublicPage title="Upload a file for your assistant" section={LINK_PAGES.upload.section}>
        <h1>Upload a file for your assistant</h1>
        <p class="muted">
          Video, audio or an image (for watermarks), up to 100 MB (the request limit of the platform; for a bigger file,
          ask the assistant to fetch it from a link). The link works once, until{" "}
          {new Date(link.expiresAt).toISOString().slice(11, 16)} UTC.
        </p>
        <form method="post" action={`/upload/${c.req.param("token")}`} enctype="multipart/form-data" class="card stack">
          <input type="file" name="file" accept="video/*,audio/*,image/png,image/jpeg,image/webp" required />
          <button type="submit">Upload</button>
        </form>
      </PublicPage>,
    );
  });
  routes.post("/:token", async (c) => {
    try {
      await uploadThroughLink(c.env, c.req.param("token"), c.req.raw, Date.now());
      return c.redirect(`/upload/${encodeURIComponent(c.req.param("token"))}`, 303);
    } catch (error) {
      if (!(error instanceof AppError) || error.code === "internal_error") throw error;
      const open = await openUploadLink(c.env.DB, c.req.param("token"), Date.now());
      if (!open) return c.html(gone(), 404);
      return c.html(
        <MessagePage
          title="Upload refused"
          message={`${error.message.replace(/^file: /, "")} Go back and choose another file.`}
          section={LINK_PAGES.upload.section}
        />,
        400,
      );
    }
  });
  return routes;
}
