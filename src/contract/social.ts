/**
 * Brands, posts, channels, approval links and statistics: the input and output schemas, declared
 * once. REST (src/routes/v1/social.ts) validates and documents them (their `.openapi()` metadata
 * is the OpenAPI document's); the connector (src/mcp/social-tools.ts) takes the same schemas, with
 * the same bounds, and only adds descriptions worded for assistants at its edge.
 */
import { z } from "@hono/zod-openapi";
import { postStates } from "../services/social/post-states";
import { APP_PASSWORD, HANDLE_OR_DID } from "../services/social/bluesky";
import { PREFLIGHT_RULES } from "../services/social/media-rules";

/** Ids are at most 64 characters: a longer one is refused before any lookup. */
export const id = z.string().min(1).max(64);

export const socialNetwork = z.enum(["webhook", "mastodon", "bluesky"]);

export const Channel = z.discriminatedUnion("network", [
  z.object({
    network: z.literal("webhook"),
    url: z.string().max(2048).openapi({ description: "Endpoint of the brand's automation; receives signed POSTs" }),
  }),
  z.object({
    network: z.literal("mastodon"),
    instanceUrl: z.string().max(2048),
    accessToken: z.string().min(1).max(512).openapi({ description: "Token with write:statuses and write:media" }),
  }),
  z.object({
    network: z.literal("bluesky"),
    handle: z
      .string()
      .max(253)
      .regex(HANDLE_OR_DID, "a handle (brand.bsky.social) or a DID (did:plc:...)")
      .openapi({ example: "brand.bsky.social", description: "The account's handle or DID" }),
    appPassword: z
      .string()
      .regex(APP_PASSWORD, "an app password, xxxx-xxxx-xxxx-xxxx (Settings > Privacy and security > App passwords)")
      .openapi({
        description: "An app password of the account (xxxx-xxxx-xxxx-xxxx), never its own password; stored encrypted",
      }),
    serviceUrl: z
      .string()
      .max(2048)
      .optional()
      .openapi({ description: "The account's PDS or entryway (default https://bsky.social)" }),
  }),
]);

export const BrandInput = z
  .object({
    // 100 characters, counted by the service in code points (an emoji is one; two UTF-16 units here).
    name: z.string().min(1).max(200).openapi({ description: "1 to 100 characters" }),
    timeZone: z
      .string()
      .min(1)
      .max(64)
      .openapi({ example: "Europe/Paris", description: "IANA time zone of the brand's schedule" }),
    // No zod default: it would also fill a PATCH that leaves the field out (partial() keeps
    // defaults) and switch approval off; createBrand applies the default of false.
    requiresApproval: z.boolean().optional().openapi({
      default: false,
      description:
        "Posts need a client's approval before they can be scheduled (default false; a PATCH without it keeps the current setting)",
    }),
    webhookUrl: z.string().max(2048).nullable().optional().openapi({
      description: "Receives signed events: post.approved, post.changes_requested, post.published, post.failed",
    }),
    channels: z.array(Channel).max(5).optional(),
  })
  .openapi("BrandInput");

/** A PATCH of a brand: any field of BrandInput; channels, when given, replace its networks. */
export const BrandChanges = BrandInput.partial();

export const MediaRef = z
  .object({ uploadId: id.optional(), jobId: id.optional() })
  .openapi({ description: "An upload or a completed job's result, copied into the post's storage" });

export const PostInput = z
  .object({
    brandId: id,
    text: z.string().min(1).max(5000),
    networks: z.array(socialNetwork).max(5).optional().openapi({ description: "Default: every network of the brand" }),
    scheduledAt: z.string().max(40).nullable().optional().openapi({
      example: "2026-12-01T09:30",
      description: "Local time in the brand's zone, an ISO time with offset, or now; before the year 10000",
    }),
    media: MediaRef.nullable().optional(),
  })
  .openapi("PostInput");

/** A PATCH of a post: any field of PostInput but its brand. */
export const PostChanges = PostInput.omit({ brandId: true }).partial();

export const PostListQuery = z.object({ brandId: id.optional(), state: z.enum(postStates).optional() });

/** A comment in a post's review thread, by the owner (the client's come from the review page). */
export const PostCommentInput = z
  .object({
    // 2000 characters, counted by the service in code points (an emoji is one; two UTF-16 units here).
    text: z.string().min(1).max(4000).openapi({ description: "1 to 2000 characters" }),
    timecode: z.string().max(20).nullable().optional().openapi({
      example: "00:12",
      description:
        "The moment of the post's video or audio the comment is about: mm:ss, h:mm:ss or seconds (12.5); absent or null for the whole post",
    }),
  })
  .openapi("PostCommentInput");

export const postActions = ["submit", "schedule", "unschedule", "cancel"] as const;
export type PostAction = (typeof postActions)[number];

