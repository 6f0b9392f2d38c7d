/**
 * The account's cloned voice: a speech sample (>= 10 s) kept until replaced or removed (not
 * 3 hours like uploads). Registering is free; the speech engines analyse the sample the first
 * time the voice is used (CPU engines match its pitch with the nearest catalogue voice; a GPU
 * engine clones it).
 */
import { invalidRequest, notFound } from "../../errors";
import { streamToR2 } from "../../lib/r2-stream";
import { requireLiveKey, type Caller } from "../accounts/accounts";
import { resolveUpload } from "./uploads";

export const MIN_SAMPLE_MS = 10_000;

export interface ClonedVoiceView {
  voice: "clone";
  status: string;
  createdAt: string;
}

const view = (row: { status: string; created_at: number }): ClonedVoiceView => ({
  voice: "clone",
  status: row.status,
  createdAt: new Date(row.created_at).toISOString(),
});

/** The cloned voice is the account's live data: a test key may use it, not change it. */
const refuseTestKey = (caller: Partial<Pick<Caller, "mode">>) =>
  requireLiveKey(
    caller,
    "The cloned voice is live account data: register or delete it with a live key (test keys can still speak with voice clone).",
  );

export async function registerClonedVoice(
  db: D1Database,
  bucket: R2Bucket,
  caller: Pick<Caller, "accountId"> & Partial<Pick<Caller, "mode">>,
  uploadId: string,
  now: number,
): Promise<ClonedVoiceView> {
  refuseTestKey(caller);
  const upload = await resolveUpload(db, caller.accountId, uploadId, "uploadId", now);
  if (upload.kind === "image" || !upload.probe.hasAudio)
    throw invalidRequest("uploadId: the sample must be audio or a video with an audio track.");
  if (upload.durationMs < MIN_SAMPLE_MS) {
    throw invalidRequest(
      `uploadId: the sample lasts ${upload.durationMs / 1000} s; at least 10 s of speech are needed.`,
    );
  }
  const source = await bucket.get(upload.objectKey);
  if (!source) throw invalidRequest("uploadId: the upload is no longer available.");
  const objectKey = `voices/${caller.accountId}/sample-${now}.${upload.container}`;
  await streamToR2(bucket, objectKey, source.body, { maxBytes: upload.sizeBytes + 1 });
  const previous = await db
    .prepare("SELECT object_key FROM cloned_voices WHERE account_id = ?")
    .bind(caller.accountId)
    .first<{ object_key: string }>();
  await db
    .prepare(
      `INSERT INTO cloned_voices (account_id, object_key, status, profile, created_at) VALUES (?1, ?2, 'ready', NULL, ?3)
       ON CONFLICT (account_id) DO UPDATE SET object_key = ?2, status = 'ready', profile = NULL, created_at = ?3`,
    )
    .bind(caller.accountId, objectKey, now)
    .run();
  if (previous && previous.object_key !== objectKey) await bucket.delete(previous.object_key);
  return view({ status: "ready", created_at: now });
}

export async function getClonedVoice(db: D1Database, caller: Pick<Caller, "accountId">): Promise<ClonedVoiceView> {
  const row = await db
    .prepare("SELECT status, created_at FROM cloned_voices WHERE account_id = ?")
    .bind(caller.accountId)
    .first<{ status: string; created_at: number }>();
  if (!row) throw notFound("No cloned voice is registered on this account.");
  return view(row);
}

export async function deleteClonedVoice(
  db: D1Database,
  bucket: R2Bucket,
  caller: Pick<Caller, "accountId"> & Partial<Pick<Caller, "mode">>,
): Promise<void> {
  refuseTestKey(caller);
  const row = await db
    .prepare("SELECT object_key FROM cloned_voices WHERE account_id = ?")
    .bind(caller.accountId)
    .first<{ object_key: string }>();
  if (!row) throw notFound("No cloned voice is registered on this account.");
  await db.prepare("DELETE FROM cloned_voices WHERE account_id = ?").bind(caller.accountId).run();
  await bucket.delete(row.object_key);
}
