/**
 * Ingestion of media: a multipart body or a public URL is streamed into R2 (never buffered
 * whole), then identified from its content and probed for its duration with ranged reads.
 * A refused file leaves nothing behind: its object is deleted and no row is written.
 */
import { and, eq, gt } from "drizzle-orm";
import { orm } from "../../db/client";
import { uploads } from "../../db/schema";
import { createMultipartParser, drain } from "../../lib/multipart";
import { AppError, invalidRequest } from "../../errors";
import { newId, quotedId } from "../../lib/ids";
import { fetchPublic, UnsafeUrlError, type UrlPolicy } from "../../lib/public-url";
import { BodyTooLargeError, streamToR2 } from "../../lib/r2-stream";
import { probeR2Object, UnsupportedMediaError, type MediaKind, type ProbeResult } from "../../media/probe";
import { canProbeOnBackend, probeOnBackend } from "../../backend-client/probe";
import { canIngestOnBackend, IngestRefusedError, ingestOnBackend } from "../../backend-client/ingest";
import { DurationUnknownError } from "../../media/types";
import type { Env } from "../../env";
import type { KeyMode } from "../accounts/accounts";

export const MAX_UPLOAD_BYTES = 5_000_000_000;
export const UPLOAD_TTL_MS = 3 * 3600 * 1000;
export const MAX_DURATION_MS = 4 * 3600 * 1000;

export interface UploadResult {
  uploadId: string;
  durationSeconds: number;
  expiresIn: number;
}

export interface StoredUpload {
  id: string;
  accountId: string;
  objectKey: string;
  filename: string;
  kind: MediaKind;
  container: string;
  mimeType: string;
  sizeBytes: number;
  durationMs: number;
  probe: ProbeResult;
  expiresAt: number;
}

/**
 * A file name safe for storage keys and Content-Disposition (letters, digits, - _ .): accents
 * folded (`vidéo` is `video`, not `vide_o`), other runs of characters become `_`.
 */
export function safeFilename(name: string | undefined, fallback: string): string {
  const base = (name ?? "").split(/[\\/]/).pop() ?? "";
  const cleaned = base
    .normalize("NFKD")
    .replace(/\p{M}+/gu, "")
    .replace(/[^\w.-]+/g, "_")
    .replace(/^[._]+/, "")
    .slice(0, 120);
  return cleaned || fallback;
}

const tooLarge = () => invalidRequest("file: larger than the 5 GB (5,000,000,000 bytes) limit.");

