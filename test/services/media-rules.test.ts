/**
 * The networks' media rules (src/services/social/media-rules.ts): Bluesky's sizes are those of the
 * lexicons the publisher uploads against, and each rule names what breaks it.
 */
import { lexicons } from "@atproto/api";
import { describe, expect, it } from "vitest";
import { MEDIA_RULES, type MediaFacts, mediaFindings, preflight } from "../../src/services/social/media-rules";

const maxSize = (def: string, field: string) =>
  (lexicons.getDefOrThrow(def) as { properties: Record<string, { maxSize: number }> }).properties[field]!.maxSize;

const video: MediaFacts = {
  kind: "video",
  container: "mp4",
  mimeType: "video/mp4",
  durationMs: 60_000,
  videoCodec: "h264",
  audioCodec: "aac",
  width: 1920,
  height: 1080,
  frameRate: 30,
  bytes: 50_000_000,
};

describe("media rules", () => {
  it("keeps Bluesky's sizes equal to the pinned lexicons'", () => {
    expect(MEDIA_RULES.bluesky.image!.maxBytes).toBe(maxSize("app.bsky.embed.images#image", "image"));
    expect(MEDIA_RULES.bluesky.video!.maxBytes).toBe(maxSize("app.bsky.embed.video", "video"));
  });

  it("takes a 1080p H.264 minute everywhere", () => {
    expect(preflight(["bluesky", "mastodon", "webhook"], video)).toEqual([]);
  });

  it("names each broken rule, per network", () => {
    const rules = (facts: Partial<MediaFacts>, network: "bluesky" | "mastodon") =>
      mediaFindings(network, { ...video, ...facts }).map((f) => f.rule);
    expect(rules({ durationMs: 181_000 }, "bluesky")).toEqual(["duration"]);
    expect(rules({ durationMs: 181_000 }, "mastodon")).toEqual([]);
    expect(rules({ bytes: 301_000_000 }, "bluesky")).toEqual(["size"]);
    expect(rules({ bytes: 110_000_000 }, "mastodon")).toEqual(["size"]);
    expect(rules({ videoCodec: "hevc", audioCodec: "opus" }, "bluesky")).toEqual(["codec", "codec"]);
    expect(rules({ frameRate: 150 }, "mastodon")).toEqual(["frameRate"]);
    expect(rules({ width: 7680, height: 4320 }, "mastodon")).toEqual(["dimensions"]);
    expect(rules({ mimeType: "video/webm", container: "webm" }, "bluesky")).toEqual(["type"]);
    expect(rules({ kind: "audio", mimeType: "audio/mpeg", videoCodec: undefined }, "bluesky")).toEqual(["type"]);
    expect(
      rules({ kind: "audio", mimeType: "audio/mpeg", videoCodec: undefined, audioCodec: "mp3" }, "mastodon"),
    ).toEqual([]);
    expect(rules({ kind: "image", mimeType: "image/png", bytes: 2_500_000 }, "bluesky")).toEqual(["size"]);
  });

  it("finds nothing without media facts", () => {
    expect(preflight(["bluesky"], null)).toEqual([]);
  });
});
