/**
 * POST /v1/ingest: a URL upload fetched here (url-ingest.ts pins each connection to the address it
 * checked), written to a temporary file, then sent to the Worker's signed PUT URL (or a presigned
 * R2 URL) with its exact length. The file never stays: the directory goes whatever happens.
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { IngestRequest, IngestResult } from "@media-credits/wire/protocol";
import { networkReason, TransferError, uploadFile } from "./transfer.ts";
import { downloadPinned, RefusedUrlError, type Resolve } from "./url-ingest.ts";

export type IngestOutcome =
  | { ok: true; result: IngestResult }
  | { ok: false; error: "refused" | "download_failed"; message: string };

export async function ingestUrl(request: IngestRequest, resolve?: Resolve): Promise<IngestOutcome> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "media-ingest-"));
  try {
    const file = path.join(dir, "download");
    const got = await downloadPinned(request.url, file, {
      allowPrivate: request.allowPrivate,
      maxBytes: request.maxBytes,
      resolve,
    });
    await uploadFile(request.output.url, file, {
      contentType: request.output.contentType ?? got.contentType ?? "application/octet-stream",
    });
    return { ok: true, result: got };
  } catch (error) {
    if (error instanceof RefusedUrlError) return { ok: false, error: "refused", message: error.message };
    if (error instanceof TransferError) return { ok: false, error: "download_failed", message: error.message };
    return { ok: false, error: "download_failed", message: networkReason(error) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
