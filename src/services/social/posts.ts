/**
 * Social posts of a brand: text, media copied into the post's own storage, target networks, a
 * time in the brand's zone, and the state machine of post-states.ts. Client approval goes
 * through shareable links (capabilities, 14 days, revocable). Posts cost no credits.
 */
import { and, desc, eq, inArray, sql } from "drizzle-orm";
import { orm } from "../../db/client";
import { approvalLinks, jobs, postDeliveries, postReviews, posts } from "../../db/schema";
import type { Env } from "../../env";
import { AppError, invalidRequest, notFound } from "../../errors";
import { sha256Hex } from "../../lib/hash";
import { authSecret, signGrant, verifyGrant } from "../../lib/signing";
import { characterCount, displayName } from "../../lib/display-name";
import { newId, randomToken } from "../../lib/ids";
import { streamToR2 } from "../../lib/r2-stream";
import { utcToZoned, zonedToUtc } from "../../lib/zoned-time";
import { brandRow, type Network } from "./brands";
import { channelTarget } from "./channel-config";
import { transition, type PostAction, type PostState } from "./post-states";
import { resolveUpload } from "../media-jobs/uploads";
import { brandChannelsOf, emitBrandEvent, publishPolicy, schedulePublication } from "./publishing";
import { mastodonLength, publishers } from "./publishers";
import { blueskyTextRefusal } from "./bluesky";
import { commentsOf, deleteThread, eventComments, type CommentView } from "./post-comments";
import { probeR2Object } from "../../media/probe";
import { type MediaFacts, type PreflightFinding, preflight } from "./media-rules";

export const APPROVAL_LINK_TTL_MS = 14 * 24 * 3600 * 1000;
export const MAX_POST_TEXT = 5000;
const MAX_MEDIA_BYTES = 5_000_000_000;

type PostRow = typeof posts.$inferSelect;

export interface PostInput {
  brandId: string;
  text: string;
  networks?: Network[];
  /** Local time in the brand's zone (`2026-12-01T09:30`) or an ISO instant with offset. */
  scheduledAt?: string | null;
  media?: { uploadId?: string; jobId?: string } | null;
}