/** The body of a move; only schedule reads it. */
export const PostActionBody = z.object({
  scheduledAt: z
    .string()
    .max(40)
    .optional()
    .openapi({ description: "Local time in the brand's zone, an ISO time with offset, or now (publish at once)" }),
});

export const StatsQuery = z.object({
  from: z.string().max(40).optional().openapi({ description: "ISO date or time (default: 30 days before to)" }),
  to: z
    .string()
    .max(40)
    .optional()
    .openapi({ description: "ISO date or time (default: now); a bare date includes that whole day" }),
});

export const BrandRef = z.object({ brandId: id });
export const PostRef = z.object({ postId: id });
export const LinkRef = z.object({ linkId: id });

// Answers.

export const BrandSchema = z
  .object({
    brandId: z.string(),
    name: z.string(),
    timeZone: z.string(),
    requiresApproval: z.boolean(),
    webhookUrl: z.string().nullable(),
    webhookSecret: z.string().openapi({
      description:
        "Verifies Webhook-Signature: v1=hex(HMAC-SHA256(secret, Webhook-Timestamp + '.' + body)); also signs engagement reports",
    }),
    networks: z.array(z.object({ network: socialNetwork, target: z.string() })),
    createdAt: z.string(),
  })
  .openapi("Brand");

export const BrandList = z.object({ brands: z.array(BrandSchema) });

export const PostCommentSchema = z
  .object({
    commentId: z.string(),
    author: z.enum(["client", "owner"]),
    authorName: z.string().nullable().openapi({ description: "The client's name; null for the owner" }),
    atSeconds: z.number().nullable().openapi({ description: "Moment in the media in seconds; null: the whole post" }),
    timecode: z.string().nullable().openapi({ example: "00:12", description: "The same moment as mm:ss (h:mm:ss)" }),
    text: z.string(),
    mediaVersion: z
      .number()
      .int()
      .nullable()
      .openapi({ description: "The media version the comment was made on (media.version); null without media" }),
    createdAt: z.string(),
  })
  .openapi("PostComment");

export const PostSchema = z
  .object({
    postId: z.string(),
    brandId: z.string(),
    state: z.enum(postStates),
    text: z.string(),
    networks: z.array(socialNetwork),
    scheduledAt: z.string().nullable(),
    scheduledAtLocal: z.string().nullable(),
    timeZone: z.string(),
    media: z
      .object({
        filename: z.string(),
        contentType: z.string(),
        url: z.string(),
        version: z.number().int().openapi({ description: "1 for the first file, +1 each time it is replaced" }),
        durationSeconds: z.number().nullable().openapi({ description: "Video or audio length; null otherwise" }),
      })
      .nullable(),
    reviews: z.array(
      z.object({ decision: z.string(), reviewerName: z.string(), comment: z.string().nullable(), at: z.string() }),
    ),
    comments: z.array(PostCommentSchema).openapi({
      description: "The review thread, oldest first: the client's comments from the review page and the owner's",
    }),
    deliveries: z.array(
      z.object({
        network: z.string(),
        status: z.string(),
        url: z.string().nullable(),
        attempts: z.number().int(),
        error: z.string().nullable(),
      }),
    ),
    preflight: z
      .object({
        findings: z.array(
          z.object({
            network: socialNetwork,
            rule: z.enum(PREFLIGHT_RULES),
            message: z.string(),
          }),
        ),
      })
      .openapi({
        description:
          "What each of the post's networks would refuse in its media (their dated rules, docs/social.md); submit and schedule answer 400 while any finding remains",
      }),
    failure: z.string().nullable(),
    createdAt: z.string(),
    publishedAt: z.string().nullable(),
  })
  .openapi("Post");

export const PostList = z.object({ posts: z.array(PostSchema) });

export const BrandStatsSchema = z
  .object({
    brandId: z.string(),
    from: z.string(),
    to: z.string(),
    postsByState: z.record(z.string(), z.number().int()),
    publishedByNetwork: z.record(z.string(), z.number().int()),
    approval: z.object({ reviewed: z.number().int(), averageHours: z.number().nullable() }),
    engagement: z.object({
      views: z.number(),
      likes: z.number(),
      comments: z.number(),
      shares: z.number(),
      byNetwork: z.record(
        z.string(),
        z.object({ views: z.number(), likes: z.number(), comments: z.number(), shares: z.number() }),
      ),
    }),
  })
  .openapi("BrandStats");

export const ApprovalLinkSchema = z
  .object({ linkId: z.string(), url: z.string(), expiresAt: z.string() })
  .openapi("ApprovalLink");

export const BrandDeleted = z.object({ brandId: z.string(), deleted: z.literal(true) });
export const PostDeleted = z.object({ postId: z.string(), deleted: z.literal(true) });
export const LinkRevoked = z.object({ linkId: z.string(), revoked: z.literal(true) });
