/**
 * URL uploads fetched by the backend (POST /v1/ingest), where Node lets a connection go to the
 * address that was checked. The Worker checks a URL's host by resolving it, then fetches it, and
 * its fetch resolves the name again: a name that answers a public address to the check and a
 * private one a moment later (DNS rebinding) gets through. Here each hop's name is resolved once,
 * every address it has must be public, and the request connects to that checked address (a
 * `lookup` that answers it), with the name kept for TLS and the Host header. Redirects are
 * followed by hand, each hop checked the same way.
 */
import { createWriteStream } from "node:fs";
import { lookup as dnsLookup } from "node:dns/promises";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import { pipeline } from "node:stream/promises";

export class RefusedUrlError extends Error {}

/** Ranges that are not public unicast (RFC 6890 and its updates). */
const NON_PUBLIC = new net.BlockList();
for (const [prefix, bits] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const)
  NON_PUBLIC.addSubnet(prefix, bits, "ipv4");
// The IPv4-compatible and IPv4-mapped ranges (::/96, ::ffff:0:0/96) are judged by hand below:
// in a BlockList they would also match every IPv4 address.
for (const [prefix, bits] of [
  ["64:ff9b::", 96],
  ["64:ff9b:1::", 48],
  ["100::", 64],
  ["2001::", 23],
  ["2001:db8::", 32],
  ["2002::", 16],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
] as const)
  NON_PUBLIC.addSubnet(prefix, bits, "ipv6");

/** The eight 16-bit groups of an IPv6 address (an embedded IPv4 tail as two groups). */
function ipv6Groups(address: string): number[] {
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(address);
  const hex = v4
    ? address.slice(0, v4.index) +
      [((+v4[1]! << 8) | +v4[2]!).toString(16), ((+v4[3]! << 8) | +v4[4]!).toString(16)].join(":")
    : address;
  const [head, tail] = hex.split("::");
  const part = (text: string | undefined) => (text ? text.split(":").map((group) => parseInt(group, 16)) : []);
  const left = part(head);
  const right = part(tail);
  return [...left, ...Array(8 - left.length - right.length).fill(0), ...right];
}

/** A public unicast address (an IPv4-mapped or -compatible IPv6 address is never taken on trust). */
export function isPublicAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 4) return !NON_PUBLIC.check(address, "ipv4");
  if (family !== 6) return false;
  const groups = ipv6Groups(address);
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return isPublicAddress(`${groups[6]! >> 8}.${groups[6]! & 255}.${groups[7]! >> 8}.${groups[7]! & 255}`);
  }
  // ::/96: unspecified, loopback and the deprecated IPv4-compatible form (::7f00:1 is 127.0.0.1).
  if (groups.slice(0, 6).every((g) => g === 0)) return false;
  return !NON_PUBLIC.check(address, "ipv6");
}

export type Resolve = (host: string) => Promise<{ address: string; family: number }[]>;

export interface IngestOptions {
  /** Local development only: loopback and private addresses are allowed (ALLOW_PRIVATE_URLS). */
  allowPrivate: boolean;
  maxBytes: number;
  /** The resolver (tests give their own); the system's by default. */
  resolve?: Resolve;
  signal?: AbortSignal;
}

/** The one address a hop connects to, after every address of its host passed the check. */
export async function checkedAddress(
  url: URL,
  options: Pick<IngestOptions, "allowPrivate" | "resolve">,
): Promise<{ address: string; family: number }> {
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new RefusedUrlError("only http and https URLs are accepted");
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const addresses = net.isIP(host)
    ? [{ address: host, family: net.isIP(host) }]
    : await (options.resolve ?? ((name) => dnsLookup(name, { all: true })))(host).catch(() => []);
  if (addresses.length === 0) throw new RefusedUrlError(`${host} does not resolve`);
  if (!options.allowPrivate && addresses.some((a) => !isPublicAddress(a.address)))
    throw new RefusedUrlError("the host resolves to a non-public address");
  return addresses[0]!;
}

export interface Ingested {
  bytes: number;
  /** The URL the file came from, after redirects (its path names the upload). */
  finalUrl: string;
  contentType: string | null;
}

const MAX_REDIRECTS = 5;

/** GETs `raw` into `file`, every hop pinned to its checked address; at most `maxBytes`. */
export async function downloadPinned(raw: string, file: string, options: IngestOptions): Promise<Ingested> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new RefusedUrlError("not a valid URL");
  }
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    const target = await checkedAddress(url, options);
    const response = await get(url, target, options.signal);
    const status = response.statusCode ?? 0;
    const location = response.headers.location;
    if (status >= 300 && status < 400 && location) {
      response.resume();
      url = new URL(location, url);
      continue;
    }
    if (status < 200 || status >= 300) {
      response.resume();
      throw new RefusedUrlError(`the server answered HTTP ${status}`);
    }
    const declared = Number(response.headers["content-length"] ?? Number.NaN);
    if (Number.isFinite(declared) && declared > options.maxBytes) {
      response.destroy();
      throw new RefusedUrlError(`the file is larger than the ${options.maxBytes.toLocaleString("en")} bytes limit`);
    }
    let bytes = 0;
    response.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > options.maxBytes)
        response.destroy(
          new RefusedUrlError(`the file is larger than the ${options.maxBytes.toLocaleString("en")} bytes limit`),
        );
    });
    await pipeline(response, createWriteStream(file), { signal: options.signal });
    if (bytes === 0) throw new RefusedUrlError("the file is empty");
    return {
      bytes,
      finalUrl: url.toString(),
      contentType: typeof response.headers["content-type"] === "string" ? response.headers["content-type"] : null,
    };
  }
  throw new RefusedUrlError("too many redirects");
}

/** One GET that connects to `target`, the name kept for SNI, the certificate and the Host header. */
function get(
  url: URL,
  target: { address: string; family: number },
  signal?: AbortSignal,
): Promise<http.IncomingMessage> {
  const client = url.protocol === "https:" ? https : http;
  return new Promise((resolve, reject) => {
    // Pinned: whatever the name resolves to now, the connection goes to the address checked.
    const lookup: net.LookupFunction = (_host, options, callback) => {
      if (options.all)
        (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [target]);
      else callback(null, target.address, target.family);
    };
    const request = client.get(url.toString(), {
      signal,
      headers: { "user-agent": "media-credits-api/1.0" },
      lookup,
      timeout: 60_000,
    });
    request.on("response", resolve);
    request.on("timeout", () => request.destroy(new Error("no answer within 60 s")));
    request.on("error", reject);
  });
}
