/**
 * Bluesky end to end on `wrangler dev`: the API Worker as wrangler bundles it (with @atproto/api,
 * imported at the first Bluesky call) publishes a post with an image and one with a video to the
 * local Bluesky through the real queue and the brand's alarm, and reads the engagement back.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, inject, it } from "vitest";
import { eventually } from "../helpers/eventually";
import { FIXTURES, newClient, upload } from "./client";

const base = inject("e2eMainUrl");
const pds = inject("blueskyBaseUrl");

describe("Bluesky on wrangler dev", () => {
  it("publishes an image and a video to the local Bluesky and counts their engagement", async () => {
    const client = await newClient(base);
    const api = async (pathname: string, init: RequestInit = {}) => {
      const response = await fetch(`${base}${pathname}`, {
        ...init,
        headers: { ...client.auth, "content-type": "application/json" },
      });
      const body = (await response.json()) as any;
      expect(response.status, JSON.stringify(body)).toBe(200);
      return body;
    };
    const brand = await api("/api/v1/brands", {
      method: "POST",
      body: JSON.stringify({
        name: "Ciel ouvert",
        timeZone: "Europe/Paris",
        channels: [{ network: "bluesky", handle: "brand.test", appPassword: "test-bsky-app0-pass", serviceUrl: pds }],
      }),
    });
    const sent: { rkey: string; file: string }[] = [];
    for (const file of ["logo.jpg", "clip.mp4"]) {
      const { uploadId } = await upload(client, path.join(FIXTURES, file));
      const post = await api("/api/v1/posts", {
        method: "POST",
        body: JSON.stringify({ brandId: brand.brandId, text: `E2E ${file} ${Date.now()}`, media: { uploadId } }),
      });
      await api(`/api/v1/posts/${post.postId}/schedule`, {
        method: "POST",
        body: JSON.stringify({ scheduledAt: "now" }),
      });
      const published = await eventually(
        () => api(`/api/v1/posts/${post.postId}`),
        (p) => p.state === "published" || p.state === "failed",
        { timeoutMs: 60_000, intervalMs: 250, what: `the post with ${file} published` },
      );
      expect(published.state, published.failure).toBe("published");
      sent.push({ rkey: published.deliveries[0].url.split("/").pop(), file });
    }
    const records = (await (await fetch(`${pds}/_test/records`)).json()) as { rkey: string; record: any }[];
    const blobs = (await (await fetch(`${pds}/_test/blobs`)).json()) as {
      cid: string;
      mimeType: string;
      sha256: string;
    }[];
    for (const { rkey, file } of sent) {
      const { record } = records.find((r) => r.rkey === rkey)!;
      const ref = file.endsWith(".mp4") ? record.embed.video : record.embed.images[0].image;
      expect(record.embed.$type).toBe(file.endsWith(".mp4") ? "app.bsky.embed.video" : "app.bsky.embed.images");
      const blob = blobs.find((b) => b.cid === ref.ref.$link)!;
      expect(blob.mimeType).toBe(file.endsWith(".mp4") ? "video/mp4" : "image/jpeg");
      expect(blob.sha256).toBe(
        createHash("sha256")
          .update(readFileSync(path.join(FIXTURES, file)))
          .digest("hex"),
      );
    }
    await fetch(`${pds}/_test/posts/${sent[1]!.rkey}/engagement`, {
      method: "POST",
      body: JSON.stringify({ likeCount: 3, repostCount: 1, replyCount: 2 }),
    });
    const stats = await api(`/api/v1/brands/${brand.brandId}/stats`);
    expect(stats.publishedByNetwork).toEqual({ bluesky: 2 });
    expect(stats.engagement.byNetwork.bluesky).toEqual({ views: 0, likes: 3, comments: 2, shares: 1 });
  });
});
