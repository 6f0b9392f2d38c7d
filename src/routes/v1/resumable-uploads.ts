/**
 * Resumable uploads over HTTP: open a session, PUT numbered parts (raw bodies, any order,
 * again if need be), list what arrived, complete or abort. The part PUT is not an `openapi()`
 * route so that its body is streamed to R2, never parsed; it is documented by hand.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { createRouter } from "../../http";
import { pickErrors } from "../../errors";
import { MAX_UPLOAD_BYTES } from "../../services/media-jobs/uploads";
import {
  abortSession,
  completeSession,
  createSession,
  describeSession,
  MAX_OPEN_SESSIONS_PER_ACCOUNT,
  putPart,
  refuseBody,
  RESUMABLE_PART_SIZE,
} from "../../services/media-jobs/resumable-uploads";
import { UploadResultSchema } from "../../contract/account";
import { jsonContent } from "../../lib/openapi";

const common = { tags: ["Uploads"], security: [{ ApiKey: [] }] };

const UploadIdParam = z.object({
  uploadId: z
    .string()
    .min(1)
    .max(64)
    .openapi({
      param: { name: "uploadId", in: "path" },
      description: "The id answered when the upload was opened (64 characters at most)",
    }),
});

const CreateSchema = z
  .object({
    filename: z.string().min(1).max(255).openapi({
      description: "Name of the file (255 characters at most; kept as letters, digits, - _ .)",
      example: "keynote.mp4",
    }),
    size: z
      .int()
      .min(1)
      .max(MAX_UPLOAD_BYTES)
      .openapi({ description: "Exact size of the file in bytes, 5,000,000,000 at most", example: 1_200_000_000 }),
    contentType: z.string().max(255).optional().openapi({
      description: "Informational: the type is detected from the content when the upload completes",
      example: "video/mp4",
    }),
  })
  .openapi("ResumableUploadRequest");

const SessionSchema = z
  .object({
    uploadId: z.string().openapi({ description: "Id of the session, and of the upload once completed" }),
    filename: z.string(),
    size: z.int(),
    partSize: z.int().openapi({
      description: `Size of every part but the last (${RESUMABLE_PART_SIZE} bytes)`,
      example: RESUMABLE_PART_SIZE,
    }),
    partCount: z
      .int()
      .openapi({ description: "Parts numbered 1 to partCount; the last one holds the remaining bytes" }),
    expiresAt: z.string().openapi({
      description: "ISO time after which an uncompleted session is aborted (24 hours after it was opened)",
    }),
  })
  .openapi("ResumableUpload");

const SessionStateSchema = SessionSchema.extend({
  contentType: z.string().nullable(),
  parts: z
    .array(z.object({ partNumber: z.int(), size: z.int(), receivedAt: z.string() }))
    .openapi({ description: "Parts received so far, by number: send the others, then complete" }),
}).openapi("ResumableUploadState");

const PartResultSchema = z
  .object({
    uploadId: z.string(),
    partNumber: z.int(),
    size: z.int(),
    receivedParts: z.int().openapi({ description: "Distinct parts received so far" }),
    partCount: z.int(),
  })
  .openapi("ResumableUploadPart");

const createSessionRoute = createRoute({
  ...common,
  method: "post",
  path: "/uploads/multipart",
  operationId: "startResumableUpload",
  summary: "Open a resumable upload (files over 100 MB, up to 5 GB)",
  description:
    `For files too large for one request (Workers refuse request bodies over 100 MB on most plans) or links that may break. ` +
    `Send each part with PUT /uploads/multipart/{uploadId}/parts/{partNumber} (any order, several at a time; a part sent again replaces the earlier copy), ` +
    `list what arrived with GET /uploads/multipart/{uploadId} to resume after an interruption, then POST .../complete. ` +
    `Every part but the last is exactly partSize bytes. At most ${MAX_OPEN_SESSIONS_PER_ACCOUNT} sessions open per account; an uncompleted session is aborted after 24 hours.`,
  request: { body: { required: true, content: { "application/json": { schema: CreateSchema } } } },
  responses: { 200: jsonContent(SessionSchema, "Session opened"), ...pickErrors(400, 401) },
});

const describeRoute = createRoute({
  ...common,
  method: "get",
  path: "/uploads/multipart/{uploadId}",
  operationId: "getResumableUpload",
  summary: "A resumable upload and the parts received so far",
  request: { params: UploadIdParam },
  responses: { 200: jsonContent(SessionStateSchema, "Session state"), ...pickErrors(401, 404) },
});

const completeRoute = createRoute({
  ...common,
  method: "post",
  path: "/uploads/multipart/{uploadId}/complete",
  operationId: "completeResumableUpload",
  summary: "Assemble the parts and ingest the file",
  description:
    "Every part must have been received (400 lists the missing ones). The file is then detected and probed like a direct upload and the answer is the same: " +
    "the upload id (the session's) to pass to the tools. Media that cannot be used answer 400 and are deleted. Calling complete again after it succeeded answers the same upload.",
  request: { params: UploadIdParam },
  responses: { 200: jsonContent(UploadResultSchema, "Upload stored"), ...pickErrors(400, 401, 404) },
});

const abortRoute = createRoute({
  ...common,
  method: "delete",
  path: "/uploads/multipart/{uploadId}",
  operationId: "abortResumableUpload",
  summary: "Abort a resumable upload and discard its parts",
  request: { params: UploadIdParam },
  responses: {
    200: jsonContent(
      z.object({ uploadId: z.string(), status: z.literal("aborted") }).openapi("ResumableUploadAborted"),
      "Aborted",
    ),
    ...pickErrors(401, 404),
  },
});

const PART_PATH = /^\d{1,5}$/;

export function resumableUploadRoutes() {
  const router = createRouter();
  router.openAPIRegistry.registerPath({
    ...common,
    method: "put",
    path: "/uploads/multipart/{uploadId}/parts/{partNumber}",
    operationId: "uploadResumablePart",
    summary: "Send one part of a resumable upload (raw bytes)",
    description:
      "The body is the part's bytes, exactly partSize for every part but the last (the remainder of the file); a Content-Length that says otherwise, or a body that turns out shorter or longer, answers 400 and stores nothing. " +
      "Idempotent: sending a part again replaces it.",
    request: {
      params: UploadIdParam.extend({
        partNumber: z
          .string()
          .regex(PART_PATH)
          .openapi({ param: { name: "partNumber", in: "path" }, description: "1 to partCount", example: "1" }),
      }),
      body: {
        required: true,
        content: { "application/octet-stream": { schema: z.any().openapi({ type: "string", format: "binary" }) } },
      },
    },
    responses: { 200: jsonContent(PartResultSchema, "Part stored"), ...pickErrors(400, 401, 404) },
  });

  router.put("/uploads/multipart/:uploadId/parts/:partNumber", async (c) => {
    const { uploadId, partNumber } = c.req.param();
    const body = c.req.raw.body;
    if (uploadId.length > 64) {
      return refuseBody(body, "uploadId: at most 64 characters.");
    }
    if (!PART_PATH.test(partNumber)) {
      return refuseBody(body, "partNumber: must be a whole number from 1 to the upload's partCount.");
    }
    const header = c.req.header("content-length");
    const declared = header === undefined ? undefined : /^\d+$/.test(header) ? Number(header) : Number.NaN;
    if (Number.isNaN(declared)) {
      return refuseBody(body, "Content-Length: must be a whole number of bytes.");
    }
    return c.json(await putPart(c.env, c.get("caller"), uploadId, Number(partNumber), body, declared, Date.now()), 200);
  });

  return router
    .openapi(createSessionRoute, async (c) =>
      c.json(await createSession(c.env, c.get("caller"), c.req.valid("json"), Date.now()), 200),
    )
    .openapi(describeRoute, async (c) =>
      c.json(await describeSession(c.env.DB, c.get("caller"), c.req.valid("param").uploadId, Date.now()), 200),
    )
    .openapi(completeRoute, async (c) =>
      c.json(await completeSession(c.env, c.get("caller"), c.req.valid("param").uploadId, Date.now()), 200),
    )
    .openapi(abortRoute, async (c) =>
      c.json(await abortSession(c.env, c.get("caller"), c.req.valid("param").uploadId, Date.now()), 200),
    );
}
