/**
 * Bluesky through the AT Protocol, with `@atproto/api`'s AtpAgent: a session from the channel's
 * app password (`com.atproto.server.createSession`), the post's image or video as a blob
 * (`com.atproto.repo.uploadBlob`, embedded as `app.bsky.embed.images` or `app.bsky.embed.video`),
 * then the `app.bsky.feed.post` record, and engagement read back with `app.bsky.feed.getPosts`.
 *
 * The record is written with `com.atproto.repo.putRecord` rather than createRecord, at a record
 * key derived from the post (a TID of its scheduled time and id) with `swapRecord: null`: the
 * same record again is a no-op on a PDS, so a publication retried after a lost answer finds the
 * post it made instead of posting twice (what Mastodon's Idempotency-Key does), and a different
 * record at that key is refused rather than overwritten.
 *
 * Every request of the agent goes through `guardedFetch`: the SSRF checks of the other publishers
 * (a session may move the agent to the account's own PDS host, which is checked too), a timeout,
 * no redirects. The library runs in workerd as it is; it is imported at the first Bluesky call,
 * not when the Worker starts (wrangler keeps it in the bundle, about 2.5 MB of the API Worker's
 * 6.5 MB, 310 KiB of its 1.04 MiB gzipped, but evaluates it only then); the limits below need
 * none of it.
 */
import { assertPublicUrl, type UrlPolicy } from "../../lib/public-url";
import { PublishError, type Engagement, type Publication } from "./publishers";

export const BLUESKY_DEFAULT_SERVICE = "https://bsky.social";
/** app.bsky.feed.post#text: 300 graphemes and 3000 bytes of UTF-8. */
export const BLUESKY_MAX_GRAPHEMES = 300;
const BLUESKY_MAX_TEXT_BYTES = 3000;
/** An app password as Bluesky makes them (Settings, Privacy and security, App passwords). */
export const APP_PASSWORD = /^[a-z0-9]{4}-[a-z0-9]{4}-[a-z0-9]{4}-[a-z0-9]{4}$/;
/** A handle (a domain name) or a DID, with an optional leading @ as people write handles. */
export const HANDLE_OR_DID =
  /^@?(?:(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+[a-zA-Z](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?|did:[a-z]+:[a-zA-Z0-9._:%-]+)$/;

const TIMEOUT_MS = 20_000;
/** A video of up to 300 MB goes up in one request. */
const UPLOAD_TIMEOUT_MS = 300_000;
/** getPosts takes at most 25 URIs. */
const GET_POSTS_BATCH = 25;

export interface BlueskyConfig {
  handle: string;
  appPassword: string;
  serviceUrl: string;
}

/** The handle as stored: no leading @, a handle in lower case (a DID keeps its case). */
export function normalHandle(raw: string): string {
  const bare = raw.trim().replace(/^@/, "");
  return bare.startsWith("did:") ? bare : bare.toLowerCase();
}

/**
 * Why Bluesky would refuse this text, or null: more than 300 graphemes (characters as people see
 * them: an emoji or a flag is one; links count in full, Bluesky does not shorten them) or more
 * than 3000 bytes. Written as a 400's message naming the field.
 */
export function blueskyTextRefusal(text: string): string | null {
  const graphemes = [...new Intl.Segmenter().segment(text)].length;
  if (graphemes > BLUESKY_MAX_GRAPHEMES)
    return `text: ${graphemes} characters as Bluesky counts them (an emoji is one, links count in full); Bluesky allows ${BLUESKY_MAX_GRAPHEMES}. Shorten it, or leave Bluesky out of networks.`;
  const bytes = new TextEncoder().encode(text).length;
  if (bytes > BLUESKY_MAX_TEXT_BYTES)
    return `text: ${bytes} bytes in UTF-8; Bluesky allows ${BLUESKY_MAX_TEXT_BYTES}. Shorten it, or leave Bluesky out of networks.`;
  return null;
}

type Lexicons = typeof import("@atproto/api")["lexicons"];

/** The largest blob a lexicon's field takes (app.bsky.embed.images: 2 MB an image, video: 300 MB). */
function maxBlobBytes(lexicons: Lexicons, def: string, field: string): number {
  const property = (lexicons.getDefOrThrow(def) as { properties?: Record<string, { maxSize?: number }> }).properties;
  return property?.[field]?.maxSize ?? Number.POSITIVE_INFINITY;
}

/**
 * The embed a post's media becomes, or a refusal no retry can fix: an image or an MP4 video
 * within the sizes of the lexicons of the pinned @atproto/api (a PDS with a lower limit says so
 * when the blob is uploaded).
 */
function embedKind(lexicons: Lexicons, contentType: string, size: number): "images" | "video" {
  const type = contentType.split(";")[0]!.trim().toLowerCase();
  const [kind, def, field] = type.startsWith("image/")
    ? (["images", "app.bsky.embed.images#image", "image"] as const)
    : type === "video/mp4"
      ? (["video", "app.bsky.embed.video", "video"] as const)
      : [];
  if (!kind) throw new PublishError(`Bluesky posts carry an image or an MP4 video, not ${type.slice(0, 64)}`, false);
  const max = maxBlobBytes(lexicons, def, field);
  if (size > max)
    throw new PublishError(
      `Bluesky takes ${kind === "video" ? "videos" : "images"} up to ${max / 1e6} MB; this one is ${(size / 1e6).toFixed(1)} MB`,
      false,
    );
  return kind;
}

const BASE32_SORTABLE = "234567abcdefghijklmnopqrstuvwxyz";

/**
 * The post's record key: a TID (53 bits of microseconds, 10 bits of clock id, 13 characters of
 * base32-sortable) at its scheduled time, the sub-millisecond part and the clock id taken from a
 * hash of the post id, so every attempt of one publication writes at the same key.
 */
export async function recordKey(postId: string, at: number): Promise<string> {
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(postId)));
  const micros = BigInt(at) * 1000n + BigInt(((hash[0]! << 8) | hash[1]!) % 1000);
  let n = (micros << 10n) | BigInt(((hash[2]! << 8) | hash[3]!) & 0x3ff);
  let key = "";
  for (let i = 0; i < 13; i++) {
    key = BASE32_SORTABLE[Number(n & 31n)] + key;
    n >>= 5n;
  }
  return key;
}

