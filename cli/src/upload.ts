/**
 * Uploads a local file. Up to RESUMABLE_THRESHOLD it is one streamed multipart/form-data POST;
 * above (or with --resumable) it goes through the resumable upload API in parts, several at a
 * time, and the session is remembered in the config directory so that running the same command
 * again after an interruption sends only the parts the API has not received.
 */
import { createHash, randomUUID } from "node:crypto";
import {
  accessSync,
  constants,
  createReadStream,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";
import { Readable } from "node:stream";
import { type Api, rawFetch, unwrap, type UploadResult } from "./client.ts";
import { type Config, configDir } from "./config.ts";
import { byteProgress } from "./progress.ts";

/** Workers refuse request bodies over 100 MB on most plans; stay clear of it. */
export const RESUMABLE_THRESHOLD = 95 * 1000 * 1000;
const PARALLEL_PARTS = 3;

const CONTENT_TYPES: Record<string, string> = {
  ".mp4": "video/mp4",
  ".m4v": "video/x-m4v",
  ".mov": "video/quicktime",
  ".webm": "video/webm",
  ".mkv": "video/x-matroska",
  ".avi": "video/x-msvideo",
  ".mp3": "audio/mpeg",
  ".wav": "audio/wav",
  ".m4a": "audio/mp4",
  ".aac": "audio/aac",
  ".ogg": "audio/ogg",
  ".opus": "audio/ogg",
  ".flac": "audio/flac",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".webp": "image/webp",
};

export function contentTypeOf(file: string): string {
  return CONTENT_TYPES[path.extname(file).toLowerCase()] ?? "application/octet-stream";
}

export interface UploadOptions {
  resumable?: boolean;
  quiet?: boolean;
}

/** The size of a regular, readable file; a clear refusal for anything else. */
function readableFileSize(file: string): number {
  let stats;
  try {
    stats = statSync(file);
    accessSync(file, constants.R_OK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new Error(
      `${file}: ${code === "ENOENT" ? "no such file" : code === "EACCES" ? "permission denied" : (code ?? String(error))}`,
    );
  }
  if (!stats.isFile()) throw new Error(`${file}: not a file${stats.isDirectory() ? " (a folder)" : ""}`);
  return stats.size;
}

export async function uploadFile(
  api: Api,
  config: Config,
  file: string,
  options: UploadOptions = {},
): Promise<UploadResult> {
  const size = readableFileSize(file);
  if (options.resumable || size > RESUMABLE_THRESHOLD) return resumableUpload(api, config, file, options);
  return simpleUpload(config, file, size, options);
}

/** A file (or a range of it), each chunk counted as the request reads it. */
async function* countedChunks(
  file: string,
  onChunk: (bytes: number) => void,
  range?: { start: number; end: number },
): AsyncGenerator<Uint8Array> {
  for await (const chunk of createReadStream(file, range ? { start: range.start, end: range.end - 1 } : {})) {
    onChunk((chunk as Buffer).length);
    yield chunk as Uint8Array;
  }
}

const requestBody = (chunks: AsyncGenerator<Uint8Array>) =>
  Readable.toWeb(Readable.from(chunks)) as ReadableStream<Uint8Array>;

async function simpleUpload(config: Config, file: string, size: number, options: UploadOptions): Promise<UploadResult> {
  const boundary = `media-credits-${randomUUID()}`;
  const filename = path.basename(file).replace(/["\r\n\\]/g, "_");
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: ${contentTypeOf(file)}\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const progress = byteProgress(`upload ${path.basename(file)}`, size, options.quiet);
  const body = () => {
    // A retry (429) sends the file again from its start.
    let bytes = 0;
    return requestBody(
      (async function* () {
        yield head;
        yield* countedChunks(file, (n) => progress.update((bytes += n)));
        yield tail;
      })(),
    );
  };
  const started = Date.now();
  const response = await rawFetch(config, "/api/v1/uploads", () => ({
    method: "POST",
    headers: {
      "content-type": `multipart/form-data; boundary=${boundary}`,
      "content-length": String(head.length + size + tail.length),
    },
    body: body(),
    duplex: "half",
  }));
  const result = (await response.json()) as UploadResult;
  progress.stop(
    `${result.uploadId} (${(size / 1e6).toFixed(1)} MB in ${((Date.now() - started) / 1000).toFixed(1)} s)`,
  );
  return result;
}

interface Session {
  uploadId: string;
  partSize: number;
  partCount: number;
}

/** The saved session of this file (same path, size and modification time) on this API. */
function stateFile(config: Config, file: string): string {
  const { size, mtimeMs } = statSync(file);
  const key = createHash("sha256")
    .update(`${config.baseUrl}\n${path.resolve(file)}\n${size}\n${mtimeMs}`)
    .digest("hex")
    .slice(0, 32);
  return path.join(configDir(), "uploads", `${key}.json`);
}

async function openSession(
  api: Api,
  config: Config,
  file: string,
  size: number,
  resumeId?: string,
): Promise<{ session: Session; received: Set<number> }> {
  const saved = stateFile(config, file);
  const candidate =
    resumeId ??
    (existsSync(saved) ? (JSON.parse(readFileSync(saved, "utf8")) as { uploadId: string }).uploadId : undefined);
  if (candidate) {
    const found = await api.GET("/api/v1/uploads/multipart/{uploadId}", { params: { path: { uploadId: candidate } } });
    if (found.data) {
      if (found.data.size !== size)
        throw new Error(`upload session ${candidate} is for a file of ${found.data.size} bytes; ${file} has ${size}`);
      const received = new Set(found.data.parts.map((part) => part.partNumber));
      return {
        session: { uploadId: candidate, partSize: found.data.partSize, partCount: found.data.partCount },
        received,
      };
    }
    if (resumeId) throw unwrap(found);
    // Expired or aborted: start over.
  }
  const created = unwrap(
    await api.POST("/api/v1/uploads/multipart", {
      body: { filename: path.basename(file), size, contentType: contentTypeOf(file) },
    }),
  );
  mkdirSync(path.dirname(saved), { recursive: true, mode: 0o700 });
  writeFileSync(
    saved,
    JSON.stringify({ uploadId: created.uploadId, file: path.resolve(file), createdAt: new Date().toISOString() }),
  );
  return { session: created, received: new Set() };
}

export async function resumableUpload(
  api: Api,
  config: Config,
  file: string,
  options: UploadOptions & { resumeId?: string } = {},
): Promise<UploadResult> {
  const size = readableFileSize(file);
  const { session, received } = await openSession(api, config, file, size, options.resumeId);
  const partBytes = (n: number) => Math.min(session.partSize, size - (n - 1) * session.partSize);
  const missing = Array.from({ length: session.partCount }, (_, i) => i + 1).filter((n) => !received.has(n));
  const counter = { bytes: [...received].reduce((sum, n) => sum + partBytes(n), 0) };
  const progress = byteProgress(`upload ${path.basename(file)}`, size, options.quiet);
  progress.update(counter.bytes);
  const started = Date.now();
  const sendPart = async (n: number) => {
    const start = (n - 1) * session.partSize;
    let attempt = 0;
    const response = await rawFetch(
      config,
      `/api/v1/uploads/multipart/${encodeURIComponent(session.uploadId)}/parts/${n}`,
      () => {
        // A retried part (429) is sent again whole: what its last attempt counted is taken back.
        counter.bytes -= attempt;
        attempt = 0;
        const count = (bytes: number) => {
          attempt += bytes;
          progress.update((counter.bytes += bytes));
        };
        return {
          method: "PUT",
          headers: { "content-type": "application/octet-stream", "content-length": String(partBytes(n)) },
          body: requestBody(countedChunks(file, count, { start, end: start + partBytes(n) })),
          duplex: "half",
        };
      },
    );
    await response.body?.cancel();
  };
  const queue = [...missing];
  await Promise.all(
    Array.from({ length: Math.min(PARALLEL_PARTS, queue.length) }, async () => {
      for (let n = queue.shift(); n !== undefined; n = queue.shift()) await sendPart(n);
    }),
  );
  const result = unwrap(
    await api.POST("/api/v1/uploads/multipart/{uploadId}/complete", {
      params: { path: { uploadId: session.uploadId } },
    }),
  );
  rmSync(stateFile(config, file), { force: true });
  const resumed = received.size > 0 ? `, resumed with ${missing.length} of ${session.partCount} parts to send` : "";
  progress.stop(
    `${result.uploadId} (${(size / 1e6).toFixed(1)} MB in ${session.partCount} part${session.partCount === 1 ? "" : "s"} in ${((Date.now() - started) / 1000).toFixed(1)} s${resumed})`,
  );
  return result;
}
