/**
 * Publishers, one per network, behind one interface. `webhook`: a signed POST to the brand's
 * automation endpoint (Zapier, Make, n8n...): `Webhook-Timestamp` and `Webhook-Signature:
 * v1=<hex HMAC-SHA256(secret, timestamp + "." + body)>`. `mastodon`: the open Mastodon API
 * (media upload, then a status with an Idempotency-Key so a retried call never posts twice),
 * which also gives the engagement counts. Every target passes the SSRF checks.
 */
import { hmacHex } from "../../lib/signing";
import { assertPublicUrl, type UrlPolicy } from "../../lib/public-url";

export class PublishError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

export interface Publication {
  postId: string;
  text: string;
  brand: { id: string; name: string; secret: string };
  media: {
    filename: string;
    contentType: string;
    read: () => Promise<R2ObjectBody | null>;
    url: () => Promise<string | null>;
  } | null;
  scheduledAt: string;
}

export interface Engagement {
  views: number;
  likes: number;
  comments: number;
  shares: number;
}

const TIMEOUT_MS = 20_000;

async function send(url: URL, init: RequestInit, timeoutMs = TIMEOUT_MS): Promise<Response> {
  let response: Response;
  try {
    response = await fetch(url, { ...init, redirect: "manual", signal: AbortSignal.timeout(timeoutMs) });
  } catch (error) {
    throw new PublishError(
      `${url.host} did not answer (${error instanceof Error ? error.message : String(error)})`,
      true,
    );
  }
  if (response.ok) return response;
  // Only the status is reported: what a remote server answers is never shown to the customer
  // (a brand's URL could be aimed at a host whose pages should not be read through us).
  await response.body?.cancel();
  // 4xx other than 408/429 will not get better by retrying.
  throw new PublishError(
    `${url.host} answered HTTP ${response.status}`,
    response.status >= 500 || response.status === 408 || response.status === 429,
  );
}

async function signedPost(rawUrl: string, secret: string, payload: unknown, policy: UrlPolicy): Promise<Response> {
  const url = await assertPublicUrl(rawUrl, policy).catch((error: Error) => {
    throw new PublishError(`webhook URL refused: ${error.message}`, false);
  });
  const body = JSON.stringify(payload);
  const timestamp = String(Math.floor(Date.now() / 1000));
  return send(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "user-agent": "media-credits-api/1.0",
      "webhook-timestamp": timestamp,
      "webhook-signature": `v1=${await hmacHex(secret, `${timestamp}.${body}`)}`,
    },
    body,
  });
}

const webhook = {
  /** A brand event (review, publication) to the brand's webhook URL. */
  async send(url: string, secret: string, event: Record<string, unknown>, policy: UrlPolicy): Promise<void> {
    await signedPost(url, secret, event, policy);
  },
  async publish(config: { url: string }, post: Publication, policy: UrlPolicy): Promise<{ id?: string; url?: string }> {
    const mediaUrl = post.media ? await post.media.url() : null;
    const response = await signedPost(
      config.url,
      post.brand.secret,
      {
        type: "post.publish",
        postId: post.postId,
        brand: { id: post.brand.id, name: post.brand.name },
        text: post.text,
        media: post.media
          ? { filename: post.media.filename, contentType: post.media.contentType, url: mediaUrl }
          : null,
        scheduledAt: post.scheduledAt,
      },
      policy,
    );
    const answer = (await response.json().catch(() => ({}))) as { id?: unknown; url?: unknown };
    return publishedPost(answer.id, answer.url);
  },
};

/**
 * What a network's answer may put on a post: an id of at most 200 plain characters and an http(s)
 * link (on `host` when given: a Mastodon status lives on its instance). Anything else the server
 * said stays unread: a remote answer is not relayed to the customer beyond these two fields.
 */
export function publishedPost(id: unknown, url: unknown, host?: string): { id?: string; url?: string } {
  const safeId = typeof id === "string" && /^[\w.:@-]{1,200}$/.test(id) ? id : undefined;
  let safeUrl: string | undefined;
  try {
    const parsed = typeof url === "string" && url.length <= 2048 ? new URL(url) : undefined;
    if (
      parsed &&
      (parsed.protocol === "https:" || parsed.protocol === "http:") &&
      !parsed.username &&
      !parsed.password &&
      (host === undefined || parsed.host === host)
    )
      safeUrl = parsed.toString();
  } catch {}
  return { id: safeId, url: safeUrl };
}

