/**
 * Resumable uploads: a file too large for one request (Workers refuse bodies over 100 MB on
 * most plans), up to 5 GB, sent as numbered parts of one R2 multipart upload. A part may be
 * sent again (the last copy wins), the received parts can be listed to resume after an
 * interruption, and completion assembles the object and ingests it as a normal upload
 * (probe, refusal, row), keeping the session's id as the upload id.
 */
import { and, asc, count, eq, gt } from "drizzle-orm";
import { orm } from "../../db/client";
import { uploads, uploadSessionParts, uploadSessions } from "../../db/schema";
import { AppError, invalidRequest, notFound } from "../../errors";
import { newId, quotedId } from "../../lib/ids";
import { readExactly } from "../../lib/byte-reader";
import { drain } from "../../lib/multipart";
import { finishUpload, MAX_UPLOAD_BYTES, safeFilename, type UploadResult } from "./uploads";
import type { Env } from "../../env";
import type { Caller } from "../accounts/accounts";

/** Every part but the last has this size: R2 wants equal parts of at least 5 MiB. */
export const RESUMABLE_PART_SIZE = 16 * 1024 * 1024;
/** A session not completed within a day is aborted by the maintenance run. */
export const RESUMABLE_SESSION_TTL_MS = 24 * 3600 * 1000;
export const MAX_OPEN_SESSIONS_PER_ACCOUNT = 20;
/** How long one complete call holds the session before another may try again. */
const COMPLETE_LEASE_MS = 5 * 60 * 1000;

export interface SessionView {
  uploadId: string;
  filename: string;
  size: number;
  contentType: string | null;
  partSize: number;
  partCount: number;
  parts: { partNumber: number; size: number; receivedAt: string }[];
  expiresAt: string;
}

type SessionRow = typeof uploadSessions.$inferSelect;
/** Whose sessions: an account's, in the calling key's mode (test and live are apart). */
type Owner = Pick<Caller, "accountId" | "mode">;

export function partSizeOf(
  partNumber: number,
  session: Pick<SessionRow, "partSize" | "partCount" | "sizeBytes">,
): number {
  return partNumber < session.partCount
    ? session.partSize
    : session.sizeBytes - (session.partCount - 1) * session.partSize;
}

async function findSession(
  db: D1Database,
  owner: Owner,
  uploadId: string,
  now: number,
): Promise<SessionRow | undefined> {
  return orm(db)
    .select()
    .from(uploadSessions)
    .where(
      and(
        eq(uploadSessions.id, uploadId),
        eq(uploadSessions.accountId, owner.accountId),
        eq(uploadSessions.mode, owner.mode),
        gt(uploadSessions.expiresAt, now),
      ),
    )
    .get();
}

async function requireSession(db: D1Database, owner: Owner, uploadId: string, now: number): Promise<SessionRow> {
  const session = await findSession(db, owner, uploadId, now);
  if (!session) throw notFound(`Resumable upload ${quotedId(uploadId)} is unknown, completed, aborted or expired.`);
  return session;
}

export async function createSession(
  env: Env,
  owner: Owner,
  request: { filename: string; size: number; contentType?: string },
  now: number,
): Promise<Omit<SessionView, "parts" | "contentType">> {
  if (request.size > MAX_UPLOAD_BYTES) throw invalidRequest("size: larger than the 5 GB (5,000,000,000 bytes) limit.");
  const { accountId } = owner;
  const db = orm(env.DB);
  const open = await db
    .select({ n: count() })
    .from(uploadSessions)
    // Per mode, like every other view of the sessions: a key could not free the other mode's.
    .where(
      and(
        eq(uploadSessions.accountId, accountId),
        eq(uploadSessions.mode, owner.mode),
        gt(uploadSessions.expiresAt, now),
      ),
    )
    .get();
  if ((open?.n ?? 0) >= MAX_OPEN_SESSIONS_PER_ACCOUNT) {
    throw invalidRequest(
      `Too many resumable uploads in progress (${MAX_OPEN_SESSIONS_PER_ACCOUNT}): complete or abort one first.`,
    );
  }
  const id = newId("upl", now);
  const objectKey = `uploads/${accountId}/${id}`;
  const partCount = Math.max(1, Math.ceil(request.size / RESUMABLE_PART_SIZE));
  const multipart = await env.MEDIA.createMultipartUpload(objectKey);
  const expiresAt = now + RESUMABLE_SESSION_TTL_MS;
  const filename = safeFilename(request.filename, "upload");
  await db.insert(uploadSessions).values({
    id,
    accountId,
    objectKey,
    r2UploadId: multipart.uploadId,
    filename,
    contentType: request.contentType ?? null,
    sizeBytes: request.size,
    partSize: RESUMABLE_PART_SIZE,
    partCount,
    createdAt: now,
    expiresAt,
    mode: owner.mode,
  });
  return {
    uploadId: id,
    filename,
    size: request.size,
    partSize: RESUMABLE_PART_SIZE,
    partCount,
    expiresAt: new Date(expiresAt).toISOString(),
  };
}

