/**
 * One-time upload pages for the connector: an assistant cannot read the person's disk, so it
 * hands out a link (a 192-bit capability, valid one hour, used once) to a page where the person
 * picks a local file; the upload id is then readable by the assistant.
 */
import { and, eq, isNull } from "drizzle-orm";
import { orm } from "../../db/client";
import { uploadLinks, uploads } from "../../db/schema";
import type { Env } from "../../env";
import { invalidRequest, notFound } from "../../errors";
import { sha256Hex } from "../../lib/hash";
import { newId, randomToken } from "../../lib/ids";
import { uploadFromMultipart, type UploadResult } from "./uploads";

export const UPLOAD_LINK_TTL_MS = 3600 * 1000;

export async function createUploadLink(db: D1Database, accountId: string, origin: string, now: number) {
  const token = randomToken(24);
  const linkId = newId("ul", now);
  const expiresAt = now + UPLOAD_LINK_TTL_MS;
  await orm(db)
    .insert(uploadLinks)
    .values({ id: linkId, accountId, tokenHash: await sha256Hex(token), expiresAt, createdAt: now })
    .run();
  return { linkId, url: `${origin}/upload/${token}`, expiresAt: new Date(expiresAt).toISOString() };
}

export type UploadLinkStatus =
  | { status: "pending" | "expired" }
  | { status: "uploaded"; uploadId: string; filename?: string; durationSeconds?: number; expiresIn: number };

/**
 * The link's state; once used, what the upload endpoint answers about the file (its duration
 * prices the per-minute tools) while the upload lasts.
 */
export async function uploadLinkStatus(
  db: D1Database,
  accountId: string,
  linkId: string,
  now: number,
): Promise<UploadLinkStatus> {
  const link = await orm(db)
    .select()
    .from(uploadLinks)
    .where(and(eq(uploadLinks.id, linkId), eq(uploadLinks.accountId, accountId)))
    .get();
  if (!link) throw notFound("No such upload link.");
  if (!link.uploadId) return { status: link.expiresAt > now ? "pending" : "expired" };
  const upload = await orm(db).select().from(uploads).where(eq(uploads.id, link.uploadId)).get();
  if (!upload || upload.expiresAt <= now) return { status: "uploaded", uploadId: link.uploadId, expiresIn: 0 };
  return {
    status: "uploaded",
    uploadId: upload.id,
    filename: upload.filename,
    durationSeconds: upload.durationMs / 1000,
    expiresIn: Math.floor((upload.expiresAt - now) / 1000),
  };
}

/** The link of a token while it lasts, used or not; null when unknown or expired. */
export async function uploadLinkOf(db: D1Database, token: string, now: number) {
  if (!token || token.length > 64) return null;
  const link = await orm(db)
    .select()
    .from(uploadLinks)
    .where(eq(uploadLinks.tokenHash, await sha256Hex(token)))
    .get();
  if (!link || link.expiresAt <= now) return null;
  return link;
}

/** The open link of a token, or null when unknown, expired or already used. */
export async function openUploadLink(db: D1Database, token: string, now: number) {
  const link = await uploadLinkOf(db, token, now);
  return link && !link.uploadId ? link : null;
}

/** Streams the page's file into an upload of the link's account, then uses the link up. */
export async function uploadThroughLink(env: Env, token: string, request: Request, now: number): Promise<UploadResult> {
  const link = await openUploadLink(env.DB, token, now);
  if (!link) throw invalidRequest("This upload link is invalid, expired or already used.");
  const result = await uploadFromMultipart(env, link.accountId, request, now);
  // Only the first of two uploads posted at once uses the link; the other is refused (its upload expires with the others).
  const used = await orm(env.DB)
    .update(uploadLinks)
    .set({ uploadId: result.uploadId })
    .where(and(eq(uploadLinks.id, link.id), isNull(uploadLinks.uploadId)))
    .returning()
    .get();
  if (!used) throw invalidRequest("This upload link was used meanwhile.");
  return result;
}

/** Links are kept a day past their expiry (their status stays readable), then deleted. */
export async function deleteExpiredUploadLinks(db: D1Database, now: number): Promise<number> {
  const result = await db
    .prepare("DELETE FROM upload_links WHERE expires_at < ?")
    .bind(now - 24 * 3600 * 1000)
    .run();
  return result.meta.changes;
}
