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

/** GET `url` into `dest` (created, must not exist). Returns the byte count. */
export async function downloadToFile(
  url: string,
  dest: string,
  options: { label: string; signal?: AbortSignal },
): Promise<number> {
  const { label, signal } = options;
  let response: Response;
  try {
    response = await fetch(url, { signal, redirect: "follow" });
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    throw new TransferError(`${label} could not be downloaded: ${networkReason(err)}`);
  }
  if (!response.ok || !response.body) {
    await response.body?.cancel().catch(() => {});
    throw new TransferError(`${label} could not be downloaded: HTTP ${response.status}`);
  }
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
      createWriteStream(dest, { flags: "wx" }),
      { signal },
    );
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    throw new TransferError(`${label} download was interrupted: ${networkReason(err)}`);
  }
  const declared = response.headers.get("content-length");
  if (declared !== null && Number(declared) !== bytes) {
    throw new TransferError(`${label} download was truncated (${bytes} of ${declared} bytes)`);
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
