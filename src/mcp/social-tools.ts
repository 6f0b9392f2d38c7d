/**
 * Brand and post tools of the connector (free: no credits), over the same services as REST, with
 * REST's schemas (src/contract/social.ts): the same bounds, the same refusals. Times are given in
 * the brand's time zone ("2026-12-01T09:30") or as ISO times with offset.
 */
import { z } from "zod";
import {
  ApprovalLinkSchema,
  BrandChanges,
  BrandDeleted,
  BrandInput,
  BrandList,
  BrandRef,
  BrandSchema,
  BrandStatsSchema,
  LinkRef,
  LinkRevoked,
  PostActionBody,
  PostChanges,
  PostCommentInput,
  PostDeleted,
  PostInput,
  PostList,
  PostListQuery,
  PostRef,
  PostSchema,
  StatsQuery,
  type PostAction,
} from "../contract/social";
import { createBrand, listBrands, updateBrand } from "../services/social/brands";
import { deleteBrand } from "../services/social/brand-deletion";
import {
  actOnPost,
  createApprovalLink,
  createPost,
  deletePost,
  getPost,
  listPosts,
  revokeApprovalLink,
  updatePost,
  withMediaLink,
  type PostView,
} from "../services/social/posts";
import { brandStats, statsPeriod } from "../services/social/post-stats";
import { commentAsOwner } from "../services/social/review-thread";
import { connectorKeyId, type McpContext } from "./tool-context";
import { destroys, readOnly, tool, writes, type ConnectorTool } from "./tool-table";

// As the media tools' jobs: a post takes a job's result only from the connection that made it.
const author = ({ accountId, connection }: McpContext) => ({
  accountId,
  keyId: connection.connectionId ?? connectorKeyId(accountId),
});
// A post's media as a link the assistant can hand on: no API key needed, valid an hour.
const linked = (context: McpContext) => (post: PostView) =>
  withMediaLink(context.env, context.accountId, post, context.origin, Date.now());

/** Connector-only wording of the contract's fields (the others show REST's descriptions). */
const brandFields = {
  timeZone: "IANA time zone, e.g. Europe/Paris",
  webhookUrl: "Receives signed review and publication events",
  channels:
    "The brand's networks (at most 5): {network: webhook, url} for an automation endpoint (Zapier, Make, n8n...) that receives signed posts, {network: mastodon, instanceUrl (e.g. https://mastodon.social), accessToken}, and/or {network: bluesky, handle (e.g. brand.bsky.social), appPassword (an app password xxxx-xxxx-xxxx-xxxx from Bluesky's settings, never the account's password), serviceUrl (optional, default https://bsky.social)}",
};
const postFields = {
  scheduledAt:
    "Local time in the brand's time zone, e.g. 2026-12-01T09:30, an ISO time with offset, or now (publish at once)",
  media: "Attach an upload or a completed job's result (copied into the post's storage)",
};

const UpdateBrand = z.object({ ...BrandRef.shape, ...BrandChanges.shape });
const UpdatePost = z.object({ ...PostRef.shape, ...PostChanges.shape });
const SchedulePost = z.object({ ...PostRef.shape, ...PostActionBody.shape });
const BrandPeriod = z.object({ ...BrandRef.shape, ...StatsQuery.shape });
const CommentOnPost = z.object({ ...PostRef.shape, ...PostCommentInput.shape });

const postMove = (
  name: string,
  action: PostAction,
  description: string,
  annotations = writes as ConnectorTool["annotations"],
) =>
  tool({
    name,
    title: description.split(".")[0]!,
    description,
    // Only schedule takes a time; cancelling ends the post for good.
    input: action === "schedule" ? SchedulePost : PostRef,
    fields: postFields,
    output: PostSchema,
    annotations,
    scope: "social",
    run: async (input: { postId: string; scheduledAt?: string }, context) =>
      linked(context)(
        await actOnPost(
          context.env,
          context.accountId,
          input.postId,
          action,
          { scheduledAt: input.scheduledAt },
          Date.now(),
        ),
      ),
  });

