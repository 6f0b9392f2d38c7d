/**
 * `/upload/<capability>`: the one-time page where a person gives the assistant a local file. A
 * plain multipart form (works without JavaScript), streamed into storage like any upload.
 */
import { capabilityPageApp } from "./capability-page";
import { AppError } from "../errors";
import { openUploadLink, uploadThroughLink } from "../services/upload-capabilities";
import { Notice, PublicPage } from "./layout";
import { MessagePage } from "./pages/auth";

export function uploadPageRoutes() {
  const routes = capabilityPageApp();
  const gone = () => <MessagePage title="Link not valid" message="This upload link is invalid, expired or already used. Ask the assistant for a new one." />;
  routes.get("/:token", async (c) => {
    const link = await openUploadLink(c.env.DB, c.req.param("token"), Date.now());
    if (!link) return c.html(gone(), 404);
    return c.html(
      <PublicPage title="Upload a file for your assistant">
        <h1>Upload a file for your assistant</h1>
        <p class="muted">Video, audio or an image (for watermarks), up to 5 GB. The link works once, until {new Date(link.expiresAt).toISOString().slice(11, 16)} UTC.</p>
        <form method="post" action={`/upload/${c.req.param("token")}`} enctype="multipart/form-data" class="card stack">
          <input type="file" name="file" accept="video/*,audio/*,image/png,image/jpeg,image/webp" required />
          <button type="submit">Upload</button>
        </form>
      </PublicPage>,
    );
  });
  routes.post("/:token", async (c) => {
    try {
      const result = await uploadThroughLink(c.env, c.req.param("token"), c.req.raw, Date.now());
      return c.html(
        <PublicPage title="Uploaded">
          <h1>Uploaded</h1>
          <Notice kind="ok">
            The file is with your assistant now (upload <code data-testid="upload-id">{result.uploadId}</code>, {result.durationSeconds} s). You can close this page.
          </Notice>
        </PublicPage>,
      );
    } catch (error) {
      if (!(error instanceof AppError) || error.code === "internal_error") throw error;
      const open = await openUploadLink(c.env.DB, c.req.param("token"), Date.now());
      if (!open) return c.html(gone(), 404);
      return c.html(<MessagePage title="Upload refused" message={`${error.message.replace(/^file: /, "")} Go back and choose another file.`} />, 400);
    }
  });
  return routes;
}
