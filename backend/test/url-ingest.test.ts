/**
 * URL ingestion with pinned connections (src/url-ingest.ts): every address of a host is checked,
 * the connection goes to the address that was checked (a second resolution, DNS rebinding's
 * chance, never happens), and the size is bounded. Loopback only: what must be refused is refused
 * before any connection; what must connect connects to 127.0.0.1 under allowPrivate.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Backend } from "./helpers.ts";
import { checkedAddress, downloadPinned, isPublicAddress, RefusedUrlError, type Resolve } from "../src/url-ingest.ts";

let server: http.Server;
let port: number;
/** Requests the test server received (method and path). */
const received: string[] = [];
const dir = mkdtempSync(path.join(os.tmpdir(), "ingest-test-"));

beforeAll(async () => {
  server = http.createServer((req, res) => {
    received.push(`${req.method} ${req.url}`);
    if (req.url === "/redirect") {
      res.writeHead(302, { location: `http://files.test:${port}/file.bin` });
      return res.end();
    }
    if (req.url === "/big") {
      res.writeHead(200, { "content-length": "5000" });
      return res.end(Buffer.alloc(5000));
    }
    res.writeHead(200, { "content-type": "application/octet-stream" });
    res.end(`served to ${req.headers.host}`);
  });
  // Listening on 127.0.0.1 only: 127.0.0.2, the address a rebinding would swap in, refuses.
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => server.close());

/** A resolver that answers `first` once, then `later`: a name that changes its answer. */
function rebinding(first: string, later: string) {
  const asked: string[] = [];
  const resolve: Resolve = async (host) => {
    asked.push(host);
    return [{ address: asked.length === 1 ? first : later, family: 4 }];
  };
  return { resolve, asked };
}

describe("url ingestion", () => {
  it("knows public addresses from the rest, IPv4-mapped forms included", () => {
    for (const address of ["93.184.216.34", "2606:4700:4700::1111", "1.1.1.1"])
      expect(isPublicAddress(address), address).toBe(true);
    for (const address of [
      "127.0.0.1",
      "10.1.2.3",
      "172.16.0.9",
      "192.168.1.1",
      "169.254.169.254",
      "100.64.0.1",
      "0.0.0.0",
      "::1",
      "::",
      "fe80::1",
      "fc00::1",
      "::ffff:127.0.0.1",
      "::ffff:10.0.0.1",
      "::7f00:1",
      "::ffff:7f00:1",
      "2001:db8::1",
      "not an address",
    ]) {
      expect(isPublicAddress(address), address).toBe(false);
    }
  });

  it("refuses a host with any non-public address, before connecting", async () => {
    const mixed: Resolve = async () => [
      { address: "93.184.216.34", family: 4 },
      { address: "127.0.0.1", family: 4 },
    ];
    await expect(
      checkedAddress(new URL("https://mixed.test/x"), { allowPrivate: false, resolve: mixed }),
    ).rejects.toThrow(/non-public/);
    await expect(checkedAddress(new URL("http://127.0.0.1/x"), { allowPrivate: false })).rejects.toThrow(
      RefusedUrlError,
    );
    await expect(checkedAddress(new URL("http://[::ffff:7f00:1]/x"), { allowPrivate: false })).rejects.toThrow(
      RefusedUrlError,
    );
    await expect(checkedAddress(new URL("file:///etc/passwd"), { allowPrivate: false })).rejects.toThrow(
      /only http and https/,
    );
    await expect(
      downloadPinned("http://nowhere.test/x", path.join(dir, "x"), {
        allowPrivate: false,
        maxBytes: 100,
        resolve: async () => [],
      }),
    ).rejects.toThrow(/does not resolve/);
  });

  it("connects to the address it checked, resolving each name once", async () => {
    const { resolve, asked } = rebinding("127.0.0.1", "127.0.0.2");
    const file = path.join(dir, "pinned");
    const got = await downloadPinned(`http://files.test:${port}/file.bin`, file, {
      allowPrivate: true,
      maxBytes: 1000,
      resolve,
    });
    // The name stays for the Host header; the connection went to 127.0.0.1, the checked address.
    expect(readFileSync(file, "utf8")).toBe(`served to files.test:${port}`);
    expect(asked).toEqual(["files.test"]);
    expect(got).toMatchObject({
      bytes: `served to files.test:${port}`.length,
      finalUrl: `http://files.test:${port}/file.bin`,
    });
    // Each hop of a redirect is resolved and checked once.
    const hops = rebinding("127.0.0.1", "127.0.0.1");
    const redirected = await downloadPinned(`http://start.test:${port}/redirect`, path.join(dir, "redirected"), {
      allowPrivate: true,
      maxBytes: 1000,
      resolve: hops.resolve,
    });
    expect(hops.asked).toEqual(["start.test", "files.test"]);
    expect(redirected.finalUrl).toBe(`http://files.test:${port}/file.bin`);
  });

  it("stops at the size limit, stated or counted", async () => {
    const resolve: Resolve = async () => [{ address: "127.0.0.1", family: 4 }];
    await expect(
      downloadPinned(`http://files.test:${port}/big`, path.join(dir, "big"), {
        allowPrivate: true,
        maxBytes: 1000,
        resolve,
      }),
    ).rejects.toThrow(/larger than the 1,000 bytes limit/);
  });

  it("opens loopback to a Worker's request only when the backend's own ALLOW_PRIVATE_URLS says so", async () => {
    const ingest = (backend: Backend) =>
      backend.fetch("/v1/ingest", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          url: `http://127.0.0.1:${port}/file.bin`,
          output: { url: `http://127.0.0.1:${port}/put` },
          allowPrivate: true,
          maxBytes: 1000,
        }),
      });
    const production = await Backend.start();
    const development = await Backend.start({ ALLOW_PRIVATE_URLS: "true" });
    try {
      received.length = 0;
      const refused = await ingest(production);
      expect(refused.status).toBe(422);
      expect(await refused.json()).toMatchObject({ error: "refused" });
      expect(received).toEqual([]);
      const fetched = await ingest(development);
      expect(fetched.status).toBe(200);
      expect(received).toEqual(["GET /file.bin", "PUT /put"]);
    } finally {
      await Promise.all([production.stop(), development.stop()]);
    }
  });
});
