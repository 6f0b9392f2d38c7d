import { Hono } from "hono";
import type { AppEnv } from "../http";
import { attachmentResponse, downloadResponse, findDownload } from "../services/media-jobs/downloads";
import { linkedPostMedia } from "../services/social/posts";

/** GET|HEAD /api/download/{id}: the id is the capability; no Authorization header. */
export const downloadRoutes = new Hono<AppEnv>().on(["GET", "HEAD"], "/:id", async (c) => {
  const job = await findDownload(c.env.DB, c.req.param("id"), Date.now());
  return downloadResponse(c.env.MEDIA, job, c.req.raw);
});

/** GET|HEAD /api/post-media/{token}: a post's media through the connector's signed, expiring link. */
export const postMediaRoutes = new Hono<AppEnv>().on(["GET", "HEAD"], "/:token", async (c) =>
  attachmentResponse(
    c.env.MEDIA,
    await linkedPostMedia(c.env, c.req.param("token"), Date.now()),
    c.req.raw,
    "This media link does not exist or has expired.",
  ),
);
