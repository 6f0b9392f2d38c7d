/**
 * Guards URL ingestion against server-side request forgery: only http(s) to public unicast
 * addresses. Literal IPs in every notation (the URL parser already normalises decimal, hex and
 * short IPv4 forms), IPv4-mapped IPv6, local host names, and names that resolve (over DNS over
 * HTTPS) to non-public addresses are refused. Redirects are followed by hand, each hop checked.
 */
import ipaddr from "ipaddr.js";

export class UnsafeUrlError extends Error {}

const BLOCKED_NAMES = [/^localhost$/, /\.localhost$/, /\.local$/, /\.internal$/, /^metadata$/, /\.home\.arpa$/];

function isPublicAddress(address: string): boolean {
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === "ipv6") {
    const v6 = parsed as ipaddr.IPv6;
    // IPv4-compatible addresses (::a.b.c.d, deprecated by RFC 4291) are "unicast" to ipaddr.js
    // but carry an IPv4 address: ::7f00:1 is 127.0.0.1, ::a9fe:a9fe the metadata address.
    if (v6.parts.slice(0, 6).every((part) => part === 0)) return false;
    if (v6.isIPv4MappedAddress()) parsed = v6.toIPv4Address();
  }
  return parsed.range() === "unicast";
}

export interface UrlPolicy {
  allowPrivate: boolean;
  /** DNS-over-HTTPS JSON endpoint used to check what a host name resolves to. */
  resolverUrl?: string;
}

async function resolve(name: string, resolverUrl: string): Promise<string[]> {
  const addresses: string[] = [];
  for (const type of ["A", "AAAA"]) {
    const url = new URL(resolverUrl);
    url.searchParams.set("name", name);
    url.searchParams.set("type", type);
    const response = await fetch(url, { headers: { accept: "application/dns-json" } }).catch(() => undefined);
    if (!response?.ok) throw new UnsafeUrlError(`could not resolve ${name}`);
    const answer = (await response.json()) as { Answer?: { type: number; data: string }[] };
    for (const record of answer.Answer ?? []) {
      if (record.type === 1 || record.type === 28) addresses.push(record.data);
    }
  }
  return addresses;
}

/** Throws UnsafeUrlError unless `raw` is an http(s) URL to a public host. */
export async function assertPublicUrl(raw: string, policy: UrlPolicy): Promise<URL> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UnsafeUrlError("not a valid URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new UnsafeUrlError("only http and https URLs are accepted");
  if (policy.allowPrivate) return url;
  const host = url.hostname
    .replace(/^\[|\]$/g, "")
    .toLowerCase()
    .replace(/\.$/, "");
  if (ipaddr.isValid(host)) {
    if (!isPublicAddress(host)) throw new UnsafeUrlError("the address is not public");
    return url;
  }
  if (!host.includes(".") || BLOCKED_NAMES.some((re) => re.test(host)))
    throw new UnsafeUrlError("the host is not public");
  if (policy.resolverUrl) {
    const addresses = await resolve(host, policy.resolverUrl);
    if (addresses.length === 0) throw new UnsafeUrlError(`${host} does not resolve`);
    if (addresses.some((a) => !ipaddr.isValid(a) || !isPublicAddress(a)))
      throw new UnsafeUrlError("the host resolves to a non-public address");
  }
  return url;
}

/** GET with redirects followed by hand (at most 5), every hop checked by assertPublicUrl. */
export async function fetchPublic(raw: string, policy: UrlPolicy): Promise<Response> {
  let url = await assertPublicUrl(raw, policy);
  for (let hop = 0; hop <= 5; hop++) {
    const response = await fetch(url, { redirect: "manual", headers: { "user-agent": "media-credits-api/1.0" } });
    if (response.status < 300 || response.status >= 400 || !response.headers.get("location")) return response;
    await response.body?.cancel();
    url = await assertPublicUrl(new URL(response.headers.get("location")!, url).toString(), policy);
  }
  throw new UnsafeUrlError("too many redirects");
}
