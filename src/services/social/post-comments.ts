/**
 * The review thread of a post: a client's comments from the review page and the owner's replies,
 * each at a moment of the post's video or audio ("00:12 logo too big") or on the whole post, on
 * the media version it was made on. Replacing the media keeps the thread: each comment goes on
 * naming its version. Comments cost nothing; a thread holds at most MAX_THREAD of them.
 */
import { and, asc, count, eq } from "drizzle-orm";
import { orm } from "../../db/client";
import { postComments, posts } from "../../db/schema";
import type { Env } from "../../env";
import { invalidRequest } from "../../errors";
import { characterCount, displayName } from "../../lib/display-name";
import { newId } from "../../lib/ids";
import { probeR2Object } from "../../media/probe";

export const MAX_COMMENT_TEXT = 2000;
/** A leaked review link cannot grow a thread without end, nor past what an event can carry. */
export const MAX_THREAD = 200;
/** A moment of media whose length is unknown (it could not be probed) is still bounded. */
const MAX_MOMENT_MS = 24 * 3600 * 1000;
/** The comments an event carries, as JSON: a queue message holds 128 KB. */
const EVENT_COMMENTS_BYTES = 64 * 1024;

type PostRow = typeof posts.$inferSelect;
type CommentRow = typeof postComments.$inferSelect;

export interface CommentView {
  commentId: string;
  author: "client" | "owner";
  /** The client's name; null for the owner. */
  authorName: string | null;
  /** The moment in the media, in seconds (ms precision); null for a comment on the whole post. */
  atSeconds: number | null;
  /** The same moment as a person reads it: `mm:ss`, or `h:mm:ss` past an hour. */
  timecode: string | null;
  text: string;
  /** The post's media version when the comment was made (1 for the first file); null without media. */
  mediaVersion: number | null;
  createdAt: string;
}

const two = (n: number) => String(n).padStart(2, "0");

/** `mm:ss` (whole seconds, rounded down), `h:mm:ss` from an hour on. */
export function formatTimecode(ms: number): string {
  const total = Math.floor(ms / 1000);
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = total % 60;
  return hours > 0 ? `${hours}:${two(minutes)}:${two(seconds)}` : `${two(minutes)}:${two(seconds)}`;
}

const TIMECODE = /^(?:(?:(\d{1,3}):)?(\d{1,2}):)?(\d{1,5})(?:[.,](\d{1,3}))?$/;

/**
 * A moment as people type it: `00:12`, `1:02:03`, or seconds (`12`, `12.5`), in ms; empty is
 * none (a comment on the whole post). Minutes and seconds after a colon stay under 60.
 */
export function parseTimecode(raw: string | null | undefined): number | null {
  const text = (raw ?? "").trim();
  if (!text) return null;
  const match = TIMECODE.exec(text);
  const [, h, m, s, fraction] = match ?? [];
  const invalid = () =>
    invalidRequest(`timecode: '${text.slice(0, 20)}' is not a moment of the video: give 00:12, 1:02:03 or seconds.`);
  if (!match) throw invalid();
  if ((m !== undefined && Number(s) >= 60) || (h !== undefined && Number(m) >= 60)) throw invalid();
  const seconds = Number(h ?? 0) * 3600 + Number(m ?? 0) * 60 + Number(s);
  return seconds * 1000 + Math.round(Number(`0.${fraction ?? 0}`) * 1000);
}

const hasTimeline = (row: PostRow) =>
  row.mediaKey !== null && /^(video|audio)\//.test(row.mediaContentType ?? "") && row.mediaVersion > 0;

/**
 * The length of the post's video or audio, probed from its stored copy when not known yet (job
 * results, media attached before migration 0013) and kept; null when it cannot be read.
 */
export async function mediaDurationMs(env: Env, row: PostRow): Promise<number | null> {
  if (!hasTimeline(row)) return null;
  if (row.mediaDurationMs !== null) return row.mediaDurationMs;
  const head = await env.MEDIA.head(row.mediaKey!);
  if (!head) return null;
  const probed = await probeR2Object(env.MEDIA, row.mediaKey!, head.size).catch(() => null);
  if (!probed?.durationMs) return null;
  await orm(env.DB)
    .update(posts)
    .set({ mediaDurationMs: probed.durationMs })
    .where(and(eq(posts.id, row.id), eq(posts.mediaKey, row.mediaKey!)))
    .run();
  return probed.durationMs;
}

