/**
 * Brand and post tools of the connector (free: no credits), over the same services as REST.
 * Times are given in the brand's time zone ("2026-12-01T09:30") or as ISO times with offset.
 */
import type { McpServer } from "@modelcontextprotocol/server";
import { z } from "zod";
import { createBrand, listBrands, updateBrand } from "../services/social/brands";
import { deleteBrand } from "../services/social/brand-deletion";
import { postStates } from "../services/social/post-states";
import { actOnPost, createApprovalLink, createPost, deletePost, getPost, listPosts, revokeApprovalLink, updatePost, withMediaLink, type PostView } from "../services/social/posts";
import { brandStats, statsPeriod } from "../services/social/post-stats";
import { ApprovalLinkSchema, BrandSchema, BrandStatsSchema, PostSchema, socialNetwork } from "../routes/v1/schemas";
import { connectorKeyId, type McpContext, type ToolResult } from "./tool-context";

type Guard = (work: () => Promise<ToolResult>) => Promise<ToolResult>;
const ok = (data: unknown, text?: string): ToolResult => ({ content: [{ type: "text", text: text ?? JSON.stringify(data) }], structuredContent: data as Record<string, unknown> });

const id = z.string().min(1).max(64);
const channel = z.discriminatedUnion("network", [
  z.object({ network: z.literal("webhook"), url: z.string().max(2048).describe("The automation endpoint (Zapier, Make, n8n...) that receives signed posts") }),
  z.object({ network: z.literal("mastodon"), instanceUrl: z.string().max(2048).describe("e.g. https://mastodon.social"), accessToken: z.string().min(1).max(512) }),
]);
const when = z.string().max(40).describe("Local time in the brand's time zone, e.g. 2026-12-01T09:30, an ISO time with offset, or now (publish at once)");
const media = z.object({ uploadId: id.optional(), jobId: id.optional() }).describe("Attach an upload or a completed job's result (copied into the post's storage)");
const read = { readOnlyHint: true, idempotentHint: true, openWorldHint: false } as const;
const write = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false } as const;

