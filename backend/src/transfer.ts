/**
 * Streamed transfers: inputs are written to disk as they arrive, the output is sent from disk
 * with an exact content-length (presigned PUTs refuse chunked bodies). Nothing is held whole in
 * memory. Messages never contain the URLs: they carry tokens and signatures.
 */
import { createReadStream, createWriteStream } from "node:fs";
import { stat } from "node:fs/promises";
import { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import { setTimeout as sleep } from "node:timers/promises";

/** A transfer failure with a message fit for the job's error. */
export class TransferError extends Error {}

/** "connection refused (ECONNREFUSED)"-style reason of a fetch/stream error, without URLs. */
export function networkReason(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } } | undefined)?.cause;
  const code = cause?.code ?? (err as { code?: string } | undefined)?.code;
  if (code) return `network error (${code})`;
  const message = cause?.message ?? (err instanceof Error ? err.message : String(err));
  return `network error (${message.replace(/https?:\/\/\S+/g, "<url>")})`;
}

/** Ranged parts of a large download, fetched side by side (each streamed to its place in the file). */
export const DOWNLOAD_PART_BYTES = 16 * 1024 * 1024;
export const DOWNLOAD_PARALLELISM = 4;

/**
 * GET `url` into `dest` (created, must not exist). Returns the byte count.
 *
 * The first request asks for the first part only. A server that honours ranges (R2, presigned
 * or served by the Worker) answers 206 with the total size, and the other parts follow on up
 * to DOWNLOAD_PARALLELISM connections, each written at its offset: one stream is bounded by a
 * single connection's throughput, several are not. A server that ignores ranges answers 200 and
 * the whole body is streamed as it comes. Memory stays at a few stream buffers either way.
 */
export async function downloadToFile(
  url: string,
  dest: string,
  options: { label: string; signal?: AbortSignal },
): Promise<number> {
  const { label, signal } = options;
  const first = await request(url, label, signal, `bytes=0-${DOWNLOAD_PART_BYTES - 1}`);
  const total = first.status === 206 ? totalOfContentRange(first.headers.get("content-range")) : undefined;
  if (first.status === 206 && total === undefined) {
    await first.body?.cancel().catch(() => {});
    throw new TransferError(`${label} could not be downloaded: unreadable Content-Range`);
  }
  if (total === undefined) {
    // 200: the whole object in one stream.
    const bytes = await streamTo(first, dest, { flags: "wx" }, label, signal);
    const declared = first.headers.get("content-length");
    if (declared !== null && Number(declared) !== bytes) {
      throw new TransferError(`${label} download was truncated (${bytes} of ${declared} bytes)`);
    }
    return bytes;
  }
  const firstLength = Math.min(DOWNLOAD_PART_BYTES, total);
  const parts: { start: number; length: number }[] = [];
  for (let start = firstLength; start < total; start += DOWNLOAD_PART_BYTES) parts.push({ start, length: Math.min(DOWNLOAD_PART_BYTES, total - start) });
  const written = await streamTo(first, dest, { flags: "wx" }, label, signal);
  if (written !== firstLength) throw new TransferError(`${label} download was truncated (${written} of ${firstLength} bytes)`);
  const local = new AbortController();
  const partSignal = signal ? AbortSignal.any([signal, local.signal]) : local.signal;
  let next = 0;
  const worker = async () => {
    while (next < parts.length) {
      const part = parts[next++]!;
      const response = await request(url, label, partSignal, `bytes=${part.start}-${part.start + part.length - 1}`);
      if (response.status !== 206) {
        await response.body?.cancel().catch(() => {});
        throw new TransferError(`${label} could not be downloaded: HTTP ${response.status} for a part`);
      }
      const bytes = await streamTo(response, dest, { flags: "r+", start: part.start }, label, partSignal);
      if (bytes !== part.length) throw new TransferError(`${label} download was truncated (part at ${part.start}: ${bytes} of ${part.length} bytes)`);
    }
  };
  const results = await Promise.allSettled(
    Array.from({ length: Math.min(DOWNLOAD_PARALLELISM, parts.length) }, () =>
      worker().catch((err: unknown) => {
        if (!local.signal.aborted) local.abort(err); // one failed part stops the others
        throw err;
      }),
    ),
  );
  const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) {
    if (signal?.aborted) throw signal.reason;
    throw failed.reason;
  }
  return total;
}

async function request(url: string, label: string, signal: AbortSignal | undefined, range: string): Promise<Response> {
  let response: Response;
  try {
    response = await fetch(url, { signal, redirect: "follow", headers: { range } });
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    throw new TransferError(`${label} could not be downloaded: ${networkReason(err)}`);
  }
  if (!response.ok || !response.body) {
    await response.body?.cancel().catch(() => {});
    throw new TransferError(`${label} could not be downloaded: HTTP ${response.status}`);
  }
  return response;
}

/** "bytes 0-99/1234" -> 1234. */
function totalOfContentRange(header: string | null): number | undefined {
  const match = /^bytes \d+-\d+\/(\d+)$/.exec(header?.trim() ?? "");
  return match ? Number(match[1]) : undefined;
}

async function streamTo(
  response: Response,
  dest: string,
  mode: { flags: "wx" | "r+"; start?: number },
  label: string,
  signal: AbortSignal | undefined,
): Promise<number> {
  let bytes = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      bytes += chunk.length;
      callback(null, chunk);
    },
  });
  try {
    await pipeline(
      Readable.fromWeb(response.body as unknown as NodeReadableStream<Uint8Array>),
      counter,
      createWriteStream(dest, mode),
      { signal },
    );
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    throw new TransferError(`${label} download was interrupted: ${networkReason(err)}`);
  }
  return bytes;
}

export interface UploadOptions {
  contentType: string;
  signal?: AbortSignal;
  /** Waits before each retry (network errors and 5xx only); its length + 1 = attempts. */
  retryDelaysMs?: number[];
}

/** PUT the file at `filePath` to `url`, streamed from disk. Returns the byte count. */
export async function uploadFile(url: string, filePath: string, options: UploadOptions): Promise<number> {
  const { signal } = options;
  const delays = options.retryDelaysMs ?? [500, 1500];
  const { size } = await stat(filePath);
  for (let attempt = 0; ; attempt++) {
    let reason: string;
    let retryable: boolean;
    try {
      const response = await fetch(url, {
        method: "PUT",
        body: Readable.toWeb(createReadStream(filePath)) as unknown as ReadableStream<Uint8Array>,
        duplex: "half",
        headers: { "content-length": String(size), "content-type": options.contentType },
        signal,
      } as RequestInit);
      await response.body?.cancel().catch(() => {});
      if (response.ok) return size;
      reason = `HTTP ${response.status}`;
      retryable = response.status >= 500;
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      reason = networkReason(err);
      retryable = true;
    }
    const delay = delays[attempt];
    if (!retryable || delay === undefined) {
      throw new TransferError(`the output could not be uploaded: ${reason}`);
    }
    await sleep(delay, undefined, { signal });
  }
}
