/**
 * The developer area's posts page shows what a network would refuse in a post's media (the
 * preflight, src/services/social/media-rules.ts), beside the post, so the owner sees it before
 * trying to schedule.
 */
import { describe, expect, inject, it } from "vitest";
import { ADMIN, call, fixtureBytes, uploadBytes } from "../helpers/api";
import { signedUpClient } from "../helpers/web";

const pds = inject("blueskyBaseUrl");

describe("posts page", () => {
  it("lists the preflight's findings under the post", async () => {
    const { client, accountId } = await signedUpClient();
    const key = (await (
      await call(`/api/admin/accounts/${accountId}/keys`, { method: "POST", headers: ADMIN })
    ).json()) as { apiKey: string; keyId: string };
    const account = {
      accountId,
      keyId: key.keyId,
      apiKey: key.apiKey,
      auth: { authorization: `Bearer ${key.apiKey}` },
    };
    const api = async (path: string, body: unknown) => {
      const response = await call(path, {
        method: "POST",
        headers: { ...account.auth, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      const json = (await response.json()) as any;
      expect(response.status, JSON.stringify(json)).toBe(200);
      return json;
    };
    const brand = await api("/api/v1/brands", {
      name: "Page",
      timeZone: "Europe/Paris",
      channels: [{ network: "bluesky", handle: "brand.test", appPassword: "test-bsky-app0-pass", serviceUrl: pds }],
    });
    const upload = (await (await uploadBytes(account, await fixtureBytes("tone.mp3"), "tone.mp3")).json()) as {
      uploadId: string;
    };
    const post = await api("/api/v1/posts", {
      brandId: brand.brandId,
      text: "Un son",
      media: { uploadId: upload.uploadId },
    });
    const page = await client.get("/app/posts");
    expect(page.status).toBe(200);
    const html = await page.text();
    const row = html.slice(html.indexOf(`data-post-id="${post.postId}"`));
    expect(row).toContain('data-testid="post-finding"');
    expect(row).toContain("Bluesky takes images, video (video/mp4), not audio/mpeg, or leave Bluesky out of networks.");
  });
});