export function registerSocialTools(server: McpServer, context: McpContext, guarded: Guard): void {
  const { env, accountId } = context;
  // As the media tools' jobs: a post takes a job's result only from the connection that made it.
  const author = { accountId, keyId: context.connection.connectionId ?? connectorKeyId(accountId) };
  const now = () => Date.now();
  // A post's media as a link the assistant can hand on: no API key needed, valid an hour.
  const linked = (post: PostView) => withMediaLink(env, accountId, post, context.origin, now());

  server.registerTool(
    "create_brand",
    { title: "Create a brand", description: "Create a brand to publish social posts for: its name, time zone, whether a client must approve posts, where decisions are sent, and its networks (a signed webhook to an automation tool, and/or a Mastodon account). Free.", inputSchema: z.object({ name: z.string().min(1).max(200).describe("1 to 100 characters"), timeZone: z.string().max(64).describe("IANA time zone, e.g. Europe/Paris"), requiresApproval: z.boolean().default(false), webhookUrl: z.string().max(2048).optional().describe("Receives signed review and publication events"), channels: z.array(channel).max(5).optional() }), outputSchema: BrandSchema, annotations: write },
    async (args: any) => guarded(async () => ok(await createBrand(env, accountId, args, now()))),
  );
  server.registerTool("list_brands", { title: "List brands", description: "The account's brands with their settings and networks.", inputSchema: z.object({}), outputSchema: z.object({ brands: z.array(BrandSchema) }), annotations: read }, async () =>
    guarded(async () => ok({ brands: await listBrands(env, accountId) })),
  );
  server.registerTool(
    "update_brand",
    { title: "Change a brand", description: "Change a brand's name, time zone, approval setting, webhook or networks (channels replace the current ones).", inputSchema: z.object({ brandId: id, name: z.string().min(1).max(200).describe("1 to 100 characters").optional(), timeZone: z.string().max(64).optional(), requiresApproval: z.boolean().optional(), webhookUrl: z.string().max(2048).nullable().optional(), channels: z.array(channel).max(5).optional() }), outputSchema: BrandSchema, annotations: { ...write, idempotentHint: true } },
    async ({ brandId, ...changes }: any) => guarded(async () => ok(await updateBrand(env, accountId, brandId, changes, now()))),
  );
  server.registerTool("delete_brand", { title: "Delete a brand", description: "Delete a brand with all its posts and their media (published ones and their statistics too). Refused while one of its posts is scheduled: unschedule or cancel it first.", inputSchema: z.object({ brandId: id }), outputSchema: z.object({ brandId: z.string(), deleted: z.literal(true) }), annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false } }, async ({ brandId }: any) =>
    guarded(async () => {
      await deleteBrand(env, accountId, brandId);
      return ok({ brandId, deleted: true });
    }),
  );
  server.registerTool(
    "create_post",
    { title: "Create a post", description: "Draft a social post for a brand: text, optional media (an uploadId or the jobId of a finished job, e.g. a subtitled video), networks (default: all the brand's), and a planned time. It stays a draft until scheduled (or submitted for client approval when the brand requires it). Free.", inputSchema: z.object({ brandId: id, text: z.string().min(1).max(5000), networks: z.array(socialNetwork).optional(), scheduledAt: when.optional(), media: media.optional() }), outputSchema: PostSchema, annotations: write },
    async (args: any) => guarded(async () => ok(await linked(await createPost(env, author, args, now())))),
  );
  server.registerTool(
    "list_posts",
    { title: "List posts", description: "Posts of the account, newest first, optionally of one brand or in one state (draft, pending_approval, approved, changes_requested, scheduled, published, failed, cancelled).", inputSchema: z.object({ brandId: id.optional(), state: z.enum(postStates).optional() }), outputSchema: z.object({ posts: z.array(PostSchema) }), annotations: read },
    async (args: any) => guarded(async () => ok({ posts: await Promise.all((await listPosts(env.DB, accountId, args)).map(linked)) })),
  );
  server.registerTool("get_post", { title: "A post", description: "A post with its state, client reviews (who, when, comment) and deliveries per network (with links once published); media.url is a direct link to its media (no key needed, valid one hour).", inputSchema: z.object({ postId: id }), outputSchema: PostSchema, annotations: read }, async ({ postId }: any) =>
    guarded(async () => ok(await linked(await getPost(env.DB, accountId, postId)))),
  );
  server.registerTool(
    "update_post",
    { title: "Edit a post", description: "Change a post's text, networks, time or media. Editing an approved post of a brand that requires approval sends it back to draft.", inputSchema: z.object({ postId: id, text: z.string().min(1).max(5000).optional(), networks: z.array(socialNetwork).optional(), scheduledAt: when.nullable().optional(), media: media.nullable().optional() }), outputSchema: PostSchema, annotations: write },
    async ({ postId, ...changes }: any) => guarded(async () => ok(await linked(await updatePost(env, author, postId, changes, now())))),
  );
  for (const [name, action, description] of [
    ["submit_post", "submit", "Send a draft (or a post with requested changes) to client approval. Then create_approval_link and share the link with the client."],
    ["schedule_post", "schedule", "Schedule an approved post (or a draft when the brand needs no approval) for publication at its time, or at scheduledAt."],
    ["unschedule_post", "unschedule", "Take a scheduled post off the schedule: it goes back to approved when the brand requires approval (no new review needed), to draft otherwise."],
    ["cancel_post", "cancel", "Cancel a post that has not been published: it will never be published."],
  ] as const) {
    // Only schedule takes a time; cancelling ends the post for good.
    const inputSchema = action === "schedule" ? z.object({ postId: id, scheduledAt: when.optional() }) : z.object({ postId: id });
    // Scheduling publishes to outside networks (Mastodon, the brand's webhook) at its time.
    const annotations = action === "cancel" ? { ...write, destructiveHint: true } : action === "schedule" ? { ...write, openWorldHint: true } : write;
    server.registerTool(name, { title: description.split(".")[0], description, inputSchema, outputSchema: PostSchema, annotations }, async ({ postId, scheduledAt }: any) =>
      guarded(async () => ok(await linked(await actOnPost(env, accountId, postId, action, { scheduledAt }, now())))),
    );
  }
  server.registerTool("delete_post", { title: "Delete a post", description: "Delete a post that is not scheduled, with its media.", inputSchema: z.object({ postId: id }), outputSchema: z.object({ postId: z.string(), deleted: z.literal(true) }), annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false } }, async ({ postId }: any) =>
    guarded(async () => {
      await deletePost(env, accountId, postId);
      return ok({ postId, deleted: true });
    }),
  );
  server.registerTool(
    "create_approval_link",
    { title: "Share a post for client approval", description: "A link (valid 14 days, revocable) to a page where the client sees the post as it will look and approves it or requests changes, with a comment and their name. No account needed.", inputSchema: z.object({ postId: id }), outputSchema: ApprovalLinkSchema, annotations: write },
    async ({ postId }: any) => guarded(async () => ok(await createApprovalLink(env, accountId, postId, context.origin, now()))),
  );
  server.registerTool("revoke_approval_link", { title: "Revoke an approval link", description: "Revoke a client review link: it stops working at once.", inputSchema: z.object({ linkId: id }), outputSchema: z.object({ linkId: z.string(), revoked: z.literal(true) }), annotations: { ...write, idempotentHint: true } }, async ({ linkId }: any) =>
    guarded(async () => {
      await revokeApprovalLink(env.DB, accountId, linkId, now());
      return ok({ linkId, revoked: true });
    }),
  );
  server.registerTool(
    "get_brand_stats",
    { title: "Brand statistics", description: "Over a period (default the last 30 days): posts by state, publications per network, client approval turnaround, and engagement (views, likes, comments, shares).", inputSchema: z.object({ brandId: id, from: z.string().max(40).optional().describe("ISO date or time (default: 30 days before to)"), to: z.string().max(40).optional().describe("ISO date or time (default: now); a bare date includes that whole day") }), outputSchema: BrandStatsSchema, annotations: read },
    async ({ brandId, from, to }: any) =>
      guarded(async () => {
        const { start, end } = statsPeriod(from, to, now());
        return ok(await brandStats(env, accountId, brandId, start, end));
      }),
  );
}
