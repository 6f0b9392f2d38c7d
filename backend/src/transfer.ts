/**
 * Streamed transfers: inputs are written to disk as they arrive, the output is sent from disk
 * with an exact content-length (presigned PUTs refuse chunked bodies). Nothing is held whole in
 * memory. Messages never contain the URLs: they carry tokens and signatures.
 */
import { createReadStream } from "node:fs";
import { open, stat, type FileHandle } from "node:fs/promises";
import { Readable, Writable } from "node:stream";
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

interface Part {
  start: number;
  length: number;
  /** Bytes of the part on disk, from its start. */
  written: number;
  taken: boolean;
}

/**
 * What is on disk of a download while it runs, for readers that follow it (progressive inputs,
 * progressive.ts): the total once the first answer tells it, the bytes written from any offset,
 * a wake-up on each write, and a say in which part is fetched next.
 */
export class DownloadProgress {
  total: number | undefined;
  /** The reason the download stopped short; readers give up. */
  error: unknown;
  readonly #parts: Part[] = [];
  #wanted: number | undefined;
  #wake = new Set<() => void>();

  /** Bytes on disk from `offset` on without a gap (0: not arrived yet). */
  availableFrom(offset: number): number {
    let end = offset;
    for (const part of this.#parts) {
      if (part.start + part.length <= end) continue;
      if (part.start > end) break;
      end = Math.max(end, part.start + part.written);
      if (part.written < part.length) break;
    }
    return end - offset;
  }

  /** A reader waits at `offset`: the part holding it is fetched next, if not under way. */
  want(offset: number): void {
    this.#wanted = offset;
  }

  /** Resolves at the next write, the end or a failure of the download. */
  changed(): Promise<void> {
    return new Promise((resolve) => this.#wake.add(resolve));
  }

  /** @internal the download's side */
  plan(total: number, parts: Part[]): void {
    this.total = total;
    this.#parts.push(...parts);
    this.#notify();
  }

  /** @internal the next part to fetch: the one a reader waits on, else the first not taken. */
  take(): Part | undefined {
    const wanted =
      this.#wanted === undefined
        ? undefined
        : this.#parts.find((p) => !p.taken && p.start <= this.#wanted! && this.#wanted! < p.start + p.length);
    this.#wanted = undefined;
    const part = wanted ?? this.#parts.find((p) => !p.taken);
    if (part) part.taken = true;
    return part;
  }

  /** @internal */
  wrote(part: Part, bytes: number): void {
    part.written += bytes;
    this.#notify();
  }

  /** @internal */
  finish(error?: unknown): void {
    if (error !== undefined) this.error = error;
    this.#notify();
  }

  #notify(): void {
    const waiting = this.#wake;
    this.#wake = new Set();
    for (const resolve of waiting) resolve();
  }
}

/**
 * GET `url` into `dest` (created, must not exist). Returns the byte count.
 *
 * The first request asks for the first part only. A server that honours ranges (R2, presigned
 * or served by the Worker) answers 206 with the total size, and the other parts follow on up
 * to DOWNLOAD_PARALLELISM connections, each written at its offset: one stream is bounded by a
 * single connection's throughput, several are not. A server that ignores ranges answers 200 and
 * the whole body is streamed as it comes. Memory stays at a few stream buffers either way.
 * `progress` follows the bytes as they land (and may reorder the parts), for progressive reads.
 */
export async function downloadToFile(
  url: string,
  dest: string,
  options: { label: string; signal?: AbortSignal; progress?: DownloadProgress },
): Promise<number> {
  const progress = options.progress ?? new DownloadProgress();
  try {
    const bytes = await download(url, dest, options.label, options.signal, progress);
    progress.finish();
    return bytes;
  } catch (err) {
    progress.finish(err);
    throw err;
  }
}

async function download(
  url: string,
  dest: string,
  label: string,
  signal: AbortSignal | undefined,
  progress: DownloadProgress,
): Promise<number> {
  const first = await request(url, label, signal, `bytes=0-${DOWNLOAD_PART_BYTES - 1}`);
  const total = first.status === 206 ? totalOfContentRange(first.headers.get("content-range")) : undefined;
  if (first.status === 206 && total === undefined) {
    await first.body?.cancel().catch(() => {});
    throw new TransferError(`${label} could not be downloaded: unreadable Content-Range`);
  }
  const handle = await open(dest, "wx");
  try {
    if (total === undefined) {
      // 200: the whole object in one stream.
      const declared = first.headers.get("content-length");
      const whole: Part = {
        start: 0,
        length: declared === null ? Number.MAX_SAFE_INTEGER : Number(declared),
        written: 0,
        taken: true,
      };
      if (declared !== null) progress.plan(whole.length, [whole]);
      const bytes = await streamTo(first, handle, whole, progress, label, signal);
      if (declared !== null && Number(declared) !== bytes) {
        throw new TransferError(`${label} download was truncated (${bytes} of ${declared} bytes)`);
      }
      if (declared === null) progress.plan(bytes, [{ ...whole, length: bytes, written: bytes }]);
      return bytes;
    }
    const parts: Part[] = [];
    for (let start = 0; start < total; start += DOWNLOAD_PART_BYTES)
      parts.push({ start, length: Math.min(DOWNLOAD_PART_BYTES, total - start), written: 0, taken: start === 0 });
    progress.plan(total, parts);
    const local = new AbortController();
    const partSignal = signal ? AbortSignal.any([signal, local.signal]) : local.signal;
    const fetchPart = async (part: Part, response: Response) => {
      const bytes = await streamTo(response, handle, part, progress, label, partSignal);
      if (bytes !== part.length)
        throw new TransferError(
          `${label} download was truncated (part at ${part.start}: ${bytes} of ${part.length} bytes)`,
        );
    };
    const worker = async () => {
      for (let part = progress.take(); part; part = progress.take()) {
        const response = await request(url, label, partSignal, `bytes=${part.start}-${part.start + part.length - 1}`);
        if (response.status !== 206) {
          await response.body?.cancel().catch(() => {});
          throw new TransferError(`${label} could not be downloaded: HTTP ${response.status} for a part`);
        }
        await fetchPart(part, response);
      }
    };
    const stopOthers = (err: unknown) => {
      if (!local.signal.aborted) local.abort(err); // one failed part stops the others
      throw err;
    };
    // The first part goes on streaming while the others start.
    const results = await Promise.allSettled([
      fetchPart(parts[0]!, first).catch(stopOthers),
      ...Array.from({ length: Math.min(DOWNLOAD_PARALLELISM - 1, parts.length - 1) }, () => worker().catch(stopOthers)),
    ]);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) {
      if (signal?.aborted) throw signal.reason;
      throw failed.reason;
    }
    return total;
  } finally {
    await handle.close();
  }
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

/** Streams `response` into the file at `part`'s place, each chunk reported to `progress` once on disk. */
async function streamTo(
  response: Response,
  handle: FileHandle,
  part: Part,
  progress: DownloadProgress,
  label: string,
  signal: AbortSignal | undefined,
): Promise<number> {
  let bytes = 0;
  const toFile = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      handle.write(chunk, 0, chunk.length, part.start + bytes).then(
        () => {
          bytes += chunk.length;
          progress.wrote(part, chunk.length);
          callback();
        },
        (err: Error) => callback(err),
      );
    },
  });
  try {
    await pipeline(Readable.fromWeb(response.body as unknown as NodeReadableStream<Uint8Array>), toFile, { signal });
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