export async function finishUpload(
  env: Env,
  p: {
    id: string;
    accountId: string;
    objectKey: string;
    filename: string;
    size: number;
    now: number;
    mode?: KeyMode;
    field?: "file" | "url";
  },
): Promise<UploadResult> {
  const { DB: db, MEDIA: bucket } = env;
  let probe: ProbeResult;
  try {
    if (p.size === 0) throw new UnsupportedMediaError("the file is empty");
    probe = await probeR2Object(bucket, p.objectKey, p.size).catch((error: unknown) => {
      if (error instanceof DurationUnknownError && canProbeOnBackend(env))
        return probeOnBackend(env, p.objectKey, error);
      throw error;
    });
    if (probe.durationMs > MAX_DURATION_MS)
      throw new UnsupportedMediaError("media longer than 4 hours are not accepted");
  } catch (error) {
    await bucket.delete(p.objectKey);
    if (error instanceof UnsupportedMediaError) throw invalidRequest(`${p.field ?? "file"}: ${error.message}`);
    throw error;
  }
  const expiresAt = p.now + UPLOAD_TTL_MS;
  const filename = /\.[A-Za-z0-9]{2,4}$/.test(p.filename) ? p.filename : `${p.filename}.${probe.container}`;
  await db
    .prepare(
      `INSERT INTO uploads (id, account_id, object_key, filename, kind, container, mime_type, size_bytes, duration_ms, probe, created_at, expires_at, mode)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .bind(
      p.id,
      p.accountId,
      p.objectKey,
      filename,
      probe.kind,
      probe.container,
      probe.mimeType,
      p.size,
      probe.durationMs,
      JSON.stringify(probe),
      p.now,
      expiresAt,
      p.mode ?? "live",
    )
    .run();
  return { uploadId: p.id, durationSeconds: probe.durationMs / 1000, expiresIn: UPLOAD_TTL_MS / 1000 };
}

async function store(bucket: R2Bucket, key: string, body: ReadableStream<Uint8Array>, limitError: () => AppError) {
  try {
    return await streamToR2(bucket, key, body, { maxBytes: MAX_UPLOAD_BYTES });
  } catch (error) {
    if (error instanceof BodyTooLargeError) throw limitError();
    throw error;
  }
}

/** multipart/form-data with a `file` field, parsed as a stream. */
export async function uploadFromMultipart(
  env: Env,
  accountId: string,
  request: Request,
  now: number,
  mode: KeyMode = "live",
): Promise<UploadResult> {
  const bucket = env.MEDIA;
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > MAX_UPLOAD_BYTES + 1024 * 1024) throw tooLarge();
  const id = newId("upl", now);
  const objectKey = `uploads/${accountId}/${id}`;
  let stored: { size: number; filename: string } | undefined;
  // Parts are handed over as they arrive, so two `file` parts would store side by side into one
  // key: the first one claims it at once, a second makes the request a 400.
  let fileParts = 0;
  const parser = createMultipartParser(request);
  try {
    await parser.forEachPart(async (part) => {
      if (part.name !== "file" || ++fileParts > 1) {
        await drain(part.body);
        return;
      }
      const { size } = await store(bucket, objectKey, part.body, tooLarge);
      stored = { size, filename: safeFilename(part.filename, "upload") };
    });
    if (fileParts > 1) throw invalidRequest(`file: one file per upload; this request has ${fileParts} file fields.`);
  } catch (error) {
    await bucket.delete(objectKey);
    throw error;
  }
  if (!stored) throw invalidRequest("file: Required (multipart/form-data field named file).");
  return finishUpload(env, { id, accountId, objectKey, now, mode, ...stored });
}

/**
 * `{url}`: downloads a public http(s) URL under the SSRF rules: through the backend when one is
 * configured, which connects to the address it checked (src/backend-client/ingest.ts), otherwise
 * streamed by this Worker.
 */
export async function uploadFromUrl(
  env: Env,
  accountId: string,
  rawUrl: string,
  policy: UrlPolicy,
  now: number,
  mode: KeyMode = "live",
): Promise<UploadResult> {
  if (canIngestOnBackend(env)) return uploadThroughBackend(env, accountId, rawUrl, policy, now, mode);
  const bucket = env.MEDIA;
  let response: Response;
  try {
    response = await fetchPublic(rawUrl, policy);
  } catch (error) {
    if (error instanceof UnsafeUrlError) throw invalidRequest(`url: refused, ${error.message}.`);
    throw invalidRequest(`url: the download failed (${error instanceof Error ? error.message : "network error"}).`);
  }
  if (!response.ok || !response.body) {
    await response.body?.cancel();
    throw invalidRequest(`url: the server answered HTTP ${response.status}.`);
  }
  const declared = Number(response.headers.get("content-length") ?? "0");
  const urlTooLarge = () => invalidRequest("url: the file is larger than the 5 GB (5,000,000,000 bytes) limit.");
  if (declared > MAX_UPLOAD_BYTES) {
    await response.body.cancel();
    throw urlTooLarge();
  }
  const id = newId("upl", now);
  const objectKey = `uploads/${accountId}/${id}`;
  let size: number;
  try {
    ({ size } = await store(bucket, objectKey, response.body, urlTooLarge));
  } catch (error) {
    await bucket.delete(objectKey);
    if (error instanceof AppError) throw error;
    throw invalidRequest(`url: the download broke off (${error instanceof Error ? error.message : "network error"}).`);
  }
  const filename = safeFilename(decodedPath(new URL(response.url || rawUrl).pathname), "download");
  return finishUpload(env, { id, accountId, objectKey, filename, size, now, mode, field: "url" });
}

async function uploadThroughBackend(
  env: Env,
  accountId: string,
  rawUrl: string,
  policy: UrlPolicy,
  now: number,
  mode: KeyMode,
): Promise<UploadResult> {
  const id = newId("upl", now);
  const objectKey = `uploads/${accountId}/${id}`;
  let ingested;
  try {
    ingested = await ingestOnBackend(env, rawUrl, objectKey, MAX_UPLOAD_BYTES, policy.allowPrivate);
  } catch (error) {
    await env.MEDIA.delete(objectKey);
    if (error instanceof IngestRefusedError) throw invalidRequest(`url: ${error.message}.`);
    throw error;
  }
  const filename = safeFilename(decodedPath(new URL(ingested.finalUrl).pathname), "download");
  return finishUpload(env, { id, accountId, objectKey, filename, size: ingested.bytes, now, mode, field: "url" });
}

/** A URL path percent-decoded where it is valid UTF-8 (`caf%E9.mp4`, Latin-1, stays as sent). */
function decodedPath(pathname: string): string {
  try {
    return decodeURIComponent(pathname);
  } catch {
    return pathname;
  }
}

/**
 * An upload the caller may use as `field`: it must exist, belong to the account, be of the
 * caller's mode (a test key's uploads and a live key's are apart) and not be expired;
 * otherwise a 400 that names the field.
 */
export async function resolveUpload(
  db: D1Database,
  accountId: string,
  uploadId: string,
  field: string,
  now: number,
  mode: KeyMode = "live",
): Promise<StoredUpload> {
  const row = await orm(db)
    .select()
    .from(uploads)
    .where(
      and(
        eq(uploads.id, uploadId),
        eq(uploads.accountId, accountId),
        eq(uploads.mode, mode),
        gt(uploads.expiresAt, now),
      ),
    )
    .get();
  // Only a short prefix of what the caller sent is echoed back.
  if (!row) throw invalidRequest(`${field}: upload ${quotedId(uploadId)} is unknown or expired.`);
  const { createdAt: _created, mode: _mode, probe, ...stored } = row;
  return { ...stored, probe: JSON.parse(probe) as ProbeResult };
}
