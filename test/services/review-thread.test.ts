/**
 * The time-coded review thread: a client's comments at moments of the post's video on the review
 * page, the refusals that change nothing, the comments going with a request for changes (the
 * brand's event), the post in REST and the connector, the owner's answers, and the thread kept
 * when the media is replaced. Free: no credit moves.
 */
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, inject, it } from "vitest";
import { ADMIN, balanceOf, call, newAccount, uploadFixture, type TestAccount } from "../helpers/api";
import { eventually } from "../helpers/eventually";
import { connect, mcpClient, toolError } from "../helpers/mcp";
import { WebClient } from "../helpers/web";

const mastodon = inject("mastodonBaseUrl");
const hooks = inject("hookBaseUrl");
let account: TestAccount;

const api = (path: string, init: RequestInit = {}, who = account) =>
  call(path, { ...init, headers: { ...who.auth, "content-type": "application/json", ...(init.headers ?? {}) } });
const json = async <T = any>(response: Response, status = 200): Promise<T> => {
  const body = await response.json();
  expect(response.status, JSON.stringify(body)).toBe(status);
  return body as T;
};
const uid = () => Math.random().toString(36).slice(2, 10);
const hookLog = async (name: string) =>
  (await (await fetch(`${hooks}/${name}/log`)).json()) as { headers: Record<string, string>; body: string }[];
const threadSize = async (postId: string) =>
  (await env.DB.prepare("SELECT COUNT(*) AS n FROM post_comments WHERE post_id = ?")
    .bind(postId)
    .first<{ n: number }>())!.n;

/** A brand needing approval, a post with the 2.5 s clip submitted for review, and its link's path. */
async function postUnderReview(hook = `review-${uid()}`) {
  const brand = await json(
    await api("/api/v1/brands", {
      method: "POST",
      body: JSON.stringify({
        name: `Studio ${uid()}`,
        timeZone: "Europe/Paris",
        requiresApproval: true,
        webhookUrl: `${hooks}/${hook}`,
        channels: [{ network: "mastodon", instanceUrl: mastodon, accessToken: "mastodon-test-token" }],
      }),
    }),
  );
  const clip = await uploadFixture(account, "clip.mp4");
  const post = await json(
    await api("/api/v1/posts", {
      method: "POST",
      body: JSON.stringify({ brandId: brand.brandId, text: "Teaser", media: { uploadId: clip.uploadId } }),
    }),
  );
  await json(await api(`/api/v1/posts/${post.postId}/submit`, { method: "POST", body: "{}" }));
  const link = await json(await api(`/api/v1/posts/${post.postId}/approval-links`, { method: "POST" }));
  return { brand, post, hook, path: new URL(link.url).pathname };
}

beforeEach(async () => {
  account = await newAccount({ credits: 100 });
});