/** fetch for the agent: each URL checked as the other publishers' are, a timeout, no redirects. */
function guardedFetch(policy: UrlPolicy): typeof fetch {
  return async (input, init) => {
    const raw = input instanceof Request ? input.url : String(input);
    const url = await assertPublicUrl(raw, policy).catch((error: Error) => {
      throw new PublishError(`Bluesky service refused: ${error.message}`, false);
    });
    const timeout = url.pathname.endsWith("/com.atproto.repo.uploadBlob") ? UPLOAD_TIMEOUT_MS : TIMEOUT_MS;
    try {
      return await fetch(input, { ...init, redirect: "manual", signal: AbortSignal.timeout(timeout) });
    } catch (error) {
      throw new PublishError(
        `${url.host} did not answer (${error instanceof Error ? error.message : String(error)})`,
        true,
      );
    }
  };
}

/**
 * An error of the agent as a PublishError. Only the HTTP status and the XRPC error name (a word
 * of the protocol: AuthenticationRequired, RateLimitExceeded...) are reported, never the server's
 * message, as for the other networks.
 */
function publishError(error: unknown, host: string, step: "session" | "call"): PublishError {
  if (error instanceof PublishError) return error;
  const cause = (error as { cause?: unknown } | null)?.cause;
  if (cause instanceof PublishError) return cause;
  const status = (error as { status?: unknown } | null)?.status;
  const rawName = (error as { error?: unknown } | null)?.error;
  const name = typeof rawName === "string" && /^[A-Za-z]{1,40}$/.test(rawName) ? ` ${rawName}` : "";
  if (typeof status !== "number" || status === 1)
    return new PublishError(`${host} did not answer (${error instanceof Error ? error.message : String(error)})`, true);
  if (status === 2) return new PublishError(`${host} answered in a form Bluesky's API does not have`, false);
  if (step === "session" && (status === 400 || status === 401 || status === 403))
    return new PublishError(
      `${host} refused the handle or app password (HTTP ${status}${name}); check both, or connect the channel again`,
      false,
    );
  return new PublishError(`${host} answered HTTP ${status}${name}`, status >= 500 || status === 408 || status === 429);
}

type Agent = InstanceType<typeof import("@atproto/api")["AtpAgent"]>;