async function instance(config: { instanceUrl: string }, path: string, policy: UrlPolicy): Promise<URL> {
  const url = await assertPublicUrl(`${config.instanceUrl}${path}`, policy).catch((error: Error) => {
    throw new PublishError(`Mastodon instance refused: ${error.message}`, false);
  });
  return url;
}

/** Mastodon's length of any link in a status (its instances may say another). */
const MASTODON_URL_CHARACTERS = 23;
const URL_IN_TEXT = /https?:\/\/[^\s<>"]*[^\s<>".,;:!?)\]'"»”]/g;

/**
 * The length Mastodon counts: characters as people see them (an emoji or a flag is one), every
 * link as `perUrl` characters whatever its length (trailing punctuation is not part of it).
 */
export function mastodonLength(text: string, perUrl = MASTODON_URL_CHARACTERS): number {
  let links = 0;
  const rest = text.replace(URL_IN_TEXT, () => {
    links++;
    return "";
  });
  return [...new Intl.Segmenter().segment(rest)].length + links * perUrl;
}

/** An instance's answer larger than this is not a configuration: not read. */
const MAX_INSTANCE_BYTES = 1024 * 1024;

const mastodon = {
  /**
   * The instance's status limits (`GET /api/v2/instance`, configuration.statuses), or null when it
   * does not give them (no answer within 5 s, an error, another shape): then nothing is checked
   * before publication, rather than refusing a text by a default the instance may not have.
   */
  async textLimits(
    config: { instanceUrl: string },
    policy: UrlPolicy,
  ): Promise<{ maxCharacters: number; perUrl: number } | null> {
    try {
      // A refusal or no answer throws (PublishError), which means no limits here.
      const response = await send(await instance(config, "/api/v2/instance", policy), {}, 5_000);
      if (Number(response.headers.get("content-length") ?? "0") > MAX_INSTANCE_BYTES) {
        await response.body?.cancel();
        return null;
      }
      const body = await response.text();
      if (body.length > MAX_INSTANCE_BYTES) return null;
      const statuses = (
        JSON.parse(body) as {
          configuration?: { statuses?: { max_characters?: unknown; characters_reserved_per_url?: unknown } };
        }
      ).configuration?.statuses;
      const positive = (value: unknown) =>
        typeof value === "number" && Number.isInteger(value) && value > 0 ? value : undefined;
      const maxCharacters = positive(statuses?.max_characters);
      if (maxCharacters === undefined) return null;
      return { maxCharacters, perUrl: positive(statuses?.characters_reserved_per_url) ?? MASTODON_URL_CHARACTERS };
    } catch {
      return null;
    }
  },
  async publish(
    config: { instanceUrl: string; accessToken: string },
    post: Publication,
    policy: UrlPolicy,
  ): Promise<{ id?: string; url?: string }> {
    const auth = { authorization: `Bearer ${config.accessToken}` };
    const mediaIds: string[] = [];
    if (post.media) {
      const object = await post.media.read();
      if (!object) throw new PublishError("the post's media is no longer stored", false);
      const form = new FormData();
      form.append(
        "file",
        new File([await object.arrayBuffer()], post.media.filename, { type: post.media.contentType }),
      );
      const uploaded = await send(await instance(config, "/api/v2/media", policy), {
        method: "POST",
        headers: auth,
        body: form,
      });
      mediaIds.push(((await uploaded.json()) as { id: string }).id);
    }
    const body = new URLSearchParams({ status: post.text, visibility: "public" });
    for (const id of mediaIds) body.append("media_ids[]", id);
    const response = await send(await instance(config, "/api/v1/statuses", policy), {
      method: "POST",
      headers: { ...auth, "idempotency-key": `${post.postId}:mastodon` },
      body,
    });
    const status = (await response.json().catch(() => ({}))) as { id?: unknown; url?: unknown };
    const published = publishedPost(status.id, status.url, new URL(config.instanceUrl).host);
    if (!published.id) throw new PublishError("the instance accepted the status but gave no id", false);
    return published;
  },
  async engagement(
    config: { instanceUrl: string; accessToken: string },
    statusId: string,
    policy: UrlPolicy,
  ): Promise<Engagement> {
    const response = await send(await instance(config, `/api/v1/statuses/${encodeURIComponent(statusId)}`, policy), {
      headers: { authorization: `Bearer ${config.accessToken}` },
    });
    const status = (await response.json()) as {
      favourites_count?: number;
      replies_count?: number;
      reblogs_count?: number;
    };
    // Mastodon does not count views.
    return {
      views: 0,
      likes: status.favourites_count ?? 0,
      comments: status.replies_count ?? 0,
      shares: status.reblogs_count ?? 0,
    };
  },
};

export const publishers = { webhook, mastodon } as const;
