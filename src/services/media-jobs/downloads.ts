/**
 * Result downloads: `/api/download/<id>` where the id is a 192-bit capability distinct from
 * the job id, so no Authorization header is needed. Supports Range (206) and HEAD.
 *
 * The capability is derived, HMAC-SHA256 of the job id under AUTH_SECRET, so the job view can
 * show it again while D1 keeps only its SHA-256 (as for keys, sessions and the other links):
 * reading the database gives no download. Rotating AUTH_SECRET ends the links in circulation.
 */
import { notFound } from "../../errors";
import { and, eq, gt } from "drizzle-orm";
import { orm } from "../../db/client";
import { jobs } from "../../db/schema";
import type { Env } from "../../env";
import { sha256Hex } from "../../lib/hash";
import { authSecret, hmacToken } from "../../lib/signing";
import type { JobRow } from "./reads";

const TOKEN = /^[A-Za-z0-9_-]{32}$/;

/** The download capability of a job's result (32 base64url characters, 192 bits). */
export async function downloadTokenOf(env: Pick<Env, "AUTH_SECRET">, jobId: string): Promise<string> {
  return hmacToken(authSecret(env, "Result downloads are not configured"), `download:${jobId}`);
}

/** What the job row stores for its download: the capability's SHA-256. */
export async function downloadIdOf(env: Pick<Env, "AUTH_SECRET">, jobId: string): Promise<string> {
  return sha256Hex(await downloadTokenOf(env, jobId));
}

export async function findDownload(db: D1Database, token: string, now: number): Promise<JobRow> {
  const job = TOKEN.test(token)
    ? await orm(db)
        .select()
        .from(jobs)
        .where(and(eq(jobs.downloadId, await sha256Hex(token)), eq(jobs.status, "completed"), gt(jobs.expiresAt, now)))
        .get()
    : undefined;
  if (!job?.resultKey) throw notFound("This download does not exist or has expired.");
  return job;
}

type ByteRange = { offset: number; length: number } | "unsatisfiable" | undefined;

/** Parses a single `bytes=` range against the object size (multiple ranges: whole file). */
export function parseRange(header: string | null, size: number): ByteRange {
  if (!header) return undefined;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === "" && match[2] === "")) return undefined;
  if (match[1] === "") {
    const suffix = Number(match[2]);
    if (suffix === 0) return "unsatisfiable";
    const length = Math.min(suffix, size);
    return { offset: size - length, length };
  }
  const start = Number(match[1]);
  // RFC 9110 14.1.1: a last position before the first makes the range invalid, so it is ignored.
  if (match[2] !== "" && Number(match[2]) < start) return undefined;
  const end = match[2] === "" ? size - 1 : Math.min(Number(match[2]), size - 1);
  if (start >= size || end < start) return "unsatisfiable";
  return { offset: start, length: end - start + 1 };
}

export async function downloadResponse(bucket: R2Bucket, job: JobRow, request: Request): Promise<Response> {
  const file = {
    key: job.resultKey!,
    filename: job.resultFilename!,
    contentType: job.resultContentType ?? "application/octet-stream",
  };
  return attachmentResponse(bucket, file, request, "This download does not exist or has expired.");
}

/** A stored file served as a download behind a capability: its type, its name, never cached. */
export async function attachmentResponse(
  bucket: R2Bucket,
  file: { key: string; filename: string; contentType: string },
  request: Request,
  missing: string,
): Promise<Response> {
  const headers = new Headers({
    "content-type": file.contentType,
    "content-disposition": `attachment; filename="${file.filename}"`,
    "cache-control": "private, no-store",
  });
  return objectResponse(bucket, file.key, request, headers, missing);
}

