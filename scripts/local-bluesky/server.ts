/**
 * A local Bluesky for development and tests (no machine here reaches bsky.social, and a real PDS
 * does not run here: docs/social.md, "Locally"): one account on one PDS, speaking the XRPC calls
 * the project's publisher makes in the wire format of the PDS and AppView. Records are checked
 * against the lexicons of the pinned `@atproto/api` (as a PDS does: a text over 300 graphemes is
 * a 400 `InvalidRequest`), blobs against the embeds' `accept` and `maxSize`.
 *
 *   POST /xrpc/com.atproto.server.createSession   {identifier, password} -> {accessJwt, refreshJwt, did, handle}
 *   GET  /xrpc/com.atproto.identity.resolveHandle ?handle -> {did}
 *   POST /xrpc/com.atproto.repo.uploadBlob        raw body, Content-Type -> {blob}
 *   POST /xrpc/com.atproto.repo.createRecord      {repo, collection, rkey?, record}
 *   POST /xrpc/com.atproto.repo.putRecord         {repo, collection, rkey, record, swapRecord?}
 *   GET  /xrpc/app.bsky.feed.getPosts             ?uris (at most 25) -> {posts: postView[]}
 *
 * Errors are `{error, message}` with the PDS's statuses (401 AuthenticationRequired / AuthMissing,
 * 400 InvalidToken, InvalidRequest, InvalidSwap, BlobNotFound). Test controls under /_test: the
 * records written, the blobs uploaded (type, size, SHA-256), the sessions opened, and the
 * engagement counts of a post.
 *
 *   node scripts/local-bluesky/server.ts --port 8792 --handle brand.test --app-password abcd-efgh-ijkl-mnop
 */
