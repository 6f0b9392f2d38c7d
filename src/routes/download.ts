import { Hono } from "hono";
import type { AppEnv } from "../http";
import { downloadResponse, findDownload } from "../services/downloads";

/** GET|HEAD /api/download/{id}: the id is the capability; no Authorization header. */
export const downloadRoutes = new Hono<AppEnv>().on(["GET", "HEAD"], "/:id", async (c) => {
  const job = await findDownload(c.env.DB, c.req.param("id"), Date.now());
  return downloadResponse(c.env.MEDIA, job, c.req.raw);
});
