/**
 * URL uploads through the backend, when one is configured: Node can connect to the address it
 * checked (backend/src/url-ingest.ts), which a Worker's fetch cannot, so a name that resolves to a
 * public address for the check and a private one for the fetch (DNS rebinding) gains nothing.
 * The backend PUTs the file to a signed URL of the upload's object; the Worker then probes it as
 * any upload. Without a backend, URL uploads stay in the Worker (src/lib/public-url.ts).
 */
import type { Env } from "../env";
import { IngestResultSchema, type IngestResult } from "@media-credits/wire/protocol";
import { backendConfigured } from "./client";
import { mediaUrl } from "./transfer-urls";

export class IngestRefusedError extends Error {}

export function canIngestOnBackend(env: Env): boolean {
  return backendConfigured(env) && Boolean(env.PUBLIC_BASE_URL || env.R2_ACCESS_KEY_ID);
}

/**
 * Has the backend fetch `url` into the object `key`. Throws IngestRefusedError with the user's
 * message for a refused URL or a failed download; other errors mean the backend is unavailable.
 */
export async function ingestOnBackend(
  env: Env,
  url: string,
  key: string,
  maxBytes: number,
  allowPrivate: boolean,
): Promise<IngestResult> {
  const output = await mediaUrl(env, key, "PUT", 6 * 3600 * 1000);
  const response = await fetch(`${env.BACKEND_URL!.replace(/\/$/, "")}/v1/ingest`, {
    method: "POST",
    headers: { authorization: `Bearer ${env.BACKEND_SECRET}`, "content-type": "application/json" },
    body: JSON.stringify({ url, output: { url: output }, allowPrivate, maxBytes }),
  });
  if (response.status === 422) {
    const body = (await response.json().catch(() => ({}))) as { error?: string; message?: string };
    throw new IngestRefusedError(
      `${body.error === "refused" ? "refused, " : "the download failed ("}${body.message ?? "unknown reason"}${body.error === "refused" ? "" : ")"}`,
    );
  }
  if (!response.ok) throw new Error(`the processing backend answered HTTP ${response.status} to an ingestion`);
  return IngestResultSchema.parse(await response.json());
}
