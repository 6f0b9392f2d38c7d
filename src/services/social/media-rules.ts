/**
 * What each network accepts as a post's media, kept as dated data, and the preflight that checks
 * a post's media against it: when the post is created (its findings shown on it), and when it is
 * submitted, scheduled or edited on its way to publication (refused then, with the reasons), so a
 * post that a network would refuse never reaches a client's approval or the scheduler.
 * Text limits live beside the publishers (Bluesky's 300 graphemes, each Mastodon instance's own).
 */
import type { ProbeResult } from "../../media/types";
import type { Network } from "./brands";

/** What the preflight knows of a post's media (posts.media_facts): the probe, and the file's size. */
export type MediaFacts = Pick<
  ProbeResult,
  "kind" | "container" | "mimeType" | "durationMs" | "videoCodec" | "audioCodec" | "width" | "height" | "frameRate"
> & { bytes: number };

interface KindRules {
  /** Content types taken (`image/*` for any image). */
  types: string[];
  maxBytes: number;
  maxSeconds?: number;
  /** Codecs as ffprobe names them; absent: any the type allows. */
  videoCodecs?: string[];
  audioCodecs?: string[];
  maxFrameRate?: number;
  /** Width x height. */
  maxPixels?: number;
}

export interface NetworkMediaRules {
  /** When these figures were last checked against the source. */
  checkedOn: string;
  source: string;
  image?: KindRules;
  video?: KindRules;
  audio?: KindRules;
}

/**
 * Per network, the media it takes. Bluesky: the lexicons of the pinned @atproto/api (0.21.0:
 * app.bsky.embed.images 2 MB an image, app.bsky.embed.video 300 MB of MP4; a test compares) and
 * Bluesky's video limits (3 minutes since March 2025; H.264 and AAC is what its player is built
 * around). Mastodon: the defaults of Mastodon 4.3 that `GET /api/v2/instance` reports under
 * configuration.media_attachments (an instance may set others). The webhook takes any file.
 * No aspect-ratio bound is documented by either network as of the date below.
 */
export const MEDIA_RULES: Record<Network, NetworkMediaRules> = {
  bluesky: {
    checkedOn: "2026-11-28",
    source: "@atproto/api 0.21.0 lexicons; Bluesky video limits (3 min)",
    image: { types: ["image/*"], maxBytes: 2_000_000 },
    video: {
      types: ["video/mp4"],
      maxBytes: 300_000_000,
      maxSeconds: 180,
      videoCodecs: ["h264"],
      audioCodecs: ["aac"],
    },
  },
  mastodon: {
    checkedOn: "2026-11-28",
    source: "Mastodon 4.3 defaults (GET /api/v2/instance, configuration.media_attachments)",
    image: {
      types: ["image/jpeg", "image/png", "image/gif", "image/webp", "image/heic", "image/heif", "image/avif"],
      maxBytes: 16 * 1024 * 1024,
      maxPixels: 33_177_600,
    },
    video: {
      types: ["video/mp4", "video/quicktime", "video/webm"],
      maxBytes: 99 * 1024 * 1024,
      maxFrameRate: 120,
      maxPixels: 8_294_400,
    },
    audio: {
      types: [
        "audio/mpeg",
        "audio/mp4",
        "audio/ogg",
        "audio/wav",
        "audio/x-wav",
        "audio/flac",
        "audio/webm",
        "audio/aac",
      ],
      maxBytes: 99 * 1024 * 1024,
    },
  },
  webhook: { checkedOn: "2026-11-28", source: "the brand's own endpoint: any file" },
};

/** The rules a finding can name (the contract's enum is this list). */
export const PREFLIGHT_RULES = ["type", "size", "duration", "codec", "frameRate", "dimensions"] as const;
export type PreflightRule = (typeof PREFLIGHT_RULES)[number];

export interface PreflightFinding {
  network: Network;
  rule: PreflightRule;
  /** What is wrong and what would do, for people. */
  message: string;
}

const NAMES: Record<Network, string> = { bluesky: "Bluesky", mastodon: "Mastodon", webhook: "the webhook" };

const takes = (types: string[], type: string) =>
  types.some((t) => (t.endsWith("/*") ? type.startsWith(t.slice(0, -1)) : t === type));

const megabytes = (bytes: number) => `${(bytes / 1e6).toFixed(bytes < 10e6 ? 1 : 0)} MB`;

/** What `network` would refuse in the media described by `facts`; empty when it takes it. */
export function mediaFindings(network: Network, facts: MediaFacts): PreflightFinding[] {
  const rules = MEDIA_RULES[network];
  if (network === "webhook") return [];
  const name = NAMES[network];
  const type = facts.mimeType.split(";")[0]!.trim().toLowerCase();
  const kind = facts.kind === "image" ? rules.image : facts.kind === "video" ? rules.video : rules.audio;
  const found = (rule: PreflightRule, message: string): PreflightFinding => ({ network, rule, message });
  if (!kind || !takes(kind.types, type)) {
    const accepted = [
      rules.image && "images",
      rules.video && `video (${rules.video.types.join(", ")})`,
      rules.audio && "audio",
    ]
      .filter(Boolean)
      .join(", ");
    return [
      found(
        "type",
        `${name} takes ${accepted}, not ${type}${facts.kind === "video" ? ": convert it to MP4 (the convert tool, format mp4)" : ""}, or leave ${name} out of networks.`,
      ),
    ];
  }
  const findings: PreflightFinding[] = [];
  if (facts.bytes > kind.maxBytes)
    findings.push(
      found("size", `${name} takes files up to ${megabytes(kind.maxBytes)}; this one is ${megabytes(facts.bytes)}.`),
    );
  if (kind.maxSeconds !== undefined && facts.durationMs > kind.maxSeconds * 1000)
    findings.push(
      found(
        "duration",
        `${name} takes videos up to ${kind.maxSeconds} s; this one lasts ${(facts.durationMs / 1000).toFixed(1)} s: shorten it (the trim tool).`,
      ),
    );
  const codecs = [
    [facts.videoCodec, kind.videoCodecs, "picture"],
    [facts.audioCodec, kind.audioCodecs, "sound"],
  ] as const;
  for (const [codec, allowed, what] of codecs)
    if (codec && allowed && !allowed.includes(codec))
      findings.push(
        found(
          "codec",
          `${name} plays ${what} in ${allowed.join(", ")}; this ${what} is ${codec}: convert it (the convert tool, format mp4).`,
        ),
      );
  if (kind.maxFrameRate !== undefined && facts.frameRate !== undefined && facts.frameRate > kind.maxFrameRate)
    findings.push(
      found(
        "frameRate",
        `${name} takes up to ${kind.maxFrameRate} frames per second; this video has ${facts.frameRate}.`,
      ),
    );
  if (kind.maxPixels !== undefined && facts.width && facts.height && facts.width * facts.height > kind.maxPixels)
    findings.push(
      found(
        "dimensions",
        `${name} takes up to ${kind.maxPixels.toLocaleString("en-US")} pixels a frame; this one is ${facts.width}x${facts.height}.`,
      ),
    );
  return findings;
}

/** Every network's findings for the post's media; none without media or without its facts. */
export function preflight(networks: Network[], facts: MediaFacts | null): PreflightFinding[] {
  return facts ? networks.flatMap((network) => mediaFindings(network, facts)) : [];
}
