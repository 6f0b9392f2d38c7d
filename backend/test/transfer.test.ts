/** Downloads: parallel ranged parts when the server honours Range, one stream when it does not. */
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOWNLOAD_PART_BYTES, DOWNLOAD_PARALLELISM, downloadToFile, TransferError } from "../src/transfer.ts";

const body = randomBytes(3 * DOWNLOAD_PART_BYTES + 12_345);
const sha = (data: Buffer) => createHash("sha256").update(data).digest("hex");
const seen: { range?: string; status: number }[] = [];
let inFlight = 0;
let maxInFlight = 0;
let server: http.Server;
let base: string;
const dir = mkdtempSync(path.join(os.tmpdir(), "transfer-test-"));

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const range = req.headers.range;
    const honour = req.url === "/ranged" || req.url === "/broken-part";
    const match = /^bytes=(\d+)-(\d+)$/.exec(range ?? "");
    if (!honour || !match) {
      seen.push({ range, status: 200 });
      res.writeHead(200, { "content-length": body.length });
      res.end(body);
      return;
    }
    const start = Number(match[1]);
    const end = Math.min(Number(match[2]), body.length - 1);
    seen.push({ range, status: 206 });
    if (req.url === "/broken-part" && start > 0) {
      res.writeHead(500).end();
      return;
    }
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    res.writeHead(206, { "content-range": `bytes ${start}-${end}/${body.length}`, "content-length": end - start + 1 });
    // Written slowly in two halves, so parts overlap in time.
    const slice = body.subarray(start, end + 1);
    res.write(slice.subarray(0, slice.length >> 1));
    setTimeout(() => {
      res.end(slice.subarray(slice.length >> 1));
      inFlight--;
    }, 30);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => {
  server.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("downloadToFile", () => {
  it("fetches ranged parts side by side and reassembles the exact bytes", async () => {
    seen.length = 0;
    const dest = path.join(dir, "ranged.bin");
    expect(await downloadToFile(`${base}/ranged`, dest, { label: "input" })).toBe(body.length);
    expect(sha(readFileSync(dest))).toBe(sha(body));
    expect(seen.map((s) => s.range)).toEqual([
      `bytes=0-${DOWNLOAD_PART_BYTES - 1}`,
      `bytes=${DOWNLOAD_PART_BYTES}-${2 * DOWNLOAD_PART_BYTES - 1}`,
      `bytes=${2 * DOWNLOAD_PART_BYTES}-${3 * DOWNLOAD_PART_BYTES - 1}`,
      `bytes=${3 * DOWNLOAD_PART_BYTES}-${body.length - 1}`,
    ]);
    expect(maxInFlight).toBeGreaterThan(1);
    expect(maxInFlight).toBeLessThanOrEqual(DOWNLOAD_PARALLELISM);
  });

  it("streams the whole body when the server ignores Range", async () => {
    seen.length = 0;
    const dest = path.join(dir, "whole.bin");
    expect(await downloadToFile(`${base}/plain`, dest, { label: "input" })).toBe(body.length);
    expect(sha(readFileSync(dest))).toBe(sha(body));
    expect(seen).toEqual([{ range: `bytes=0-${DOWNLOAD_PART_BYTES - 1}`, status: 200 }]);
  });

  it("fails clearly when a part fails", async () => {
    await expect(
      downloadToFile(`${base}/broken-part`, path.join(dir, "broken.bin"), { label: "input 'in0.mp4'" }),
    ).rejects.toThrow(TransferError);
    await expect(
      downloadToFile(`${base}/broken-part`, path.join(dir, "broken2.bin"), { label: "input 'in0.mp4'" }),
    ).rejects.toThrow(/input 'in0.mp4' could not be downloaded: HTTP 500/);
  });
});