export async function describeSession(
  db: D1Database,
  owner: Owner,
  uploadId: string,
  now: number,
): Promise<SessionView> {
  const session = await requireSession(db, owner, uploadId, now);
  const parts = await orm(db)
    .select()
    .from(uploadSessionParts)
    .where(eq(uploadSessionParts.sessionId, session.id))
    .orderBy(asc(uploadSessionParts.partNumber))
    .all();
  return {
    uploadId: session.id,
    filename: session.filename,
    size: session.sizeBytes,
    contentType: session.contentType,
    partSize: session.partSize,
    partCount: session.partCount,
    parts: parts.map((part) => ({
      partNumber: part.partNumber,
      size: part.sizeBytes,
      receivedAt: new Date(part.receivedAt).toISOString(),
    })),
    expiresAt: new Date(session.expiresAt).toISOString(),
  };
}

/**
 * A refused part's body is read to its end (up to a bound, then cancelled), then the 400 goes
 * out. Cancelled at once, the local runtime dropped the connection under a large body about
 * half the time, and the client got a plain-text 500 instead of the 400.
 */
const REFUSED_BODY_DRAIN_BYTES = 2 * RESUMABLE_PART_SIZE;

export async function refuseBody(body: ReadableStream<Uint8Array> | null, message: string): Promise<never> {
  // Awaited even without a body: callers return this promise, and one already rejected when it is
  // returned counts as an unhandled rejection in workerd before the caller's await takes it.
  await (body ? drain(body, REFUSED_BODY_DRAIN_BYTES) : undefined);
  throw invalidRequest(message);
}

/**
 * Stores part `partNumber` from `body`, which must be exactly the part's length (declared by
 * Content-Length, or counted as it is read). Sending a part again replaces it.
 */
export async function putPart(
  env: Env,
  owner: Owner,
  uploadId: string,
  partNumber: number,
  body: ReadableStream<Uint8Array> | null,
  declaredLength: number | undefined,
  now: number,
): Promise<{ uploadId: string; partNumber: number; size: number; receivedParts: number; partCount: number }> {
  const session = await requireSession(env.DB, owner, uploadId, now);
  if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > session.partCount) {
    return refuseBody(body, `partNumber: must be an integer from 1 to ${session.partCount}.`);
  }
  if (session.completingUntil !== null && session.completingUntil > now) {
    return refuseBody(body, "The upload is being completed; parts can no longer be sent.");
  }
  const expected = partSizeOf(partNumber, session);
  if (declaredLength !== undefined && declaredLength !== expected) {
    return refuseBody(
      body,
      `body: part ${partNumber} must be exactly ${expected} bytes (Content-Length says ${declaredLength}).`,
    );
  }
  if (!body) throw invalidRequest(`body: part ${partNumber} must be exactly ${expected} bytes; the body is empty.`);
  // Read whole before it goes to R2 (one part, at most 16 MiB): its length is checked exactly,
  // and BYOB reads take it at several times the speed of piping the runtime's small chunks.
  const bytes = await readExactly(body, expected, REFUSED_BODY_DRAIN_BYTES);
  if (!bytes)
    throw invalidRequest(`body: part ${partNumber} must be exactly ${expected} bytes; the body was shorter or longer.`);
  const multipart = env.MEDIA.resumeMultipartUpload(session.objectKey, session.r2UploadId);
  let uploaded: R2UploadedPart;
  try {
    uploaded = await multipart.uploadPart(partNumber, bytes);
  } catch (error) {
    // Completed or aborted by another call while this part was on its way.
    const current = await findSession(env.DB, owner, uploadId, Date.now());
    if (!current || (current.completingUntil !== null && current.completingUntil > now)) {
      throw invalidRequest("The upload was completed or aborted while this part was being sent.");
    }
    throw error;
  }
  await orm(env.DB)
    .insert(uploadSessionParts)
    .values({ sessionId: session.id, partNumber, etag: uploaded.etag, sizeBytes: expected, receivedAt: now })
    .onConflictDoUpdate({
      target: [uploadSessionParts.sessionId, uploadSessionParts.partNumber],
      set: { etag: uploaded.etag, sizeBytes: expected, receivedAt: now },
    });
  const received = await orm(env.DB)
    .select({ n: count() })
    .from(uploadSessionParts)
    .where(eq(uploadSessionParts.sessionId, session.id))
    .get();
  return {
    uploadId: session.id,
    partNumber,
    size: expected,
    receivedParts: received?.n ?? 0,
    partCount: session.partCount,
  };
}

/** Lets another complete call try again (this one failed without using the session up). */
async function releaseCompletion(db: D1Database, sessionId: string): Promise<void> {
  await db.prepare("UPDATE upload_sessions SET completing_until = NULL WHERE id = ?").bind(sessionId).run();
}

