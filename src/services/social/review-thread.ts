/**
 * Who adds to a post's review thread (post-comments.ts): the client through the review link while
 * the post waits for their review, and the owner (REST, the connector) at any time, to answer.
 * Free, as every post verb.
 */
import type { Env } from "../../env";
import { invalidRequest, notFound } from "../../errors";
import { addComment, type CommentInput, type CommentView } from "./post-comments";
import { getPost, postForReview, postRow, type PostView } from "./posts";

/**
 * A client's comment through the review link: only while the post is pending approval (the
 * decision it goes with is still to come); afterwards the link shows the thread read-only.
 */
export async function commentAsClient(
  env: Env,
  token: string,
  input: CommentInput & { authorName: string },
  now: number,
): Promise<CommentView> {
  const found = await postForReview(env.DB, token, now);
  if (!found) throw notFound("This review link is invalid, expired or revoked.");
  if (found.row.state !== "pending_approval")
    throw invalidRequest(`state: the post is ${found.row.state}, not waiting for a review.`);
  return await addComment(env, found.row, { kind: "client", name: input.authorName }, input, now);
}

/** The owner's comment or answer in the thread; the post with its thread. */
export async function commentAsOwner(
  env: Env,
  accountId: string,
  postId: string,
  input: CommentInput,
  now: number,
): Promise<PostView> {
  const row = await postRow(env.DB, accountId, postId);
  await addComment(env, row, { kind: "owner" }, input, now);
  return getPost(env.DB, accountId, postId);
}
