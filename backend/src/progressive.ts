/**
 * Progressive inputs (protocol: FfmpegJobSchema.progressiveInputs): ffmpeg reads an input over
 * loopback HTTP while the backend downloads it. A job's server answers `GET /<token>` with the
 * input's true size (`Content-Range`) and each range's bytes as they land on disk: a read that
 * reaches bytes not there yet waits for them, and asks the download to fetch their part next (an
 * index at the end of the file, a seek forward). What has arrived is served from disk, so seeks
 * back and second passes cost no transfer. Tokens are random per job and input; the server listens
 * on 127.0.0.1 only and closes with the job.
 */
import { randomBytes } from "node:crypto";
import { open } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { DownloadProgress } from "./transfer.ts";

/** Most bytes read from disk and written to the socket at once. */
const CHUNK_BYTES = 256 * 1024;

interface Served {
  path: string;
  progress: DownloadProgress;
}

export class ProgressiveServer {
  readonly #server: http.Server;
  readonly #files = new Map<string, Served>();
  #base = "";

  private constructor() {
    this.#server = http.createServer((req, res) => {
      this.#serve(req, res).catch(() => res.destroy());
    });
  }

  static async start(): Promise<ProgressiveServer> {
    const server = new ProgressiveServer();
    await new Promise<void>((resolve, reject) => {
      server.#server.once("error", reject);
      server.#server.listen(0, "127.0.0.1", resolve);
    });
    server.#base = `http://127.0.0.1:${(server.#server.address() as AddressInfo).port}`;
    return server;
  }

  /** The URL ffmpeg reads `path` at while `progress` follows its download. */
  add(path: string, progress: DownloadProgress): string {
    const token = randomBytes(16).toString("hex");
    this.#files.set(token, { path, progress });
    return `${this.#base}/${token}`;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  async #serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const file = this.#files.get((req.url ?? "").slice(1));
    if (!file) return void res.writeHead(404).end();
    if (req.method !== "GET" && req.method !== "HEAD") return void res.writeHead(405).end();
    const { progress } = file;
    let closed = false;
    const gone = new Promise<void>((resolve) => res.once("close", () => ((closed = true), resolve())));
    while (progress.total === undefined && progress.error === undefined && !closed)
      await Promise.race([progress.changed(), gone]);
    if (closed) return;
    if (progress.total === undefined) return void res.writeHead(502).end();
    const total = progress.total;
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? "");
    const start = range ? Number(range[1]) : 0;
    const end = range?.[2] ? Math.min(Number(range[2]), total - 1) : total - 1;
    if (start >= total || end < start) return void res.writeHead(416, { "content-range": `bytes */${total}` }).end();
    res.writeHead(range ? 206 : 200, {
      "content-type": "application/octet-stream",
      "content-length": end - start + 1,
      "accept-ranges": "bytes",
      ...(range ? { "content-range": `bytes ${start}-${end}/${total}` } : {}),
    });
    if (req.method === "HEAD") return void res.end();
    const handle = await open(file.path, "r");
    try {
      let position = start;
      while (position <= end && !closed) {
        const available = progress.availableFrom(position);
        if (available === 0) {
          // A failed download ends the answer short: ffmpeg's read fails and the job reports the download's error.
          if (progress.error !== undefined) return void res.destroy();
          progress.want(position);
          await Promise.race([progress.changed(), gone]);
          continue;
        }
        const chunk = Buffer.allocUnsafe(Math.min(available, end + 1 - position, CHUNK_BYTES));
        const { bytesRead } = await handle.read(chunk, 0, chunk.length, position);
        if (bytesRead === 0) return void res.destroy();
        position += bytesRead;
        if (!res.write(chunk.subarray(0, bytesRead)))
          await Promise.race([new Promise((resolve) => res.once("drain", resolve)), gone]);
      }
      if (!closed) res.end();
    } finally {
      await handle.close();
    }
  }
}