/** The entity tags of an If-None-Match / If-Range list, without the weak prefix; "*" kept. */
function entityTags(header: string): string[] {
  return header
    .split(",")
    .map((tag) => tag.trim().replace(/^W\//, ""))
    .filter(Boolean);
}

/**
 * An R2 object as an HTTP answer: 200, or 206 for one `bytes=` range, 416 outside it; HEAD too.
 * Conditional requests as RFC 9110 §13: If-None-Match naming the ETag is a 304; a Range whose
 * If-Range no longer matches (another ETag, or a date other than Last-Modified) gets the whole object.
 */
export async function objectResponse(
  bucket: R2Bucket,
  key: string,
  request: Request,
  headers: Headers,
  missing: string,
): Promise<Response> {
  const head = await bucket.head(key);
  if (!head) throw notFound(missing);
  const size = head.size;
  headers.set("accept-ranges", "bytes");
  headers.set("etag", head.httpEtag);
  const lastModified = head.uploaded.toUTCString();
  headers.set("last-modified", lastModified);
  const noneMatch = request.headers.get("if-none-match");
  if (
    noneMatch !== null &&
    entityTags(noneMatch).some((tag) => tag === "*" || tag === head.httpEtag.replace(/^W\//, ""))
  ) {
    headers.delete("content-type");
    headers.delete("content-disposition");
    return new Response(null, { status: 304, headers });
  }
  const ifRange = request.headers.get("if-range")?.trim();
  // A strong comparison: a weak tag never validates a range.
  const rangeStillValid =
    ifRange === undefined || (ifRange.startsWith('"') ? ifRange === head.httpEtag : ifRange === lastModified);
  const range = rangeStillValid ? parseRange(request.headers.get("range"), size) : undefined;
  if (range === "unsatisfiable") {
    headers.set("content-range", `bytes */${size}`);
    headers.set("content-type", "application/json");
    headers.delete("content-disposition");
    return new Response(JSON.stringify({ error: { code: "invalid_request", message: "Range not satisfiable." } }), {
      status: 416,
      headers,
    });
  }
  const isHead = request.method === "HEAD";
  if (range) {
    headers.set("content-range", `bytes ${range.offset}-${range.offset + range.length - 1}/${size}`);
    headers.set("content-length", String(range.length));
    if (isHead) return new Response(null, { status: 206, headers });
    return new Response(await objectBody(bucket, key, size, range, missing), { status: 206, headers });
  }
  headers.set("content-length", String(size));
  if (isHead) return new Response(null, { status: 200, headers });
  return new Response(await objectBody(bucket, key, size, { offset: 0, length: size }, missing), {
    status: 200,
    headers,
  });
}

/** The largest read an answer makes of R2 at once. */
export const OBJECT_PIECE_BYTES = 8 * 1024 * 1024;

/**
 * The bytes of `range` as a stream read from R2 one bounded piece at a time, each piece only when
 * the client has taken the one before. Readers often ask for everything from an offset and stop
 * early (ffmpeg seeks with `bytes=N-` and closes after the part it needs): one open read would
 * have storage produce up to the whole object for nothing (locally, 7 MB read of a 61 MB upload
 * with `bytes=N-` cost 2.0-2.4 s of the emulation's CPU against 0.7 s for the same bytes asked
 * for with an end); here at most one piece is read past what the client took.
 */
async function objectBody(
  bucket: R2Bucket,
  key: string,
  size: number,
  range: { offset: number; length: number },
  missing: string,
): Promise<ReadableStream<Uint8Array>> {
  const end = range.offset + range.length;
  const pieceOf = async (offset: number) => {
    const length = Math.min(OBJECT_PIECE_BYTES, end - offset);
    // A whole object of one piece is read without a range: an empty one has no byte to range over.
    const object = await bucket.get(key, offset === 0 && length === size ? {} : { range: { offset, length } });
    if (!object) throw notFound(missing);
    return object.body;
  };
  const first = await pieceOf(range.offset);
  if (range.length <= OBJECT_PIECE_BYTES) return first;
  // No buffer inside: a piece's pipe ends once the client has read all of it.
  const { readable, writable } = new FixedLengthStream(range.length);
  void (async () => {
    let piece = first;
    try {
      for (let offset = range.offset; ; ) {
        await piece.pipeTo(writable, { preventClose: true });
        offset += OBJECT_PIECE_BYTES;
        if (offset >= end) break;
        piece = await pieceOf(offset);
      }
      await writable.close();
    } catch (error) {
      // pipeTo has cancelled the piece and aborted the client's stream already when either side failed.
      await writable.abort(error).catch(() => {});
    }
  })();
  return readable;
}