export interface PostView {
  postId: string;
  brandId: string;
  state: PostState;
  text: string;
  networks: Network[];
  scheduledAt: string | null;
  scheduledAtLocal: string | null;
  timeZone: string;
  /** `version`: 1 for the first file, +1 for each replacement (review comments name theirs). */
  media: {
    filename: string;
    contentType: string;
    url: string;
    version: number;
    durationSeconds: number | null;
  } | null;
  reviews: { decision: string; reviewerName: string; comment: string | null; at: string }[];
  /** The review thread (src/services/social/post-comments.ts), oldest first. */
  comments: CommentView[];
  deliveries: { network: string; status: string; url: string | null; attempts: number; error: string | null }[];
  /** What each network would refuse in the media (src/services/social/media-rules.ts); submit and schedule refuse while any remains. */
  preflight: { findings: PreflightFinding[] };
  failure: string | null;
  createdAt: string;
  publishedAt: string | null;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

async function view(db: D1Database, row: PostRow, timeZone: string): Promise<PostView> {
  const d = orm(db);
  const [reviews, deliveries, comments] = await Promise.all([
    d.select().from(postReviews).where(eq(postReviews.postId, row.id)).orderBy(postReviews.createdAt).all(),
    d.select().from(postDeliveries).where(eq(postDeliveries.postId, row.id)).all(),
    commentsOf(db, row.id),
  ]);
  return {
    postId: row.id,
    brandId: row.brandId,
    state: row.state,
    text: row.text,
    networks: JSON.parse(row.networks) as Network[],
    scheduledAt: iso(row.scheduledAt),
    scheduledAtLocal: row.scheduledAt === null ? null : utcToZoned(row.scheduledAt, timeZone),
    timeZone,
    media: row.mediaKey
      ? {
          filename: row.mediaFilename!,
          contentType: row.mediaContentType!,
          url: `/api/v1/posts/${row.id}/media`,
          version: row.mediaVersion,
          durationSeconds: row.mediaDurationMs === null ? null : row.mediaDurationMs / 1000,
        }
      : null,
    reviews: reviews.map((r) => ({
      decision: r.decision,
      reviewerName: r.reviewerName,
      comment: r.comment,
      at: new Date(r.createdAt).toISOString(),
    })),
    comments,
    deliveries: deliveries.map((x) => ({
      network: x.network,
      status: x.status,
      url: x.externalUrl,
      attempts: x.attempts,
      error: x.lastError,
    })),
    preflight: { findings: preflight(JSON.parse(row.networks) as Network[], factsOf(row.mediaFacts)) },
    failure: row.failure,
    createdAt: new Date(row.createdAt).toISOString(),
    publishedAt: iso(row.publishedAt),
  };
}

const factsOf = (json: string | null): MediaFacts | null => (json ? (JSON.parse(json) as MediaFacts) : null);

/** The media's facts for the preflight: its probe and size, or null when the file cannot be probed. */
async function probeFacts(env: Env, key: string, size: number): Promise<MediaFacts | null> {
  const probe = await probeR2Object(env.MEDIA, key, size).catch(() => null);
  if (!probe) return null;
  const { kind, container, mimeType, durationMs, videoCodec, audioCodec, width, height, frameRate } = probe;
  return { kind, container, mimeType, durationMs, videoCodec, audioCodec, width, height, frameRate, bytes: size };
}

/** The facts of a post's media, probing media attached before facts were kept (and keeping them). */
async function mediaFactsOf(
  env: Env,
  row: Pick<PostRow, "id" | "mediaKey" | "mediaFacts">,
): Promise<MediaFacts | null> {
  if (!row.mediaKey) return null;
  if (row.mediaFacts) return factsOf(row.mediaFacts);
  const head = await env.MEDIA.head(row.mediaKey);
  const facts = head ? await probeFacts(env, row.mediaKey, head.size) : null;
  if (facts)
    await orm(env.DB)
      .update(posts)
      .set({ mediaFacts: JSON.stringify(facts) })
      .where(eq(posts.id, row.id))
      .run();
  return facts;
}

/** Refuses media a network of the post would refuse, each reason named. */
function requireFitMedia(networks: Network[], facts: MediaFacts | null): void {
  const findings = preflight(networks, facts);
  if (findings.length > 0) throw invalidRequest(`media: ${findings.map((f) => f.message).join(" ")}`);
}

export async function postRow(db: D1Database, accountId: string, postId: string): Promise<PostRow> {
  const row = await orm(db)
    .select()
    .from(posts)
    .where(and(eq(posts.id, postId), eq(posts.accountId, accountId)))
    .get();
  if (!row) throw notFound(`Post ${postId.slice(0, 64)} not found.`);
  return row;
}

/** The last instant an RFC 3339 time (four-digit year) can state; later ones would be shown as `+010000-...`. */
const LAST_INSTANT = Date.UTC(9999, 11, 31, 23, 59, 59);

/**
 * `scheduledAt` as an instant: a local time in the brand's zone, an ISO time with offset, or
 * `now` (an assistant has no clock to write the present with).
 */
function parseTime(raw: string | null | undefined, timeZone: string, now: number): number | null | undefined {
  if (raw === undefined) return undefined;
  if (raw === null) return null;
  if (raw.trim().toLowerCase() === "now") return now;
  const instant = zonedToUtc(raw, timeZone);
  if (instant === null)
    throw invalidRequest(
      `scheduledAt: '${raw.slice(0, 40)}' is not a time: give 2026-12-01T09:30 (in ${timeZone}), an ISO time with offset, or now.`,
    );
  if (instant > LAST_INSTANT) throw invalidRequest("scheduledAt: must be before the year 10000.");
  return instant;
}

/** Refuses any of `chosen` the brand has no channel for, naming the ones it has. */
function requireChannels(chosen: Network[], available: Network[], hint = ""): void {
  for (const network of chosen)
    if (!available.includes(network))
      throw invalidRequest(
        `networks: the brand does not publish to ${String(network).slice(0, 32)} (it has: ${available.join(", ") || "none"}).${hint}`,
      );
}

/**
 * Bluesky's limit (300 graphemes) is the network's own, not an instance's that could change:
 * a text over it is refused from the draft on, when the post is created or its text or networks
 * change, so nothing is saved that Bluesky would refuse.
 */
function checkBlueskyText(networks: Network[], text: string): void {
  const refusal = networks.includes("bluesky") ? blueskyTextRefusal(text) : null;
  if (refusal) throw invalidRequest(refusal);
}

async function checkNetworks(db: D1Database, brandId: string, networks: Network[] | undefined): Promise<Network[]> {
  const available = (await brandChannelsOf(db, brandId)).map((c) => c.network);
  const chosen = networks ?? available;
  requireChannels(chosen, available);
  return [...new Set(chosen)];
}

/**
 * A post headed for publication (submitted, scheduled, or edited while it is) needs somewhere to
 * go, or it would count as published having reached nobody; each of its networks must still be
 * one of the brand's (a channel removed after the post was written would fail it at publication,
 * after a client approved it); and a text each network accepts:
 * Mastodon refuses a status over its instance's limit (a link counts 23 characters), and a client
 * must not approve a post that cannot be published. Drafts may be longer while they are written.
 * An instance that does not say its limit is not second-guessed: its refusal comes at publication.
 */
async function checkPublishable(
  env: Env,
  brandId: string,
  networksJson: string,
  text: string,
  facts: MediaFacts | null,
): Promise<void> {
  const networks = JSON.parse(networksJson) as Network[];
  if (networks.length === 0) {
    throw invalidRequest(
      "networks: the post has no network to publish to; connect a channel to the brand and choose its network first.",
    );
  }
  const channels = await brandChannelsOf(env.DB, brandId);
  requireChannels(
    networks,
    channels.map((c) => c.network),
    " Take it out of the post's networks, or connect it to the brand again.",
  );
  checkBlueskyText(networks, text);
  requireFitMedia(networks, facts);
  const channel = channels.find((c) => c.network === "mastodon");
  if (!networks.includes("mastodon") || !channel) return;
  const limits = await publishers.mastodon.textLimits({ instanceUrl: channelTarget(channel) }, publishPolicy(env));
  if (!limits) return;
  const length = mastodonLength(text, limits.perUrl);
  if (length > limits.maxCharacters) {
    throw invalidRequest(
      `text: ${length} characters as Mastodon counts them (each link ${limits.perUrl}); the brand's instance allows ${limits.maxCharacters}. Shorten it, or leave Mastodon out of networks.`,
    );
  }
}

/**
 * Who attaches media: uploads belong to the account, a job's result only to the key that made
 * it (REST), or to the account's connector, as for reading the job itself.
 */
export interface PostAuthor {
  accountId: string;
  keyId: string;
}

/** Copies an upload or a job result into the post's own storage, so it outlives the 3-hour retention. */
async function attachMedia(
  env: Env,
  author: PostAuthor,
  postId: string,
  media: { uploadId?: string; jobId?: string },
  now: number,
) {
  let source: { key: string; filename: string; contentType: string; durationMs?: number };
  if (media.uploadId && media.jobId) throw invalidRequest("media: give uploadId or jobId, not both.");
  if (media.uploadId) {
    const upload = await resolveUpload(env.DB, author.accountId, media.uploadId, "media.uploadId", now);
    source = {
      key: upload.objectKey,
      filename: upload.filename,
      contentType: upload.mimeType,
      durationMs: upload.durationMs,
    };
  } else if (media.jobId) {
    // Another key's job answers as an unknown one. A test key's result is marked TEST: never published.
    const job = await orm(env.DB)
      .select()
      .from(jobs)
      .where(
        and(
          eq(jobs.id, media.jobId),
          eq(jobs.accountId, author.accountId),
          eq(jobs.keyId, author.keyId),
          eq(jobs.mode, "live"),
        ),
      )
      .get();
    if (!job || job.status !== "completed" || !job.resultKey || (job.expiresAt ?? 0) <= now)
      throw invalidRequest("media.jobId: no completed job result with this id is available.");
    source = {
      key: job.resultKey,
      filename: job.resultFilename!,
      contentType: job.resultContentType ?? "application/octet-stream",
    };
  } else {
    throw invalidRequest("media: give uploadId or jobId.");
  }
  const object = await env.MEDIA.get(source.key);
  if (!object) throw invalidRequest("media: the file is no longer available.");
  const key = `posts/${postId}/${now}-${source.filename}`;
  const { size } = await streamToR2(env.MEDIA, key, object.body, {
    maxBytes: MAX_MEDIA_BYTES,
    contentType: source.contentType,
  });
  // Its length bounds review comments' moments; a job's result is probed here, as uploads were.
  const timed = /^(video|audio)\//.test(source.contentType);
  const facts = await probeFacts(env, key, size);
  const durationMs = timed ? (source.durationMs ?? facts?.durationMs) : undefined;
  return {
    mediaKey: key,
    mediaFilename: source.filename,
    mediaContentType: source.contentType,
    mediaDurationMs: durationMs || null,
    mediaFacts: facts ? JSON.stringify(facts) : null,
  };
}

export async function createPost(env: Env, author: PostAuthor, input: PostInput, now: number): Promise<PostView> {
  const { accountId } = author;
  // A reference in the body, like an uploadId: a 400 naming the field (404 is for the path).
  const brand = await brandRow(env.DB, accountId, input.brandId).catch((error: unknown) => {
    throw error instanceof AppError && error.code === "not_found"
      ? invalidRequest("brandId: no brand with this id on the account.")
      : error;
  });
  if (!input.text.trim() || input.text.length > MAX_POST_TEXT)
    throw invalidRequest(`text: 1 to ${MAX_POST_TEXT} characters.`);
  const networks = await checkNetworks(env.DB, brand.id, input.networks);
  checkBlueskyText(networks, input.text);
  const scheduledAt = parseTime(input.scheduledAt, brand.timeZone, now) ?? null;
  const id = newId("pst", now);
  const media = input.media ? await attachMedia(env, author, id, input.media, now) : {};
  const row: PostRow = {
    id,
    brandId: brand.id,
    accountId,
    text: input.text,
    mediaKey: null,
    mediaFilename: null,
    mediaContentType: null,
    mediaDurationMs: null,
    mediaFacts: null,
    ...media,
    mediaVersion: input.media ? 1 : 0,
    networks: JSON.stringify(networks),
    scheduledAt,
    state: "draft",
    failure: null,
    createdAt: now,
    updatedAt: now,
    submittedAt: null,
    decidedAt: null,
    publishedAt: null,
  };
  await orm(env.DB).insert(posts).values(row).run();
  return view(env.DB, row, brand.timeZone);
}

export async function getPost(db: D1Database, accountId: string, postId: string): Promise<PostView> {
  const row = await postRow(db, accountId, postId);
  const brand = await brandRow(db, accountId, row.brandId);
  return view(db, row, brand.timeZone);
}

export async function listPosts(
  db: D1Database,
  accountId: string,
  filter: { brandId?: string; state?: PostState } = {},
): Promise<PostView[]> {
  const conditions = [
    eq(posts.accountId, accountId),
    ...(filter.brandId ? [eq(posts.brandId, filter.brandId)] : []),
    ...(filter.state ? [eq(posts.state, filter.state)] : []),
  ];
  const rows = await orm(db)
    .select()
    .from(posts)
    .where(and(...conditions))
    .orderBy(desc(posts.createdAt))
    .limit(200)
    .all();
  const zones = new Map<string, string>();
  return Promise.all(
    rows.map(async (row) => {
      if (!zones.has(row.brandId)) zones.set(row.brandId, (await brandRow(db, accountId, row.brandId)).timeZone);
      return view(db, row, zones.get(row.brandId)!);
    }),
  );
}

/** Moves a post through the state machine, guarded by the state it was read in (no lost race). */
async function move(
  env: Env,
  row: PostRow,
  action: PostAction,
  needsApproval: boolean,
  changes: Partial<PostRow>,
  now: number,
): Promise<PostRow> {
  const state = transition(row.state, action, needsApproval);
  const next = { ...changes, state, updatedAt: now };
  const updated = await orm(env.DB)
    .update(posts)
    .set(next)
    .where(and(eq(posts.id, row.id), eq(posts.state, row.state)))
    .returning()
    .get();
  if (!updated)
    throw invalidRequest(
      `state: the post changed meanwhile (now ${(await orm(env.DB).select({ s: posts.state }).from(posts).where(eq(posts.id, row.id)).get())?.s}); try again.`,
    );
  if (updated.state === "scheduled") await schedulePublication(env, updated.brandId, updated.scheduledAt!);
  return updated;
}

export async function updatePost(
  env: Env,
  author: PostAuthor,
  postId: string,
  input: Partial<Omit<PostInput, "brandId">>,
  now: number,
): Promise<PostView> {
  const { accountId } = author;
  const row = await postRow(env.DB, accountId, postId);
  const brand = await brandRow(env.DB, accountId, row.brandId);
  if (input.text !== undefined && (!input.text.trim() || input.text.length > MAX_POST_TEXT))
    throw invalidRequest(`text: 1 to ${MAX_POST_TEXT} characters.`);
  const changes: Partial<PostRow> = {
    ...(input.text !== undefined ? { text: input.text } : {}),
    ...(input.networks !== undefined
      ? { networks: JSON.stringify(await checkNetworks(env.DB, brand.id, input.networks)) }
      : {}),
  };
  const scheduledAt = parseTime(input.scheduledAt, brand.timeZone, now);
  if (scheduledAt !== undefined) {
    // A post that stays scheduled after the edit needs a time still to come, as `schedule` does.
    if (transition(row.state, "edit", brand.requiresApproval) === "scheduled") {
      if (scheduledAt === null)
        throw invalidRequest("scheduledAt: a scheduled post keeps a time; unschedule it first to clear it.");
      if (scheduledAt < now - 60_000) throw invalidRequest("scheduledAt: is in the past.");
    }
    changes.scheduledAt = scheduledAt;
  }
  // Before any media is copied: a refused edit leaves nothing behind.
  if (changes.networks !== undefined || changes.text !== undefined)
    checkBlueskyText(JSON.parse(changes.networks ?? row.networks), changes.text ?? row.text);
  const stays = transition(row.state, "edit", brand.requiresApproval);
  const headed = stays === "scheduled" || stays === "pending_approval";
  if (headed && (changes.networks !== undefined || changes.text !== undefined)) {
    await checkPublishable(
      env,
      brand.id,
      changes.networks ?? row.networks,
      changes.text ?? row.text,
      await mediaFactsOf(env, row),
    );
  }
  if (input.media !== undefined) {
    Object.assign(
      changes,
      input.media
        ? { ...(await attachMedia(env, author, postId, input.media, now)), mediaVersion: row.mediaVersion + 1 }
        : { mediaKey: null, mediaFilename: null, mediaContentType: null, mediaDurationMs: null, mediaFacts: null },
    );
    // New media on a post headed for publication meets the networks' rules too; a refused file is not kept.
    if (headed && changes.mediaKey) {
      try {
        requireFitMedia(JSON.parse(changes.networks ?? row.networks) as Network[], factsOf(changes.mediaFacts ?? null));
      } catch (error) {
        await env.MEDIA.delete(changes.mediaKey);
        throw error;
      }
    }
  }
  const updated = await move(env, row, "edit", brand.requiresApproval, changes, now);
  if (input.media !== undefined && row.mediaKey && row.mediaKey !== updated.mediaKey)
    await env.MEDIA.delete(row.mediaKey);
  return view(env.DB, updated, brand.timeZone);
}

/** submit, schedule (at the post's time or `scheduledAt`), unschedule, cancel. */
export async function actOnPost(
  env: Env,
  accountId: string,
  postId: string,
  action: "submit" | "schedule" | "unschedule" | "cancel",
  options: { scheduledAt?: string },
  now: number,
): Promise<PostView> {
  const row = await postRow(env.DB, accountId, postId);
  const brand = await brandRow(env.DB, accountId, row.brandId);
  const changes: Partial<PostRow> = {};
  if (action === "schedule") {
    const at = parseTime(options.scheduledAt, brand.timeZone, now) ?? row.scheduledAt;
    if (at === null || at === undefined) throw invalidRequest("scheduledAt: Required to schedule the post.");
    if (at < now - 60_000) throw invalidRequest("scheduledAt: is in the past.");
    changes.scheduledAt = at;
  }
  if (action === "submit") changes.submittedAt = now;
  // Submitted for approval, or scheduled straight away: either way headed for publication.
  if (action === "schedule" || action === "submit")
    await checkPublishable(env, brand.id, row.networks, row.text, await mediaFactsOf(env, row));
  const updated = await move(env, row, action, brand.requiresApproval, changes, now);
  return view(env.DB, updated, brand.timeZone);
}

/** Deletes the post and its media; a post being published cannot be deleted (cancel it first). */
export async function deletePost(env: Env, accountId: string, postId: string): Promise<void> {
  const row = await postRow(env.DB, accountId, postId);
  if (row.state === "scheduled") throw invalidRequest("state: a scheduled post cannot be deleted; cancel it first.");
  const d = orm(env.DB);
  await d.batch([
    d.delete(approvalLinks).where(eq(approvalLinks.postId, postId)),
    d.delete(postReviews).where(eq(postReviews.postId, postId)),
    deleteThread(env.DB, postId),
    d.delete(postDeliveries).where(eq(postDeliveries.postId, postId)),
    d.delete(posts).where(eq(posts.id, postId)),
  ] as never);
  if (row.mediaKey) await env.MEDIA.delete(row.mediaKey);
}

export async function postMedia(env: Env, accountId: string, postId: string): Promise<R2ObjectBody> {
  const row = await postRow(env.DB, accountId, postId);
  const object = row.mediaKey ? await env.MEDIA.get(row.mediaKey) : null;
  if (!object) throw notFound("This post has no media.");
  return object;
}

// --- Media links for the connector ---------------------------------------------------------------

/** How long a connector's link to a post's media works (the assistant hands it on at once). */
export const POST_MEDIA_LINK_TTL_MS = 3600 * 1000;

interface PostMediaGrant {
  purpose: "post-media";
  post: string;
  /** The media object signed for: replacing or removing the media ends the link. */
  key: string;
  exp: number;
}

const linkSecret = (env: Env) => authSecret(env, "Media links are not configured");

/**
 * The post as the connector shows it: `media.url` an absolute link that needs no API key, valid
 * an hour. REST's `/api/v1/posts/{id}/media` takes a key, which a connector user may not have
 * (solo and starter plans have no REST access).
 */
export async function withMediaLink(
  env: Env,
  accountId: string,
  post: PostView,
  origin: string,
  now: number,
): Promise<PostView> {
  if (!post.media) return post;
  const row = await postRow(env.DB, accountId, post.postId);
  if (!row.mediaKey) return post;
  const grant: PostMediaGrant = {
    purpose: "post-media",
    post: row.id,
    key: row.mediaKey,
    exp: now + POST_MEDIA_LINK_TTL_MS,
  };
  return {
    ...post,
    media: { ...post.media, url: `${origin}/api/post-media/${await signGrant(linkSecret(env), grant)}` },
  };
}

/** The media a connector link names, while it is still that post's media; otherwise 404. */
export async function linkedPostMedia(
  env: Env,
  token: string,
  now: number,
): Promise<{ key: string; filename: string; contentType: string }> {
  const grant =
    token.length <= 2048 ? await verifyGrant<PostMediaGrant>(linkSecret(env), token, now).catch(() => null) : null;
  const row =
    grant?.purpose === "post-media"
      ? await orm(env.DB).select().from(posts).where(eq(posts.id, grant.post)).get()
      : undefined;
  if (!grant || !row?.mediaKey || row.mediaKey !== grant.key)
    throw notFound("This media link does not exist or has expired.");
  return {
    key: row.mediaKey,
    filename: row.mediaFilename!,
    contentType: row.mediaContentType ?? "application/octet-stream",
  };
}

// --- Client approval ----------------------------------------------------------------------------

export async function createApprovalLink(env: Env, accountId: string, postId: string, origin: string, now: number) {
  const row = await postRow(env.DB, accountId, postId);
  if (row.state !== "pending_approval")
    throw invalidRequest(
      `state: only a post pending approval can be shared for review (this one is ${row.state}); submit it first.`,
    );
  const token = randomToken(24);
  const linkId = newId("apl", now);
  const expiresAt = now + APPROVAL_LINK_TTL_MS;
  await orm(env.DB)
    .insert(approvalLinks)
    .values({ id: linkId, postId, tokenHash: await sha256Hex(token), expiresAt, createdAt: now })
    .run();
  return { linkId, url: `${origin}/review/${token}`, expiresAt: new Date(expiresAt).toISOString() };
}

export async function revokeApprovalLink(
  db: D1Database,
  accountId: string,
  linkId: string,
  now: number,
): Promise<void> {
  const link = await orm(db).select().from(approvalLinks).where(eq(approvalLinks.id, linkId)).get();
  // Another account's link answers exactly as an unknown one (its post id is not told).
  const owned = link
    ? await orm(db)
        .select({ id: posts.id })
        .from(posts)
        .where(and(eq(posts.id, link.postId), eq(posts.accountId, accountId)))
        .get()
    : undefined;
  if (!link || !owned) throw notFound("No such approval link.");
  await orm(db).update(approvalLinks).set({ revokedAt: now }).where(eq(approvalLinks.id, linkId)).run();
}

/** The post a review link opens, or null when unknown, expired or revoked. */
export async function postForReview(db: D1Database, token: string, now: number) {
  if (!token || token.length > 64) return null;
  const link = await orm(db)
    .select()
    .from(approvalLinks)
    .where(eq(approvalLinks.tokenHash, await sha256Hex(token)))
    .get();
  if (!link || link.revokedAt !== null || link.expiresAt <= now) return null;
  const row = await orm(db).select().from(posts).where(eq(posts.id, link.postId)).get();
  if (!row) return null;
  const brand = await brandRow(db, row.accountId, row.brandId);
  return { post: await view(db, row, brand.timeZone), brand, row };
}

/** The client's decision: recorded with name and time, sent to the brand's webhook. */
export async function reviewPost(
  env: Env,
  token: string,
  input: { decision: "approve" | "request_changes"; reviewerName: string; comment?: string },
  now: number,
): Promise<PostView> {
  const found = await postForReview(env.DB, token, now);
  if (!found) throw notFound("This review link is invalid, expired or revoked.");
  const reviewerName = displayName(input.reviewerName);
  if (!reviewerName || characterCount(reviewerName) > 100) throw invalidRequest("reviewerName: 1 to 100 characters.");
  const comment = input.comment?.trim() || null;
  // The comments made on this review (since the post was submitted) go with the decision.
  const since = found.row.submittedAt ?? 0;
  const thread = eventComments(found.post.comments, since);
  const commented = found.post.comments.some((c) => c.author === "client" && Date.parse(c.createdAt) >= since);
  if (input.decision === "request_changes" && !comment && !commented)
    throw invalidRequest("comment: say what should change, here or in a comment on the post.");
  if (comment && comment.length > 2000) throw invalidRequest("comment: at most 2000 characters.");
  const updated = await move(env, found.row, input.decision, found.brand.requiresApproval, { decidedAt: now }, now);
  const decision = input.decision === "approve" ? "approved" : "changes_requested";
  await orm(env.DB)
    .insert(postReviews)
    .values({ id: newId("rev", now), postId: updated.id, decision, reviewerName, comment, createdAt: now })
    .run();
  await emitBrandEvent(env, found.brand, {
    type: `post.${decision}`,
    postId: updated.id,
    reviewerName,
    comment,
    mediaVersion: updated.mediaKey ? updated.mediaVersion : null,
    ...thread,
    at: new Date(now).toISOString(),
  });
  return view(env.DB, updated, found.brand.timeZone);
}

/** Post media of posts published more than 30 days ago is deleted (the post keeps its text). */
export async function expirePostMedia(env: Env, now: number): Promise<number> {
  const old = await orm(env.DB)
    .select({ id: posts.id, key: posts.mediaKey })
    .from(posts)
    .where(
      and(
        eq(posts.state, "published"),
        sql`${posts.publishedAt} < ${now - 30 * 24 * 3600 * 1000}`,
        sql`${posts.mediaKey} IS NOT NULL`,
      ),
    )
    .limit(100)
    .all();
  for (const row of old) await env.MEDIA.delete(row.key!);
  if (old.length)
    await orm(env.DB)
      .update(posts)
      .set({ mediaKey: null })
      .where(
        inArray(
          posts.id,
          old.map((r) => r.id),
        ),
      )
      .run();
  return old.length;
}
