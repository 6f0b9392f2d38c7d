/**
 * Endpoints the container backend calls: signed media URLs (streamed from and to R2, used when
 * R2 presigned URLs are not configured) and the signed job callback, whose body and signature
 * are packages/wire/src/protocol.ts (shared with the backend). Never used by clients.
 */
import { Hono } from "hono";
import type { AppEnv } from "../http";
import { unauthorized, invalidRequest } from "../errors";
import { verifyGrant } from "../lib/signing";
import { streamToR2 } from "../lib/r2-stream";
import { objectResponse } from "../services/media-jobs/downloads";
import { parseBackendJobId } from "../backend-client/stage-ids";
import { dispatchJobWebhooks } from "../services/webhooks/outbox";
import {
  CALLBACK_SIGNATURE_HEADER,
  CALLBACK_TIMESTAMP_HEADER,
  CallbackSchema,
  verifyCallbackSignature,
} from "@media-credits/wire/protocol";

/** Results are capped like uploads. */
const MAX_RESULT_BYTES = 5_000_000_000;

export const internalRoutes = new Hono<AppEnv>()
  .get("/media/:token", async (c) => {
    const grant = await verifyGrant(c.env.BACKEND_SECRET ?? "", c.req.param("token"), Date.now());
    if (!grant || grant.method !== "GET") throw unauthorized("Invalid or expired media URL.");
    // Ranges let the backend fetch large inputs on several connections at once.
    return objectResponse(
      c.env.MEDIA,
      grant.key,
      c.req.raw,
      new Headers({ "content-type": "application/octet-stream" }),
      "No such object.",
    );
  })
  .put("/media/:token", async (c) => {
    const grant = await verifyGrant(c.env.BACKEND_SECRET ?? "", c.req.param("token"), Date.now());
    if (!grant || grant.method !== "PUT") throw unauthorized("Invalid or expired media URL.");
    const body = c.req.raw.body;
    if (!body) throw invalidRequest("Empty body.");
    const declared = Number(c.req.header("content-length") ?? NaN);
    if (Number.isSafeInteger(declared) && declared > 0) {
      if (declared > MAX_RESULT_BYTES) throw invalidRequest(`The result exceeds ${MAX_RESULT_BYTES} bytes.`);
      // A known length goes to R2 as one streamed put, without copying chunks through JavaScript.
      const stored = await c.env.MEDIA.put(grant.key, body, {
        httpMetadata: grant.contentType ? { contentType: grant.contentType } : undefined,
      });
      return c.json({ stored: true, size: stored?.size ?? declared }, 200);
    }
    const { size } = await streamToR2(c.env.MEDIA, grant.key, body, {
      maxBytes: MAX_RESULT_BYTES,
      contentType: grant.contentType,
    });
    return c.json({ stored: true, size }, 200);
  })
  .post("/jobs/:jobId/callback", async (c) => {
    const body = await c.req.text();
    const valid = await verifyCallbackSignature(
      c.env.BACKEND_SECRET ?? "",
      c.req.header(CALLBACK_TIMESTAMP_HEADER),
      body,
      c.req.header(CALLBACK_SIGNATURE_HEADER),
      Date.now(),
    );
    if (!valid) throw unauthorized("Invalid callback signature.");
    let json: unknown;
    try {
      json = JSON.parse(body);
    } catch {
      throw invalidRequest("Malformed callback.");
    }
    const parsed = CallbackSchema.safeParse(json);
    const target = parseBackendJobId(c.req.param("jobId"));
    if (!parsed.success || !target || parsed.data.jobId !== c.req.param("jobId"))
      throw invalidRequest("Malformed callback.");
    const runner = c.env.MEDIA_RUNNER.get(c.env.MEDIA_RUNNER.idFromName(target.jobId));
    const recorded = await runner.backendFinished(
      target.jobId,
      target.stage,
      {
        status: parsed.data.status,
        error: parsed.data.error ? `The media could not be processed: ${parsed.data.error}` : undefined,
        outputBytes: parsed.data.outputBytes,
        ...(parsed.data.report ? { report: parsed.data.report } : {}),
      },
      target.step,
    );
    if (recorded) await dispatchJobWebhooks(c.env, target.jobId);
    return c.json({ recorded }, 200);
  });
