/**
 * Brands and social posts over REST (free: no credits), the same services as the connector.
 * Documented in the OpenAPI document with the rest of /api/v1.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { createRouter, liveKeysOnly } from "../../http";
import { pickErrors } from "../../errors";
import { createBrand, getBrand, listBrands, updateBrand } from "../../services/social/brands";
import { deleteBrand } from "../../services/social/brand-deletion";
import {
  actOnPost,
  createApprovalLink,
  createPost,
  deletePost,
  getPost,
  listPosts,
  postMedia,
  revokeApprovalLink,
  updatePost,
} from "../../services/social/posts";
import { brandStats, statsPeriod } from "../../services/social/post-stats";
import { commentAsOwner } from "../../services/social/review-thread";
import { jsonContent } from "../../lib/openapi";
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
  postActions,
  StatsQuery,
  id,
} from "../../contract/social";

const body = <T extends z.ZodType>(schema: T) => ({
  body: { required: true, content: { "application/json": { schema } } },
});
const tags = ["Brands and posts"];
const security = [{ ApiKey: [] }];
const route = <R extends Parameters<typeof createRoute>[0]>(r: R) =>
  createRoute({ tags, security, ...r, responses: { ...r.responses, ...pickErrors(400) } });

const TEST_KEY_REFUSAL =
  "Brands and posts are live data (a post reaches real networks): test keys cannot read or change them. Use a live key; test keys can make the media a post will carry.";

// Registered before the routes, so every brand, post and approval-link path refuses test keys first.
const router = liveKeysOnly(
  createRouter(),
  ["/brands", "/brands/*", "/posts", "/posts/*", "/approval-links/*"],
  TEST_KEY_REFUSAL,
);

// A binary answer: described here, served by the plain handler at the end of the routes.
router.openAPIRegistry.registerPath({
  method: "get",
  path: "/posts/{postId}/media",
  operationId: "getPostMedia",
  tags,
  security,
  summary: "The media file of a post (its own copy, kept while the post exists)",
  request: { params: PostRef },
  responses: {
    200: {
      description: "The file, with its type and length",
      content: { "application/octet-stream": { schema: z.any().openapi({ type: "string", format: "binary" }) } },
    },
    ...pickErrors(400, 401, 404),
  },
});

export const socialRoutes = router
  .openapi(
    route({
      method: "post",
      path: "/brands",
      operationId: "createBrand",
      summary: "Create a brand",
      request: body(BrandInput),
      responses: { 200: jsonContent(BrandSchema, "Brand"), ...pickErrors(400, 401) },
    }),
    async (c) => c.json(await createBrand(c.env, c.get("caller").accountId, c.req.valid("json"), Date.now()), 200),
  )
  .openapi(
    route({
      method: "get",
      path: "/brands",
      operationId: "listBrands",
      summary: "List the account's brands",
      responses: { 200: jsonContent(BrandList, "Brands"), ...pickErrors(401) },
    }),
    async (c) => c.json({ brands: await listBrands(c.env, c.get("caller").accountId) }, 200),
  )
  .openapi(
    route({
      method: "get",
      path: "/brands/{brandId}",
      operationId: "getBrand",
      summary: "A brand",
      request: { params: BrandRef },
      responses: { 200: jsonContent(BrandSchema, "Brand"), ...pickErrors(401, 404) },
    }),
    async (c) => c.json(await getBrand(c.env, c.get("caller").accountId, c.req.valid("param").brandId), 200),
  )
  .openapi(
    route({
      method: "patch",
      path: "/brands/{brandId}",
      operationId: "updateBrand",
      summary: "Change a brand (channels, when given, replace its networks)",
      request: { params: BrandRef, ...body(BrandChanges) },
      responses: { 200: jsonContent(BrandSchema, "Brand"), ...pickErrors(400, 401, 404) },
    }),
    async (c) =>
      c.json(
        await updateBrand(
          c.env,
          c.get("caller").accountId,
          c.req.valid("param").brandId,
          c.req.valid("json"),
          Date.now(),
        ),
        200,
      ),
  )
  .openapi(
    route({
      method: "get",
      path: "/brands/{brandId}/stats",
      operationId: "getBrandStats",
      summary: "Statistics of a brand over a period (default: the last 30 days)",
      request: { params: BrandRef, query: StatsQuery },
      responses: { 200: jsonContent(BrandStatsSchema, "Statistics"), ...pickErrors(400, 401, 404) },
    }),
    async (c) => {
      const { from, to } = c.req.valid("query");
      const { start, end } = statsPeriod(from, to, Date.now());
      return c.json(await brandStats(c.env, c.get("caller").accountId, c.req.valid("param").brandId, start, end), 200);
    },
  )
  .openapi(
    route({
      method: "post",
      path: "/posts",
      operationId: "createPost",
      summary: "Create a post (a draft); an unknown brandId is a 400 naming it",
      request: body(PostInput),
      responses: { 200: jsonContent(PostSchema, "Post"), ...pickErrors(400, 401) },
    }),
    async (c) => c.json(await createPost(c.env, c.get("caller"), c.req.valid("json"), Date.now()), 200),
  )
  .openapi(
    route({
      method: "get",
      path: "/posts",
      operationId: "listPosts",
      summary: "List posts",
      request: { query: PostListQuery },
      responses: { 200: jsonContent(PostList, "Posts"), ...pickErrors(400, 401) },
    }),
    async (c) => c.json({ posts: await listPosts(c.env.DB, c.get("caller").accountId, c.req.valid("query")) }, 200),
  )
  .openapi(
    route({
      method: "get",
      path: "/posts/{postId}",
      operationId: "getPost",
      summary: "A post, with its reviews, review thread (time-coded comments) and deliveries",
      request: { params: PostRef },
      responses: { 200: jsonContent(PostSchema, "Post"), ...pickErrors(401, 404) },
    }),
    async (c) => c.json(await getPost(c.env.DB, c.get("caller").accountId, c.req.valid("param").postId), 200),
  )
  .openapi(
    route({
      method: "patch",
      path: "/posts/{postId}",
      operationId: "updatePost",
      summary: "Edit a post (an approved post of a brand that needs approval goes back to draft)",
      request: { params: PostRef, ...body(PostChanges) },
      responses: { 200: jsonContent(PostSchema, "Post"), ...pickErrors(400, 401, 404) },
    }),
    async (c) =>
      c.json(
        await updatePost(c.env, c.get("caller"), c.req.valid("param").postId, c.req.valid("json"), Date.now()),
        200,
      ),
  )
  .openapi(
    route({
      method: "delete",
      path: "/brands/{brandId}",
      operationId: "deleteBrand",
      summary: "Delete a brand with its posts and their media (refused while a post is scheduled)",
      request: { params: BrandRef },
      responses: { 200: jsonContent(BrandDeleted, "Deleted"), ...pickErrors(400, 401, 404) },
    }),
    async (c) => {
      await deleteBrand(c.env, c.get("caller").accountId, c.req.valid("param").brandId);
      return c.json({ brandId: c.req.valid("param").brandId, deleted: true as const }, 200);
    },
  )
  .openapi(
    route({
      method: "delete",
      path: "/posts/{postId}",
      operationId: "deletePost",
      summary: "Delete a post and its media",
      request: { params: PostRef },
      responses: { 200: jsonContent(PostDeleted, "Deleted"), ...pickErrors(400, 401, 404) },
    }),
    async (c) => {
      await deletePost(c.env, c.get("caller").accountId, c.req.valid("param").postId);
      return c.json({ postId: c.req.valid("param").postId, deleted: true as const }, 200);
    },
  )
  .openapi(
    route({
      method: "post",
      path: "/posts/{postId}/approval-links",
      operationId: "createApprovalLink",
      summary: "A shareable review link for the client (valid 14 days, revocable, no account needed)",
      request: { params: PostRef },
      responses: { 200: jsonContent(ApprovalLinkSchema, "Link"), ...pickErrors(400, 401, 404) },
    }),
    async (c) =>
      c.json(
        await createApprovalLink(
          c.env,
          c.get("caller").accountId,
          c.req.valid("param").postId,
          new URL(c.req.url).origin,
          Date.now(),
        ),
        200,
      ),
  )
  .openapi(
    route({
      method: "post",
      path: "/posts/{postId}/comments",
      operationId: "commentOnPost",
      summary:
        "Add the owner's comment to the post's review thread, at a moment of its video (timecode) or on the whole post",
      request: { params: PostRef, ...body(PostCommentInput) },
      responses: { 200: jsonContent(PostSchema, "Post"), ...pickErrors(400, 401, 404) },
    }),
    async (c) =>
      c.json(
        await commentAsOwner(
          c.env,
          c.get("caller").accountId,
          c.req.valid("param").postId,
          c.req.valid("json"),
          Date.now(),
        ),
        200,
      ),
  )
  .openapi(
    route({
      method: "post",
      path: "/posts/{postId}/{action}",
      operationId: "changePostState",
      summary:
        "Move a post: submit (for approval), schedule, unschedule, cancel; 400 names the state when the move is not allowed",
      request: {
        params: z.object({ postId: id, action: z.enum(postActions) }),
        body: { required: false, content: { "application/json": { schema: PostActionBody } } },
      },
      responses: { 200: jsonContent(PostSchema, "Post"), ...pickErrors(400, 401, 404) },
    }),
    async (c) => {
      const { postId, action } = c.req.valid("param");
      const options = (await c.req.json().catch(() => ({}))) as { scheduledAt?: unknown };
      const scheduledAt = typeof options.scheduledAt === "string" ? options.scheduledAt.slice(0, 40) : undefined;
      return c.json(
        await actOnPost(c.env, c.get("caller").accountId, postId, action, { scheduledAt }, Date.now()),
        200,
      );
    },
  )
  .openapi(
    route({
      method: "delete",
      path: "/approval-links/{linkId}",
      operationId: "revokeApprovalLink",
      summary: "Revoke a review link",
      request: { params: LinkRef },
      responses: { 200: jsonContent(LinkRevoked, "Revoked"), ...pickErrors(401, 404) },
    }),
    async (c) => {
      await revokeApprovalLink(c.env.DB, c.get("caller").accountId, c.req.valid("param").linkId, Date.now());
      return c.json({ linkId: c.req.valid("param").linkId, revoked: true as const }, 200);
    },
  )
  .get("/posts/:postId/media", async (c) => {
    const object = await postMedia(c.env, c.get("caller").accountId, c.req.param("postId").slice(0, 64));
    return new Response(object.body, {
      headers: {
        "content-type": object.httpMetadata?.contentType ?? "application/octet-stream",
        "content-length": String(object.size),
      },
    });
  });