/** An agent with a session of the channel's account. */
async function signIn(config: BlueskyConfig, policy: UrlPolicy): Promise<{ agent: Agent; did: string; host: string }> {
  const { AtpAgent } = await import("@atproto/api");
  const host = new URL(config.serviceUrl).host;
  const agent = new AtpAgent({
    service: config.serviceUrl,
    fetch: guardedFetch(policy),
    headers: [["user-agent", "media-credits-api/1.0"]],
  });
  try {
    const session = await agent.login({ identifier: config.handle, password: config.appPassword });
    return { agent, did: session.data.did, host };
  } catch (error) {
    throw publishError(error, host, "session");
  }
}

const AT_URI = /^at:\/\/(did:[a-z]+:[a-zA-Z0-9._:%-]{1,200})\/app\.bsky\.feed\.post\/([234567a-z]{13})$/;

export const bluesky = {
  /** Publishes the post; returns its AT URI and its link on bsky.app. */
  async publish(config: BlueskyConfig, post: Publication, policy: UrlPolicy): Promise<{ id?: string; url?: string }> {
    const { agent, did, host } = await signIn(config, policy);
    const { RichText, lexicons } = await import("@atproto/api");
    try {
      let embed: Record<string, unknown> | undefined;
      if (post.media) {
        const object = await post.media.read();
        if (!object) throw new PublishError("the post's media is no longer stored", false);
        const kind = embedKind(lexicons, post.media.contentType, object.size);
        // Streamed with its length: a 300 MB video is not held in the Worker's memory.
        const { readable, writable } = new FixedLengthStream(object.size);
        object.body.pipeTo(writable).catch(() => {});
        const uploaded = await agent.uploadBlob(readable as unknown as Blob, { encoding: post.media.contentType });
        const blob = uploaded.data.blob;
        embed =
          kind === "video"
            ? { $type: "app.bsky.embed.video", video: blob }
            : { $type: "app.bsky.embed.images", images: [{ image: blob, alt: "" }] };
      }
      // Links, #tags and @mentions (handles resolved to DIDs). RichText leaves a mention that does
      // not resolve with an empty DID, which the PDS refuses as an invalid record: it stays text.
      const text = new RichText({ text: post.text });
      await text.detectFacets(agent);
      text.facets = text.facets?.filter((facet) =>
        facet.features.every(
          (feature) => feature.$type !== "app.bsky.richtext.facet#mention" || ("did" in feature && feature.did),
        ),
      );
      const rkey = await recordKey(post.postId, Date.parse(post.scheduledAt));
      const written = await agent.com.atproto.repo.putRecord({
        repo: did,
        collection: "app.bsky.feed.post",
        rkey,
        swapRecord: null,
        record: {
          $type: "app.bsky.feed.post",
          text: text.text,
          ...(text.facets?.length ? { facets: text.facets } : {}),
          ...(embed ? { embed } : {}),
          createdAt: post.scheduledAt,
        },
      });
      const uri = AT_URI.exec(written.data.uri);
      if (!uri || uri[1] !== did || uri[2] !== rkey)
        throw new PublishError(`${host} accepted the post but gave another record's address`, false);
      return { id: written.data.uri, url: `https://bsky.app/profile/${did}/post/${rkey}` };
    } catch (error) {
      throw publishError(error, host, "call");
    }
  },

  /**
   * Likes, replies, reposts and quotes of the posts at `uris` (app.bsky.feed.getPosts, 25 at a
   * time), as the stats' shape: replies are comments, reposts and quotes are shares, and Bluesky
   * counts no views. A post no longer there is left out.
   */
  async engagement(config: BlueskyConfig, uris: string[], policy: UrlPolicy): Promise<Map<string, Engagement>> {
    const counts = new Map<string, Engagement>();
    if (uris.length === 0) return counts;
    const { agent, host } = await signIn(config, policy);
    for (let i = 0; i < uris.length; i += GET_POSTS_BATCH) {
      try {
        const { data } = await agent.getPosts({ uris: uris.slice(i, i + GET_POSTS_BATCH) });
        for (const post of data.posts)
          counts.set(post.uri, {
            views: 0,
            likes: post.likeCount ?? 0,
            comments: post.replyCount ?? 0,
            shares: (post.repostCount ?? 0) + (post.quoteCount ?? 0),
          });
      } catch (error) {
        throw publishError(error, host, "call");
      }
    }
    return counts;
  },
};
