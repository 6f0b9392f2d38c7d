/**
 * Deleting a brand: its posts (each with its media, review links, reviews and deliveries, as
 * deletePost does), its networks, then the brand. A brand with a scheduled post is refused
 * (unschedule or cancel it first), as a scheduled post is: it may be publishing right now.
 */
import { and, eq, notExists } from "drizzle-orm";
import { orm } from "../../db/client";
import { brandChannels, brands, posts } from "../../db/schema";
import type { Env } from "../../env";
import { invalidRequest } from "../../errors";
import { brandRow } from "./brands";
import { deletePost } from "./posts";

export async function deleteBrand(env: Env, accountId: string, brandId: string): Promise<void> {
  await brandRow(env.DB, accountId, brandId);
  const d = orm(env.DB);
  const brandPosts = await d
    .select({ id: posts.id, state: posts.state })
    .from(posts)
    .where(eq(posts.brandId, brandId))
    .all();
  const scheduled = brandPosts.filter((post) => post.state === "scheduled").length;
  if (scheduled > 0)
    throw invalidRequest(
      `brandId: the brand has ${scheduled} scheduled post${scheduled === 1 ? "" : "s"}; unschedule or cancel ${scheduled === 1 ? "it" : "them"} first.`,
    );
  for (const post of brandPosts) await deletePost(env, accountId, post.id);
  // A post created meanwhile keeps the brand: the caller is told to try again.
  const noPost = notExists(d.select({ id: posts.id }).from(posts).where(eq(posts.brandId, brandId)));
  const [, deleted] = await d.batch([
    d.delete(brandChannels).where(and(eq(brandChannels.brandId, brandId), noPost)),
    d
      .delete(brands)
      .where(and(eq(brands.id, brandId), noPost))
      .returning({ id: brands.id }),
  ]);
  if (deleted.length === 0)
    throw invalidRequest("brandId: a post was added to the brand while it was being deleted; try again.");
}
