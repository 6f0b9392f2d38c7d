/**
 * A local Mastodon for development and tests (no machine here reaches a real instance): the
 * calls the project's publisher makes, in Mastodon's wire format. `POST /api/v2/media`
 * (multipart), `POST /api/v1/statuses` (form or JSON, honouring `Idempotency-Key` as Mastodon
 * does, 500 characters at most with every link counted as 23), `GET /api/v1/statuses/:id` with
 * its counts, `GET /api/v2/instance` (public: the status limits); errors `{error}` with
 * 401/404/422. Test
 * controls under /_test set the engagement counts and list what was posted.
 *
 *   node scripts/local-mastodon/server.ts --port 8790 --token <access token>
 */
import { randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";

type Status = Record<string, any>;

/** Mastodon's defaults: 500 characters per status (as people see them: an emoji is one), every link counted as 23. */
const MAX_CHARACTERS = 500;
const URL_CHARACTERS = 23;

export interface LocalMastodon {
  url: string;
  statuses(): Status[];
  close(): Promise<void>;
}

export async function startLocalMastodon(options: { port?: number; token: string }): Promise<LocalMastodon> {
  const statuses: Status[] = [];
  const media = new Map<string, Status>();
  const idempotent = new Map<string, Status>();
  let base = "";
  let counter = 100000;

  const readBody = async (req: http.IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  };

  async function fields(
    req: http.IncomingMessage,
  ): Promise<{ values: Record<string, string[]>; file?: { name: string; type: string; size: number } }> {
    const type = req.headers["content-type"] ?? "";
    const raw = await readBody(req);
    const values: Record<string, string[]> = {};
    const add = (k: string, v: string) => (values[k] ??= []).push(v);
    if (type.startsWith("multipart/form-data")) {
      const form = await new Response(raw, { headers: { "content-type": type } }).formData();
      let file: { name: string; type: string; size: number } | undefined;
      for (const [k, v] of form) {
        if (typeof v === "string") add(k, v);
        else file = { name: v.name, type: v.type, size: v.size };
      }
      return { values, file };
    }
    if (type.startsWith("application/json")) {
      for (const [k, v] of Object.entries(JSON.parse(raw.toString("utf8") || "{}")))
        for (const item of Array.isArray(v) ? v : [v]) add(k, String(item));
      return { values };
    }
    for (const [k, v] of new URLSearchParams(raw.toString("utf8"))) add(k, v);
    return { values };
  }

  const server = http.createServer(async (req, res) => {
    const reply = (status: number, body: unknown) =>
      res.writeHead(status, { "content-type": "application/json; charset=utf-8" }).end(JSON.stringify(body));
    try {
      const url = new URL(req.url ?? "/", base);
      if (url.pathname === "/_test/statuses" && req.method === "GET") return reply(200, statuses);
      const engagement = /^\/_test\/statuses\/(\d+)\/engagement$/.exec(url.pathname);
      if (engagement && req.method === "POST") {
        const status = statuses.find((s) => s.id === engagement[1]);
        if (!status) return reply(404, { error: "Record not found" });
        Object.assign(status, JSON.parse((await readBody(req)).toString("utf8")));
        return reply(200, status);
      }
      if (url.pathname === "/api/v2/instance" && req.method === "GET") {
        return reply(200, {
          domain: url.host,
          title: "Local Mastodon",
          version: "4.3.0",
          configuration: {
            statuses: {
              max_characters: MAX_CHARACTERS,
              max_media_attachments: 4,
              characters_reserved_per_url: URL_CHARACTERS,
            },
          },
        });
      }
      if (req.headers.authorization !== `Bearer ${options.token}`)
        return reply(401, { error: "The access token is invalid" });
      if (url.pathname === "/api/v2/media" && req.method === "POST") {
        const { file } = await fields(req);
        if (!file) return reply(422, { error: "Validation failed: File can't be blank" });
        const id = String(counter++);
        const attachment = {
          id,
          type: file.type.split("/")[0] === "image" ? "image" : file.type.startsWith("video/") ? "video" : "unknown",
          url: `${base}/media/${id}`,
          preview_url: `${base}/media/${id}/small`,
          description: null,
          meta: { size: file.size, filename: file.name },
        };
        media.set(id, attachment);
        return reply(200, attachment);
      }
      if (url.pathname === "/api/v1/statuses" && req.method === "POST") {
        const key = req.headers["idempotency-key"];
        if (typeof key === "string" && idempotent.has(key)) return reply(200, idempotent.get(key));
        const { values } = await fields(req);
        const text = values.status?.[0] ?? "";
        const mediaIds = values["media_ids[]"] ?? values.media_ids ?? [];
        if (!text && mediaIds.length === 0) return reply(422, { error: "Validation failed: Text can't be blank" });
        if (
          [
            ...new Intl.Segmenter().segment(
              text.replace(/https?:\/\/[^\s<>"]*[^\s<>".,;:!?)\]'"»”]/g, "x".repeat(URL_CHARACTERS)),
            ),
          ].length > MAX_CHARACTERS
        ) {
          return reply(422, { error: `Validation failed: Text character limit of ${MAX_CHARACTERS} exceeded` });
        }
        for (const id of mediaIds)
          if (!media.has(id)) return reply(422, { error: "Validation failed: Media attachments are invalid" });
        const id = String(counter++) + randomBytes(2).readUInt16BE(0);
        const status = {
          id,
          uri: `${base}/users/brand/statuses/${id}`,
          url: `${base}/@brand/${id}`,
          created_at: new Date().toISOString(),
          content: `<p>${text.replace(/[&<>]/g, (c) => `&#${c.charCodeAt(0)};`)}</p>`,
          visibility: values.visibility?.[0] ?? "public",
          media_attachments: mediaIds.map((m) => media.get(m)),
          favourites_count: 0,
          reblogs_count: 0,
          replies_count: 0,
        };
        statuses.push(status);
        if (typeof key === "string") idempotent.set(key, status);
        return reply(200, status);
      }
      const one = /^\/api\/v1\/statuses\/(\w+)$/.exec(url.pathname);
      if (one && req.method === "GET") {
        const status = statuses.find((s) => s.id === one[1]);
        return status ? reply(200, status) : reply(404, { error: "Record not found" });
      }
      return reply(404, { error: "Not found" });
    } catch (error) {
      reply(500, { error: error instanceof Error ? error.message : String(error) });
    }
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url: base, statuses: () => statuses, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = (name: string) => {
    const index = process.argv.indexOf(`--${name}`);
    return index > 0 ? process.argv[index + 1] : undefined;
  };
  const mastodon = await startLocalMastodon({
    port: Number(arg("port") ?? 8790),
    token: arg("token") ?? process.env.MASTODON_TOKEN ?? "local-mastodon-token",
  });
  console.log(`local Mastodon listening on ${mastodon.url}`);
  process.on("SIGTERM", () => mastodon.close().then(() => process.exit(0)));
  process.on("SIGINT", () => mastodon.close().then(() => process.exit(0)));
}