async function deleteSessionRows(db: D1Database, sessionId: string): Promise<void> {
  await db.batch([
    db.prepare("DELETE FROM upload_session_parts WHERE session_id = ?").bind(sessionId),
    db.prepare("DELETE FROM upload_sessions WHERE id = ?").bind(sessionId),
  ]);
}

/** The result of an upload already made from this session (a repeated complete call). */
async function completedUpload(
  db: D1Database,
  owner: Owner,
  uploadId: string,
  now: number,
): Promise<UploadResult | undefined> {
  const row = await orm(db)
    .select({ id: uploads.id, durationMs: uploads.durationMs, expiresAt: uploads.expiresAt })
    .from(uploads)
    .where(
      and(
        eq(uploads.id, uploadId),
        eq(uploads.accountId, owner.accountId),
        eq(uploads.mode, owner.mode),
        gt(uploads.expiresAt, now),
      ),
    )
    .get();
  return (
    row && {
      uploadId: row.id,
      durationSeconds: row.durationMs / 1000,
      expiresIn: Math.round((row.expiresAt - now) / 1000),
    }
  );
}

/**
 * Assembles the parts into the object and ingests it: the usual upload result, or the usual
 * 400 for media that cannot be used (then the object and the session are gone). Calling it
 * again after it succeeded answers the same upload.
 */
export async function completeSession(env: Env, owner: Owner, uploadId: string, now: number): Promise<UploadResult> {
  const db = env.DB;
  const session = await findSession(db, owner, uploadId, now);
  if (!session) {
    const done = await completedUpload(db, owner, uploadId, now);
    if (done) return done;
    throw notFound(`Resumable upload ${quotedId(uploadId)} is unknown, aborted or expired.`);
  }
  const parts = await orm(db)
    .select()
    .from(uploadSessionParts)
    .where(eq(uploadSessionParts.sessionId, session.id))
    .orderBy(asc(uploadSessionParts.partNumber))
    .all();
  const received = new Set(parts.map((part) => part.partNumber));
  const missing = Array.from({ length: session.partCount }, (_, i) => i + 1).filter((n) => !received.has(n));
  if (missing.length > 0) {
    const listed = missing.slice(0, 10).join(", ") + (missing.length > 10 ? ", …" : "");
    throw invalidRequest(`parts: ${missing.length} of ${session.partCount} parts not received yet (${listed}).`);
  }
  const claimed = await db
    .prepare(
      "UPDATE upload_sessions SET completing_until = ?1 WHERE id = ?2 AND (completing_until IS NULL OR completing_until <= ?3)",
    )
    .bind(now + COMPLETE_LEASE_MS, session.id, now)
    .run();
  if (claimed.meta.changes !== 1)
    throw invalidRequest("The upload is already being completed by another call; ask again in a moment.");
  const bucket = env.MEDIA;
  try {
    await bucket
      .resumeMultipartUpload(session.objectKey, session.r2UploadId)
      .complete(parts.map((part) => ({ partNumber: part.partNumber, etag: part.etag })));
  } catch (error) {
    // A previous call may have assembled it and died before the row: the object is there.
    const head = await bucket.head(session.objectKey);
    if (head?.size !== session.sizeBytes) {
      await releaseCompletion(db, session.id);
      throw error;
    }
  }
  let result: UploadResult;
  try {
    result = await finishUpload(env, {
      id: session.id,
      accountId: owner.accountId,
      objectKey: session.objectKey,
      filename: session.filename,
      size: session.sizeBytes,
      now,
      mode: session.mode,
    });
  } catch (error) {
    // Refused media (finishUpload deleted the object) uses the session up; after any other
    // failure the assembled object stays and complete may be called again.
    if (error instanceof AppError) await deleteSessionRows(db, session.id);
    else await releaseCompletion(db, session.id);
    throw error;
  }
  await deleteSessionRows(db, session.id);
  return result;
}

export async function abortSession(
  env: Env,
  owner: Owner,
  uploadId: string,
  now: number,
): Promise<{ uploadId: string; status: "aborted" }> {
  const session = await requireSession(env.DB, owner, uploadId, now);
  await env.MEDIA.resumeMultipartUpload(session.objectKey, session.r2UploadId).abort();
  await deleteSessionRows(env.DB, session.id);
  return { uploadId: session.id, status: "aborted" };
}

/** Maintenance: sessions past their day are aborted in R2 and forgotten. */
export async function abortExpiredSessions(db: D1Database, bucket: R2Bucket, now: number): Promise<number> {
  const expired = await db
    .prepare("SELECT id, object_key, r2_upload_id FROM upload_sessions WHERE expires_at <= ? LIMIT 200")
    .bind(now)
    .all<{ id: string; object_key: string; r2_upload_id: string }>();
  for (const session of expired.results) {
    await bucket
      .resumeMultipartUpload(session.object_key, session.r2_upload_id)
      .abort()
      .catch(() => {});
    await deleteSessionRows(db, session.id);
  }
  return expired.results.length;
}
