/**
 * POST /api/v1/uploads. Not an `openapi()` route on purpose: its validator would parse the
 * multipart body with formData(), holding the whole file in memory. The handler streams the
 * body instead, and the operation is documented in the registry by hand.
 */
import { z } from "@hono/zod-openapi";
import { createRouter } from "../../http";
import { invalidInput } from "../../error-translator";
import { invalidRequest, pickErrors } from "../../errors";
import { uploadFromMultipart, uploadFromUrl } from "../../services/media-jobs/uploads";
import { UploadResultSchema } from "../../contract/account";

const UrlUploadSchema = z
  .object({
    url: z.string().min(1).max(4096).openapi({
      description: "Public http(s) URL of the media, 5 GB maximum; at most 4096 characters",
      format: "uri",
    }),
  })
  .openapi("UrlUploadRequest");

export function uploadRoutes() {
  const router = createRouter();
  router.openAPIRegistry.registerPath({
    method: "post",
    path: "/uploads",
    operationId: "createUpload",
    tags: ["Uploads"],
    summary: "Ingest a video, audio or image file (multipart) or a public URL",
    description:
      "Type is detected from the content: video mp4, mov, m4v, webm, mkv, avi; audio mp3, wav, m4a/aac, ogg/opus, flac; images png, jpeg, webp (watermarks only, durationSeconds 0). " +
      "5 GB (5,000,000,000 bytes) and 4 hours at most. URL ingestion reaches only public http(s) addresses, redirects included.",
    security: [{ ApiKey: [] }],
    request: {
      body: {
        required: true,
        content: {
          "multipart/form-data": { schema: z.object({ file: z.any().openapi({ type: "string", format: "binary" }) }) },
          "application/json": { schema: UrlUploadSchema },
        },
      },
    },
    responses: {
      200: { description: "Upload stored", content: { "application/json": { schema: UploadResultSchema } } },
      ...pickErrors(400, 401),
    },
  });

  router.post("/uploads", async (c) => {
    // Media types are case-insensitive (RFC 9110).
    const contentType = (c.req.header("content-type") ?? "").toLowerCase();
    const caller = c.get("caller");
    const now = Date.now();
    if (contentType.startsWith("multipart/form-data")) {
      return c.json(await uploadFromMultipart(c.env, caller.accountId, c.req.raw, now, caller.mode), 200);
    }
    if (/^application\/json\b/.test(contentType)) {
      const body = await c.req.json().catch(() => {
        throw invalidRequest("Malformed JSON in request body.");
      });
      const parsed = UrlUploadSchema.safeParse(body);
      if (!parsed.success) throw invalidInput(parsed.error);
      const policy = { allowPrivate: c.env.ALLOW_PRIVATE_URLS === "true", resolverUrl: c.env.DNS_RESOLVER_URL };
      return c.json(await uploadFromUrl(c.env, caller.accountId, parsed.data.url, policy, now, caller.mode), 200);
    }
    throw invalidRequest("Send multipart/form-data with a file field, or application/json with a url field.");
  });
  return router;
}