describe("time-coded review", () => {
  it("takes a client's comments at moments of the video, refuses bad ones, and sends them with the request", async () => {
    const { post, hook, path } = await postUnderReview();
    expect(post.media).toMatchObject({ version: 1, durationSeconds: 2.52 });
    expect(post.comments).toEqual([]);
    const client = new WebClient();
    const page = await (await client.get(path)).text();
    expect(page).toMatch(new RegExp(`<video id="player" class="player" src="${path}/media" controls`));
    expect(page).toContain(`action="${path}/comments"`);
    expect(page).toContain("up to 00:02");
    // The player reads the media by ranges (seeking to a moment loads from there).
    const part = await client.request(`${path}/media`, { headers: { range: "bytes=0-99" } });
    expect(part.status).toBe(206);
    expect((await part.arrayBuffer()).byteLength).toBe(100);

    const added = await client.post(`${path}/comments`, {
      timecode: "00:01",
      text: "Logo too big",
      authorName: "Camille",
    });
    expect(added.status).toBe(303);
    expect(added.headers.get("location")).toBe(`${path}?done=comment&t=1#comments`);
    await client.post(`${path}/comments`, { timecode: "", text: "Nice music overall", authorName: "Camille" });
    const shown = await (await client.get(`${path}?done=comment&t=1`)).text();
    expect(shown).toContain("Your comment was added.");
    expect(shown).toContain(`src="${path}/media#t=1"`);
    expect(shown).toMatch(/<a class="timecode" href="\?t=1#player" data-seek="1">00:01<\/a>/);
    expect(shown).toContain("Logo too big");
    expect(shown).toContain("whole post");
    // The name given once fills the next forms of this link.
    expect(shown).toMatch(/name="reviewerName" maxlength="100" required="" value="Camille"/);

    // Refused, with the page's words and what was typed, and nothing written.
    const refusals: [Record<string, string>, RegExp][] = [
      [{ timecode: "00:09", text: "late" }, /Time: 00:09 is after the end of the video \(00:02\)/],
      [{ timecode: "1:75", text: "odd" }, /Time: &#39;1:75&#39; is not a moment of the video: give 00:12/],
      [{ timecode: "abc", text: "odd" }, /Time: &#39;abc&#39; is not a moment/],
      [{ timecode: "00:01", text: "   " }, /Comment: write the comment/],
      [{ timecode: "00:01", text: "x".repeat(2001) }, /Comment: at most 2000 characters/],
      [{ timecode: "00:01", text: "ok", authorName: "" }, /Your name: 1 to 100 characters/],
    ];
    for (const [form, message] of refusals) {
      const refused = await client.post(`${path}/comments`, { authorName: "Camille", ...form });
      expect(refused.status, JSON.stringify(form)).toBe(400);
      const html = await refused.text();
      expect(html).toMatch(message);
      // What was typed stays in the form, the name too (it is required: an empty one blocks sending).
      if (form.timecode === "00:09") expect(html).toMatch(/value="00:09"[\s\S]*name="authorName"[^>]*value="Camille"/);
    }
    // Another site's form is refused as the page's other posts are.
    expect(
      (await client.post(`${path}/comments`, { text: "x", authorName: "Eve" }, "https://evil.example")).status,
    ).toBe(403);
    expect(await threadSize(post.postId)).toBe(2);

    // No message needed to request changes: the comments say what.
    const requested = await client.post(path, { decision: "request_changes", reviewerName: "Camille" });
    expect(requested.status).toBe(303);
    // Once decided, the link shows the thread but takes no more comments.
    const closed = await client.post(`${path}/comments`, { text: "one more", authorName: "Camille" });
    expect(closed.status).toBe(400);
    expect(await closed.text()).toContain("This post is not waiting for a review any more");

    const read = await json(await api(`/api/v1/posts/${post.postId}`));
    expect(read.state).toBe("changes_requested");
    expect(read.comments).toEqual([
      {
        commentId: expect.stringMatching(/^cmt_/),
        author: "client",
        authorName: "Camille",
        atSeconds: 1,
        timecode: "00:01",
        text: "Logo too big",
        mediaVersion: 1,
        createdAt: expect.any(String),
      },
      expect.objectContaining({ atSeconds: null, timecode: null, text: "Nice music overall", mediaVersion: 1 }),
    ]);
    const [event] = await eventually(
      () => hookLog(hook),
      (log) => log.length >= 1,
      { what: "the changes_requested event" },
    );
    expect(JSON.parse(event.body)).toMatchObject({
      type: "post.changes_requested",
      postId: post.postId,
      reviewerName: "Camille",
      comment: null,
      mediaVersion: 1,
      comments: read.comments,
      commentsOmitted: 0,
    });
    expect(await balanceOf(account)).toBe(100);
  });

  it("keeps the thread when the media is replaced; each comment names its version", async () => {
    const { post, hook, path } = await postUnderReview();
    const client = new WebClient();
    await client.post(`${path}/comments`, { timecode: "2", text: "Cut the end", authorName: "Inès" });
    expect((await client.post(path, { decision: "request_changes", reviewerName: "Inès" })).status).toBe(303);

    // The owner answers in the thread, then sends a new version (1 s long) for review.
    const answered = await json(
      await api(`/api/v1/posts/${post.postId}/comments`, {
        method: "POST",
        body: JSON.stringify({ text: "Shortened, see version 2", timecode: null }),
      }),
    );
    expect(answered.comments.at(-1)).toMatchObject({ author: "owner", authorName: null, mediaVersion: 1 });
    const shorter = await uploadFixture(account, "clip720.mp4");
    const edited = await json(
      await api(`/api/v1/posts/${post.postId}`, {
        method: "PATCH",
        body: JSON.stringify({ media: { uploadId: shorter.uploadId } }),
      }),
    );
    expect(edited.media).toMatchObject({ version: 2, durationSeconds: 1 });
    expect(edited.comments.map((c: any) => [c.text, c.mediaVersion])).toEqual([
      ["Cut the end", 1],
      ["Shortened, see version 2", 1],
    ]);
    await json(await api(`/api/v1/posts/${post.postId}/submit`, { method: "POST", body: "{}" }));

    // The same link: the new video, the old thread marked with its version, new bounds.
    const page = await (await client.get(path)).text();
    expect(page).toContain("version 2, 00:01");
    expect(page).toContain(">version 1<");
    expect(page).toMatch(/<strong>Studio \w+ \(team\)<\/strong>/);
    const late = await client.post(`${path}/comments`, { timecode: "00:02", text: "still", authorName: "Inès" });
    expect(late.status).toBe(400);
    expect(await late.text()).toContain("Time: 00:02 is after the end of the video (00:01)");
    await client.post(`${path}/comments`, { timecode: "0.5", text: "Better, but a bit fast", authorName: "Inès" });
    await client.post(path, { decision: "request_changes", reviewerName: "Inès" });

    const read = await json(await api(`/api/v1/posts/${post.postId}`));
    expect(read.comments.map((c: any) => [c.timecode, c.mediaVersion, c.author])).toEqual([
      ["00:02", 1, "client"],
      [null, 1, "owner"],
      ["00:00", 2, "client"],
    ]);
    expect(read.comments[2].atSeconds).toBe(0.5);
    // Each request carries the comments of its own review round.
    const events = await eventually(
      () => hookLog(hook),
      (log) => log.length >= 2,
      { what: "two changes_requested events" },
    );
    const second = JSON.parse(events[1].body);
    expect(second).toMatchObject({ mediaVersion: 2 });
    expect(second.comments.map((c: any) => c.text)).toEqual(["Better, but a bit fast"]);
  });

  it("lets the owner comment through REST with the contract's refusals", async () => {
    const { post } = await postUnderReview();
    const bad = async (body: unknown, message: RegExp, status = 400) => {
      const response = await api(`/api/v1/posts/${post.postId}/comments`, {
        method: "POST",
        body: JSON.stringify(body),
      });
      expect(response.status).toBe(status);
      expect(((await response.json()) as any).error.message).toMatch(message);
    };
    await bad({ text: "x", timecode: "00:03" }, /^timecode: 00:03 is after the end of the video \(00:02\)/);
    await bad({ text: "x", timecode: "12:3a" }, /^timecode: '12:3a' is not a moment/);
    await bad({ text: " \n " }, /^text: write the comment/);
    await bad({ text: "é".repeat(2001) }, /^text: at most 2000 characters/);
    await bad({}, /text/);
    expect(await threadSize(post.postId)).toBe(0);
    // Another account's post answers as an unknown one; a test key is refused.
    const other = await newAccount();
    const foreign = await api(
      `/api/v1/posts/${post.postId}/comments`,
      {
        method: "POST",
        body: JSON.stringify({ text: "hi" }),
      },
      other,
    );
    expect(foreign.status).toBe(404);
    const testKey = await call(`/api/admin/accounts/${account.accountId}/keys?mode=test`, {
      method: "POST",
      headers: ADMIN,
    });
    const { apiKey } = (await testKey.json()) as { apiKey: string };
    expect(
      (
        await api(
          `/api/v1/posts/${post.postId}/comments`,
          { method: "POST", body: '{"text":"hi"}' },
          {
            ...account,
            auth: { authorization: `Bearer ${apiKey}` },
          },
        )
      ).status,
    ).toBe(400);
    // A general comment on an image post; a moment on it is refused.
    const logo = await uploadFixture(account, "logo.png");
    const still = await json(
      await api("/api/v1/posts", {
        method: "POST",
        body: JSON.stringify({ brandId: post.brandId, text: "Still", media: { uploadId: logo.uploadId } }),
      }),
    );
    expect(still.media).toMatchObject({ version: 1, durationSeconds: null });
    const commented = await json(
      await api(`/api/v1/posts/${still.postId}/comments`, { method: "POST", body: '{"text":"Crop tighter"}' }),
    );
    expect(commented.comments).toMatchObject([{ text: "Crop tighter", atSeconds: null, mediaVersion: 1 }]);
    const moment = await api(`/api/v1/posts/${still.postId}/comments`, {
      method: "POST",
      body: '{"text":"x","timecode":"1"}',
    });
    expect(((await moment.json()) as any).error.message).toMatch(/^timecode: the post has no video or audio/);
    // Deleting the post deletes its thread.
    await json(await api(`/api/v1/posts/${still.postId}`, { method: "DELETE" }));
    expect(await threadSize(still.postId)).toBe(0);
    expect(await balanceOf(account)).toBe(100);
  });

  it("probes the length of media attached before it was recorded", async () => {
    const { post, path } = await postUnderReview();
    await env.DB.prepare("UPDATE posts SET media_duration_ms = NULL WHERE id = ?").bind(post.postId).run();
    const client = new WebClient();
    const late = await client.post(`${path}/comments`, { timecode: "00:03", text: "x", authorName: "A" });
    expect(await late.text()).toContain("after the end of the video (00:02)");
    const row = await env.DB.prepare("SELECT media_duration_ms AS d FROM posts WHERE id = ?")
      .bind(post.postId)
      .first<{ d: number }>();
    expect(row!.d).toBe(2520);
  });

  it("shows the thread to the connector, which can answer in it", async () => {
    const connection = await connect("Review assistant");
    const assistant = await mcpClient(connection.tokens.access_token);
    const key = await call(`/api/admin/accounts/${connection.person.accountId}/keys`, {
      method: "POST",
      headers: ADMIN,
    });
    const { keyId, apiKey } = (await key.json()) as { keyId: string; apiKey: string };
    account = { accountId: connection.person.accountId, keyId, apiKey, auth: { authorization: `Bearer ${apiKey}` } };
    const { post, path } = await postUnderReview();
    await new WebClient().post(`${path}/comments`, { timecode: "00:01", text: "Logo too big", authorName: "Camille" });

    const read = (await assistant.callTool({ name: "get_post", arguments: { postId: post.postId } })) as any;
    expect(read.isError).toBeFalsy();
    expect(read.structuredContent.comments).toMatchObject([
      {
        author: "client",
        authorName: "Camille",
        atSeconds: 1,
        timecode: "00:01",
        text: "Logo too big",
        mediaVersion: 1,
      },
    ]);
    const answered = (await assistant.callTool({
      name: "comment_on_post",
      arguments: { postId: post.postId, text: "Will shrink it", timecode: "00:01" },
    })) as any;
    expect(answered.isError).toBeFalsy();
    expect(answered.structuredContent.comments.at(-1)).toMatchObject({ author: "owner", timecode: "00:01" });
    const refused = toolError(
      (await assistant.callTool({
        name: "comment_on_post",
        arguments: { postId: post.postId, text: "x", timecode: "9:00" },
      })) as any,
    );
    expect(refused).toMatchObject({
      code: "invalid_request",
      message: expect.stringMatching(/^timecode: 09:00 is after/),
    });
    // REST shows the same thread.
    const rest = await json(await api(`/api/v1/posts/${post.postId}`));
    expect(rest.comments).toEqual(answered.structuredContent.comments);
  });
});