export const socialTools: readonly ConnectorTool[] = [
  tool({
    name: "create_brand",
    title: "Create a brand",
    description:
      "Create a brand to publish social posts for: its name, time zone, whether a client must approve posts, where decisions are sent, and its networks (a signed webhook to an automation tool, a Mastodon account, a Bluesky account). Free.",
    input: BrandInput,
    fields: brandFields,
    output: BrandSchema,
    annotations: writes,
    scope: "social",
    run: (input, context) => createBrand(context.env, context.accountId, input, Date.now()),
  }),
  tool({
    name: "list_brands",
    title: "List brands",
    description: "The account's brands with their settings and networks.",
    input: z.object({}),
    output: BrandList,
    annotations: readOnly,
    scope: "social",
    run: async (_input, context) => ({ brands: await listBrands(context.env, context.accountId) }),
  }),
  tool({
    name: "update_brand",
    title: "Change a brand",
    description:
      "Change a brand's name, time zone, approval setting, webhook or networks (channels replace the current ones).",
    input: UpdateBrand,
    fields: brandFields,
    output: BrandSchema,
    annotations: { ...writes, idempotentHint: true },
    scope: "social",
    run: ({ brandId, ...changes }, context) =>
      updateBrand(context.env, context.accountId, brandId, changes, Date.now()),
  }),
  tool({
    name: "delete_brand",
    title: "Delete a brand",
    description:
      "Delete a brand with all its posts and their media (published ones and their statistics too). Refused while one of its posts is scheduled: unschedule or cancel it first.",
    input: BrandRef,
    output: BrandDeleted,
    annotations: destroys,
    scope: "social",
    run: async ({ brandId }, context) => {
      await deleteBrand(context.env, context.accountId, brandId);
      return { brandId, deleted: true as const };
    },
  }),
  tool({
    name: "create_post",
    title: "Create a post",
    description:
      "Draft a social post for a brand: text, optional media (an uploadId or the jobId of a finished job, e.g. a subtitled video), networks (default: all the brand's), and a planned time. It stays a draft until scheduled (or submitted for client approval when the brand requires it). Free.",
    input: PostInput,
    fields: postFields,
    output: PostSchema,
    annotations: writes,
    scope: "social",
    run: async (input, context) => linked(context)(await createPost(context.env, author(context), input, Date.now())),
  }),
  tool({
    name: "list_posts",
    title: "List posts",
    description:
      "Posts of the account, newest first, optionally of one brand or in one state (draft, pending_approval, approved, changes_requested, scheduled, published, failed, cancelled).",
    input: PostListQuery,
    output: PostList,
    annotations: readOnly,
    scope: "social",
    run: async (filter, context) => ({
      posts: await Promise.all((await listPosts(context.env.DB, context.accountId, filter)).map(linked(context))),
    }),
  }),
  tool({
    name: "get_post",
    title: "A post",
    description:
      "A post with its state, client reviews (who, when, comment), the review thread (comments: the client's notes at moments of the video, e.g. timecode 00:12 with atSeconds 12, and the media version each was made on) and deliveries per network (with links once published); media.url is a direct link to its media (no key needed, valid one hour).",
    input: PostRef,
    output: PostSchema,
    annotations: readOnly,
    scope: "social",
    run: async ({ postId }, context) => linked(context)(await getPost(context.env.DB, context.accountId, postId)),
  }),
  tool({
    name: "update_post",
    title: "Edit a post",
    description:
      "Change a post's text, networks, time or media. Editing an approved post of a brand that requires approval sends it back to draft.",
    input: UpdatePost,
    fields: postFields,
    output: PostSchema,
    annotations: writes,
    scope: "social",
    run: async ({ postId, ...changes }, context) =>
      linked(context)(await updatePost(context.env, author(context), postId, changes, Date.now())),
  }),
  tool({
    name: "comment_on_post",
    title: "Comment on a post",
    description:
      "Add a comment to the post's review thread, which the client sees on the review page: an answer to the client's notes, at a moment of the video (timecode 00:12, 1:02:03 or seconds) or on the whole post. Free.",
    input: CommentOnPost,
    output: PostSchema,
    annotations: writes,
    scope: "social",
    run: async ({ postId, ...comment }, context) =>
      linked(context)(await commentAsOwner(context.env, context.accountId, postId, comment, Date.now())),
  }),
  postMove(
    "submit_post",
    "submit",
    "Send a draft (or a post with requested changes) to client approval. Then create_approval_link and share the link with the client.",
  ),
  // Scheduling publishes to outside networks (Mastodon, Bluesky, the brand's webhook) at its time.
  postMove(
    "schedule_post",
    "schedule",
    "Schedule an approved post (or a draft when the brand needs no approval) for publication at its time, or at scheduledAt.",
    { ...writes, openWorldHint: true },
  ),
  postMove(
    "unschedule_post",
    "unschedule",
    "Take a scheduled post off the schedule: it goes back to approved when the brand requires approval (no new review needed), to draft otherwise.",
  ),
  postMove("cancel_post", "cancel", "Cancel a post that has not been published: it will never be published.", destroys),
  tool({
    name: "delete_post",
    title: "Delete a post",
    description: "Delete a post that is not scheduled, with its media.",
    input: PostRef,
    output: PostDeleted,
    annotations: destroys,
    scope: "social",
    run: async ({ postId }, context) => {
      await deletePost(context.env, context.accountId, postId);
      return { postId, deleted: true as const };
    },
  }),
  tool({
    name: "create_approval_link",
    title: "Share a post for client approval",
    description:
      "A link (valid 14 days, revocable) to a page where the client sees the post as it will look, plays its video, leaves comments at moments of it (read them with get_post) and approves it or requests changes, with their name. No account needed; after new media the same link shows the new version with the thread.",
    input: PostRef,
    output: ApprovalLinkSchema,
    annotations: writes,
    scope: "social",
    run: ({ postId }, context) =>
      createApprovalLink(context.env, context.accountId, postId, context.origin, Date.now()),
  }),
  tool({
    name: "revoke_approval_link",
    title: "Revoke an approval link",
    description: "Revoke a client review link: it stops working at once.",
    input: LinkRef,
    output: LinkRevoked,
    annotations: { ...writes, idempotentHint: true },
    scope: "social",
    run: async ({ linkId }, context) => {
      await revokeApprovalLink(context.env.DB, context.accountId, linkId, Date.now());
      return { linkId, revoked: true as const };
    },
  }),
  tool({
    name: "get_brand_stats",
    title: "Brand statistics",
    description:
      "Over a period (default the last 30 days): posts by state, publications per network, client approval turnaround, and engagement (views, likes, comments, shares).",
    input: BrandPeriod,
    output: BrandStatsSchema,
    annotations: readOnly,
    scope: "social",
    run: ({ brandId, from, to }, context) => {
      const { start, end } = statsPeriod(from, to, Date.now());
      return brandStats(context.env, context.accountId, brandId, start, end);
    },
  }),
];