import { createHash, randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { jsonToLex, lexicons } from "@atproto/api";

type Json = Record<string, any>;

export interface LocalBlueskyRecord {
  uri: string;
  cid: string;
  rkey: string;
  collection: string;
  record: Json;
  indexedAt: string;
  counts: { likeCount: number; repostCount: number; replyCount: number; quoteCount: number };
}

export interface LocalBlueskyBlob {
  cid: string;
  mimeType: string;
  size: number;
  sha256: string;
}

export interface LocalBluesky {
  url: string;
  did: string;
  handle: string;
  records(): LocalBlueskyRecord[];
  blobs(): LocalBlueskyBlob[];
  close(): Promise<void>;
}

const BASE32 = "abcdefghijklmnopqrstuvwxyz234567";
const SORTABLE = "234567abcdefghijklmnopqrstuvwxyz";
/** A record key of a `tid` collection (the TID syntax of the AT Protocol). */
const TID = /^[234567abcdefghij][234567abcdefghijklmnopqrstuvwxyz]{12}$/;

/** CIDv1 (base32, SHA-256) of `bytes` under `codec` (0x55 raw for blobs, 0x71 dag-cbor for records). */
function cid(bytes: Uint8Array, codec: number): string {
  const all = Buffer.concat([Buffer.from([0x01, codec, 0x12, 0x20]), createHash("sha256").update(bytes).digest()]);
  let bits = 0;
  let value = 0;
  let out = "b";
  for (const byte of all) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

function nextTid(): string {
  let n = (BigInt(Date.now()) * 1000n) << 10n;
  n |= BigInt(randomBytes(2).readUInt16BE(0) & 0x3ff);
  let key = "";
  for (let i = 0; i < 13; i++) {
    key = SORTABLE[Number(n & 31n)] + key;
    n >>= 5n;
  }
  return key;
}

/** The limits a lexicon sets on a blob field. */
function blobRule(def: string, field: string): { accept: string[]; maxSize: number } {
  const property = (lexicons.getDefOrThrow(def) as any).properties[field];
  return { accept: property.accept ?? ["*/*"], maxSize: property.maxSize ?? Number.POSITIVE_INFINITY };
}

const accepts = (accept: string[], mimeType: string) =>
  accept.some((a) => a === "*/*" || a === mimeType || (a.endsWith("/*") && mimeType.startsWith(a.slice(0, -1))));

/** An XRPC error answer (no parameter properties: Node runs this file by stripping types). */
class XrpcError extends Error {
  readonly status: number;
  readonly error: string;
  constructor(status: number, error: string, message: string) {
    super(message);
    this.status = status;
    this.error = error;
  }
}

export async function startLocalBluesky(options: {
  port?: number;
  handle: string;
  appPassword: string;
}): Promise<LocalBluesky> {
  const handle = options.handle.toLowerCase();
  const did = `did:plc:${createHash("sha256")
    .update(handle)
    .digest("hex")
    .slice(0, 24)
    .replace(/[0189]/g, "a")}`;
  const records: LocalBlueskyRecord[] = [];
  const blobs = new Map<string, LocalBlueskyBlob>();
  const accessTokens = new Set<string>();
  let sessions = 0;
  let base = "";

  const readBody = async (req: http.IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  };
  const readJson = async (req: http.IncomingMessage): Promise<Json> => {
    try {
      const body = JSON.parse((await readBody(req)).toString("utf8"));
      if (typeof body === "object" && body !== null && !Array.isArray(body)) return body;
    } catch {}
    throw new XrpcError(400, "InvalidRequest", "Request body must be a JSON object");
  };
  const requireAuth = (req: http.IncomingMessage) => {
    const header = req.headers.authorization;
    if (!header) throw new XrpcError(401, "AuthMissing", "Authentication Required");
    const token = /^Bearer (.+)$/.exec(header)?.[1];
    if (!token || !accessTokens.has(token)) throw new XrpcError(400, "InvalidToken", "Token could not be verified");
  };

  /** Blobs of a post's embed, each checked as the PDS does: uploaded before, of an accepted type and size. */
  function checkBlobs(record: Json): void {
    const embed = record.embed as Json | undefined;
    const refs: { blob: Json; rule: { accept: string[]; maxSize: number } }[] = [];
    if (embed?.$type === "app.bsky.embed.images")
      for (const image of embed.images ?? [])
        refs.push({ blob: image.image, rule: blobRule("app.bsky.embed.images#image", "image") });
    if (embed?.$type === "app.bsky.embed.video")
      refs.push({ blob: embed.video, rule: blobRule("app.bsky.embed.video", "video") });
    for (const { blob, rule } of refs) {
      const stored = blobs.get(blob?.ref?.$link);
      if (!stored) throw new XrpcError(400, "BlobNotFound", `Could not find blob: ${blob?.ref?.$link}`);
      if (!accepts(rule.accept, stored.mimeType))
        throw new XrpcError(
          400,
          "InvalidMimeType",
          `Wrong type of file. It is ${stored.mimeType} but it must match ${rule.accept}.`,
        );
      if (stored.size > rule.maxSize)
        throw new XrpcError(
          400,
          "BlobTooLarge",
          `This file is too large. It is ${stored.size} bytes but the maximum size is ${rule.maxSize} bytes.`,
        );
    }
  }

  /** createRecord and putRecord: the record validated, written at its key (swapRecord: compare and swap). */
  function write(body: Json, rkey: string, swapRecord: string | null | undefined): Json {
    if (body.repo !== did && body.repo !== handle) throw new XrpcError(401, "AuthenticationRequired", "Unauthorized");
    if (body.collection !== "app.bsky.feed.post")
      throw new XrpcError(400, "InvalidRequest", `This local PDS only keeps app.bsky.feed.post records`);
    if (!TID.test(rkey)) throw new XrpcError(400, "InvalidRequest", `Invalid record key: ${rkey}`);
    const record = body.record as Json;
    try {
      lexicons.assertValidRecord("app.bsky.feed.post", jsonToLex(record));
    } catch (error) {
      throw new XrpcError(400, "InvalidRequest", `Invalid app.bsky.feed.post record: ${(error as Error).message}`);
    }
    checkBlobs(record);
    const recordCid = cid(Buffer.from(JSON.stringify(record)), 0x71);
    const uri = `at://${did}/app.bsky.feed.post/${rkey}`;
    const current = records.find((r) => r.uri === uri);
    // As a PDS: the same record again is no write; another one must name the record it replaces.
    if (current?.cid === recordCid) return { uri, cid: recordCid, validationStatus: "valid" };
    if (swapRecord !== undefined && (current?.cid ?? null) !== swapRecord)
      throw new XrpcError(400, "InvalidSwap", `Record was at ${current?.cid ?? "null"}`);
    const entry: LocalBlueskyRecord = {
      uri,
      cid: recordCid,
      rkey,
      collection: body.collection,
      record,
      indexedAt: new Date().toISOString(),
      counts: current?.counts ?? { likeCount: 0, repostCount: 0, replyCount: 0, quoteCount: 0 },
    };
    if (current) records.splice(records.indexOf(current), 1, entry);
    else records.push(entry);
    return {
      uri,
      cid: recordCid,
      commit: { cid: cid(randomBytes(32), 0x71), rev: nextTid() },
      validationStatus: "valid",
    };
  }

  /** An app.bsky.feed.defs#postView, as the AppView answers it. */
  function postView(entry: LocalBlueskyRecord): Json {
    const embed = entry.record.embed as Json | undefined;
    const blobUrl = (link: string) =>
      `${base}/xrpc/com.atproto.sync.getBlob?did=${encodeURIComponent(did)}&cid=${link}`;
    const view =
      embed?.$type === "app.bsky.embed.images"
        ? {
            $type: "app.bsky.embed.images#view",
            images: embed.images.map((image: Json) => ({
              thumb: blobUrl(image.image.ref.$link),
              fullsize: blobUrl(image.image.ref.$link),
              alt: image.alt,
            })),
          }
        : embed?.$type === "app.bsky.embed.video"
          ? {
              $type: "app.bsky.embed.video#view",
              cid: embed.video.ref.$link,
              playlist: `${base}/watch/${encodeURIComponent(did)}/${embed.video.ref.$link}/playlist.m3u8`,
            }
          : undefined;
    return {
      uri: entry.uri,
      cid: entry.cid,
      author: { did, handle, displayName: "Local brand" },
      record: entry.record,
      ...(view ? { embed: view } : {}),
      ...entry.counts,
      bookmarkCount: 0,
      indexedAt: entry.indexedAt,
      labels: [],
    };
  }

  async function xrpc(req: http.IncomingMessage, url: URL): Promise<unknown> {
    const method = url.pathname.slice("/xrpc/".length);
    if (method === "com.atproto.server.createSession" && req.method === "POST") {
      const body = await readJson(req);
      const identifier = String(body.identifier ?? "").toLowerCase();
      if ((identifier !== handle && identifier !== did) || body.password !== options.appPassword)
        throw new XrpcError(401, "AuthenticationRequired", "Invalid identifier or password");
      sessions++;
      const accessJwt = `local.${randomBytes(24).toString("base64url")}`;
      accessTokens.add(accessJwt);
      return {
        accessJwt,
        refreshJwt: `local.${randomBytes(24).toString("base64url")}`,
        handle,
        did,
        active: true,
      };
    }
    if (method === "com.atproto.identity.resolveHandle" && req.method === "GET") {
      if (url.searchParams.get("handle")?.toLowerCase() === handle) return { did };
      throw new XrpcError(400, "InvalidRequest", "Unable to resolve handle");
    }
    if (method === "com.atproto.repo.uploadBlob" && req.method === "POST") {
      requireAuth(req);
      const bytes = await readBody(req);
      const mimeType = (req.headers["content-type"] ?? "application/octet-stream").split(";")[0]!.trim();
      const blob: LocalBlueskyBlob = {
        cid: cid(bytes, 0x55),
        mimeType,
        size: bytes.length,
        sha256: createHash("sha256").update(bytes).digest("hex"),
      };
      blobs.set(blob.cid, blob);
      return { blob: { $type: "blob", ref: { $link: blob.cid }, mimeType, size: blob.size } };
    }
    if (method === "com.atproto.repo.createRecord" && req.method === "POST") {
      requireAuth(req);
      const body = await readJson(req);
      return write(body, typeof body.rkey === "string" ? body.rkey : nextTid(), null);
    }
    if (method === "com.atproto.repo.putRecord" && req.method === "POST") {
      requireAuth(req);
      const body = await readJson(req);
      if (typeof body.rkey !== "string")
        throw new XrpcError(400, "InvalidRequest", 'Input must have the property "rkey"');
      return write(body, body.rkey, body.swapRecord === undefined ? undefined : body.swapRecord);
    }
    if (method === "app.bsky.feed.getPosts" && req.method === "GET") {
      requireAuth(req);
      const uris = url.searchParams.getAll("uris");
      if (uris.length > 25)
        throw new XrpcError(400, "InvalidRequest", "Params/uris must not have more than 25 elements");
      const answer = { posts: uris.flatMap((uri) => records.filter((r) => r.uri === uri)).map(postView) };
      lexicons.assertValidXrpcOutput("app.bsky.feed.getPosts", jsonToLex(answer));
      return answer;
    }
    throw new XrpcError(501, "MethodNotImplemented", "Method Not Implemented");
  }

  const server = http.createServer(async (req, res) => {
    const reply = (status: number, body: unknown) =>
      res.writeHead(status, { "content-type": "application/json; charset=utf-8" }).end(JSON.stringify(body));
    try {
      const url = new URL(req.url ?? "/", base);
      if (url.pathname === "/_test/records" && req.method === "GET") return reply(200, records);
      if (url.pathname === "/_test/blobs" && req.method === "GET") return reply(200, [...blobs.values()]);
      if (url.pathname === "/_test/sessions" && req.method === "GET") return reply(200, { sessions });
      const engagement = /^\/_test\/posts\/([234567a-z]{13})\/engagement$/.exec(url.pathname);
      if (engagement && req.method === "POST") {
        const entry = records.find((r) => r.rkey === engagement[1]);
        if (!entry) return reply(404, { error: "RecordNotFound", message: "Could not locate record" });
        const counts = JSON.parse((await readBody(req)).toString("utf8"));
        for (const key of Object.keys(entry.counts) as (keyof LocalBlueskyRecord["counts"])[])
          if (Number.isInteger(counts[key])) entry.counts[key] = counts[key];
        return reply(200, postView(entry));
      }
      if (url.pathname.startsWith("/xrpc/")) return reply(200, await xrpc(req, url));
      return reply(404, { error: "NotFound", message: "Not Found" });
    } catch (error) {
      if (error instanceof XrpcError) return reply(error.status, { error: error.error, message: error.message });
      reply(500, { error: "InternalServerError", message: "Internal Server Error" });
    }
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: base,
    did,
    handle,
    records: () => records,
    blobs: () => [...blobs.values()],
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = (name: string) => {
    const index = process.argv.indexOf(`--${name}`);
    return index > 0 ? process.argv[index + 1] : undefined;
  };
  const bluesky = await startLocalBluesky({
    port: Number(arg("port") ?? 8792),
    handle: arg("handle") ?? "brand.test",
    appPassword: arg("app-password") ?? process.env.BLUESKY_APP_PASSWORD ?? "abcd-efgh-ijkl-mnop",
  });
  console.log(`local Bluesky listening on ${bluesky.url} (${bluesky.handle}, ${bluesky.did})`);
  process.on("SIGTERM", () => bluesky.close().then(() => process.exit(0)));
  process.on("SIGINT", () => bluesky.close().then(() => process.exit(0)));
}
