/**
 * The preflight of a post's media on `wrangler dev` (src/services/social/media-rules.ts): a file a
 * network would refuse is named on the post from its creation, refused when the post is scheduled
 * or submitted (nothing published, nothing changed), and once the owner fixes it with the API's own
 * tools the post publishes to the local Bluesky and Mastodon servers.
 */
import { describe, expect, inject, it } from "vitest";
import { eventually } from "../helpers/eventually";
import { generate, newClient, runTool, upload, type Client } from "./client";

const base = inject("e2eMainUrl");
const pds = inject("blueskyBaseUrl");
const mastodon = inject("mastodonBaseUrl");

async function call(client: Client, pathname: string, init: RequestInit = {}) {
  const response = await fetch(`${base}${pathname}`, {
    ...init,
    headers: { ...client.auth, "content-type": "application/json" },
  });
  return { status: response.status, body: (await response.json()) as any };
}

async function ok(client: Client, pathname: string, init: RequestInit = {}) {
  const { status, body } = await call(client, pathname, init);
  expect(status, JSON.stringify(body)).toBe(200);
  return body;
}

describe("a post's media checked against each network's rules", () => {
  it("names what Bluesky and Mastodon would refuse, refuses to schedule it, and publishes once fixed", async () => {
    const client = await newClient(base);
    const brand = await ok(client, "/api/v1/brands", {
      method: "POST",
      body: JSON.stringify({
        name: "Préflight",
        timeZone: "Europe/Paris",
        channels: [
          { network: "bluesky", handle: "brand.test", appPassword: "test-bsky-app0-pass", serviceUrl: pds },
          { network: "mastodon", instanceUrl: mastodon, accessToken: "mastodon-test-token" },
        ],
      }),
    });
    // A WebM (VP8, Vorbis): Mastodon takes it, Bluesky takes MP4 only.
    const webm = generate("preflight.webm", [
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=64x48:rate=25:duration=2",
      "-f",
      "lavfi",
      "-i",
      "sine=f=440:d=2",
      "-c:v",
      "libvpx",
      "-b:v",
      "200k",
      "-c:a",
      "libvorbis",
      "-shortest",
    ]);
    const { uploadId } = await upload(client, webm);
    const post = await ok(client, "/api/v1/posts", {
      method: "POST",
      body: JSON.stringify({ brandId: brand.brandId, text: `Préflight ${Date.now()}`, media: { uploadId } }),
    });
    expect(post.state).toBe("draft");
    const rules = post.preflight.findings.map((f: { network: string; rule: string }) => `${f.network}:${f.rule}`);
    expect(rules).toEqual(["bluesky:type"]);
    expect(post.preflight.findings.find((f: { network: string }) => f.network === "bluesky").message).toMatch(
      /Bluesky takes .*video \(video\/mp4\).*not video\/webm: convert it to MP4/,
    );

    // Scheduling answers why, and changes nothing.
    const refused = await call(client, `/api/v1/posts/${post.postId}/schedule`, {
      method: "POST",
      body: JSON.stringify({ scheduledAt: "now" }),
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe("invalid_request");
    expect(refused.body.error.message).toMatch(/^media: Bluesky takes .*not video\/webm/);
    expect((await ok(client, `/api/v1/posts/${post.postId}`)).state).toBe("draft");

    // An MP4 at 150 frames per second: Mastodon takes up to 120.
    const fast = generate("preflight-fast.mp4", [
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=64x48:rate=150:duration=1",
      "-c:v",
      "libx264",
      "-pix_fmt",
      "yuv420p",
    ]);
    const fastPost = await ok(client, "/api/v1/posts", {
      method: "POST",
      body: JSON.stringify({
        brandId: brand.brandId,
        text: "Trop rapide",
        networks: ["mastodon"],
        media: { uploadId: (await upload(client, fast)).uploadId },
      }),
    });
    expect(fastPost.preflight.findings).toEqual([
      {
        network: "mastodon",
        rule: "frameRate",
        message: "Mastodon takes up to 120 frames per second; this video has 150.",
      },
    ]);
    const fastRefused = await call(client, `/api/v1/posts/${fastPost.postId}/schedule`, {
      method: "POST",
      body: JSON.stringify({ scheduledAt: "now" }),
    });
    expect(fastRefused.status).toBe(400);
    expect(fastRefused.body.error.message).toBe(
      "media: Mastodon takes up to 120 frames per second; this video has 150.",
    );

    // A video longer than Bluesky's 3 minutes, in MP4 it would otherwise take: the submit for approval is refused too.
    const long = generate("preflight-long.mp4", [
      "-f",
      "lavfi",
      "-i",
      "color=c=blue:size=32x32:rate=1:duration=181",
      "-c:v",
      "libx264",
      "-pix_fmt",
      "yuv420p",
    ]);
    const longPost = await ok(client, "/api/v1/posts", {
      method: "POST",
      body: JSON.stringify({
        brandId: brand.brandId,
        text: "Trop long",
        networks: ["bluesky"],
        media: { uploadId: (await upload(client, long)).uploadId },
      }),
    });
    expect(longPost.preflight.findings).toEqual([
      expect.objectContaining({
        network: "bluesky",
        rule: "duration",
        message: expect.stringMatching(/up to 180 s; this one lasts 181\.0 s/),
      }),
    ]);
    const submitted = await call(client, `/api/v1/posts/${longPost.postId}/submit`, { method: "POST", body: "{}" });
    expect(submitted.status).toBe(400);
    expect(submitted.body.error.message).toMatch(/shorten it \(the trim tool\)/);

    // Fixed with the API's own convert tool (MP4, H.264/AAC), the same post publishes to both.
    const converted = (await runTool(client, "convert", { uploadId, format: "mp4" })) as { jobId?: string };
    const fixed = await ok(client, `/api/v1/posts/${post.postId}`, {
      method: "PATCH",
      body: JSON.stringify({ media: { jobId: converted.jobId } }),
    });
    expect(fixed.preflight.findings).toEqual([]);
    await ok(client, `/api/v1/posts/${post.postId}/schedule`, {
      method: "POST",
      body: JSON.stringify({ scheduledAt: "now" }),
    });
    const published = await eventually(
      () => ok(client, `/api/v1/posts/${post.postId}`),
      (p) => p.state === "published" || p.state === "failed",
      { timeoutMs: 60_000, intervalMs: 250, what: "the fixed post published" },
    );
    expect(published.state, published.failure).toBe("published");
    expect(
      published.deliveries.map((d: { network: string; status: string }) => `${d.network}:${d.status}`).sort(),
    ).toEqual(["bluesky:sent", "mastodon:sent"]);
    // What reached Bluesky is the converted MP4, as a video embed.
    const rkey = published.deliveries
      .find((d: { network: string }) => d.network === "bluesky")
      .url.split("/")
      .pop();
    const records = (await (await fetch(`${pds}/_test/records`)).json()) as { rkey: string; record: any }[];
    const { record } = records.find((r) => r.rkey === rkey)!;
    expect(record.embed.$type).toBe("app.bsky.embed.video");
    const blobs = (await (await fetch(`${pds}/_test/blobs`)).json()) as { cid: string; mimeType: string }[];
    expect(blobs.find((b) => b.cid === record.embed.video.ref.$link)?.mimeType).toBe("video/mp4");
  });
});