const commentView = (r: CommentRow): CommentView => ({
  commentId: r.id,
  author: r.authorKind,
  authorName: r.authorName,
  atSeconds: r.atMs === null ? null : r.atMs / 1000,
  timecode: r.atMs === null ? null : formatTimecode(r.atMs),
  text: r.text,
  mediaVersion: r.mediaVersion,
  createdAt: new Date(r.createdAt).toISOString(),
});

/** The thread of a post, oldest first. */
export async function commentsOf(db: D1Database, postId: string): Promise<CommentView[]> {
  const rows = await orm(db)
    .select()
    .from(postComments)
    .where(eq(postComments.postId, postId))
    .orderBy(asc(postComments.createdAt), asc(postComments.id))
    .all();
  return rows.map(commentView);
}

export interface CommentInput {
  text: string;
  /** `00:12`, `1:02:03` or seconds; empty or absent for a comment on the whole post. */
  timecode?: string | null;
}

/** Direction controls and broken surrogates out (as in names); lines and the rest kept. */
const cleanText = (raw: string) =>
  raw
    .replace(/[\u202A-\u202E\u2066-\u2069]/g, "")
    .replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, "")
    .replace(/\r\n?/g, "\n")
    .trim();

/**
 * Adds a comment to the post's thread, on its current media version. Refused (400, nothing
 * written): empty or longer text, a malformed moment, a moment past the end of the media or on a
 * post without video or audio, a full thread. `author.name` is the client's (1 to 100 characters).
 */
export async function addComment(
  env: Env,
  row: PostRow,
  author: { kind: "client" | "owner"; name?: string },
  input: CommentInput,
  now: number,
): Promise<CommentView> {
  const name = author.kind === "client" ? displayName(author.name ?? "") : null;
  if (author.kind === "client" && (!name || characterCount(name) > 100))
    throw invalidRequest("authorName: 1 to 100 characters.");
  const text = cleanText(input.text ?? "");
  if (!text) throw invalidRequest("text: write the comment.");
  if (characterCount(text) > MAX_COMMENT_TEXT)
    throw invalidRequest(`text: at most ${MAX_COMMENT_TEXT} characters (this one has ${characterCount(text)}).`);
  const atMs = parseTimecode(input.timecode);
  if (atMs !== null) {
    if (!hasTimeline(row))
      throw invalidRequest("timecode: the post has no video or audio to point into; leave the time empty.");
    const duration = await mediaDurationMs(env, row);
    if (atMs > (duration ?? MAX_MOMENT_MS))
      throw invalidRequest(
        `timecode: ${formatTimecode(atMs)} is after the end of the ${row.mediaContentType!.startsWith("audio/") ? "audio" : "video"} (${formatTimecode(duration ?? MAX_MOMENT_MS)}).`,
      );
  }
  const d = orm(env.DB);
  const [{ n }] = await d.select({ n: count() }).from(postComments).where(eq(postComments.postId, row.id)).all();
  if (n >= MAX_THREAD) throw invalidRequest(`text: the post's thread is full (${MAX_THREAD} comments).`);
  const comment: CommentRow = {
    id: newId("cmt", now),
    postId: row.id,
    authorKind: author.kind,
    authorName: name,
    atMs,
    text,
    mediaVersion: row.mediaKey ? row.mediaVersion : null,
    createdAt: now,
  };
  await d.insert(postComments).values(comment).run();
  return commentView(comment);
}

/**
 * The comments a review event carries: those made since `since` (the post's submission for this
 * review), oldest first, as many as fit EVENT_COMMENTS_BYTES; `commentsOmitted` counts the rest
 * (GET /api/v1/posts/{id} has them all).
 */
export function eventComments(
  thread: CommentView[],
  since: number,
): { comments: CommentView[]; commentsOmitted: number } {
  const round = thread.filter((c) => Date.parse(c.createdAt) >= since);
  const comments: CommentView[] = [];
  let bytes = 0;
  for (const comment of round) {
    bytes += new TextEncoder().encode(JSON.stringify(comment)).length + 1;
    if (bytes > EVENT_COMMENTS_BYTES) break;
    comments.push(comment);
  }
  return { comments, commentsOmitted: round.length - comments.length };
}

/** Deleting a post deletes its thread (the statement for deletePost's batch). */
export const deleteThread = (db: D1Database, postId: string) =>
  orm(db).delete(postComments).where(eq(postComments.postId, postId));
