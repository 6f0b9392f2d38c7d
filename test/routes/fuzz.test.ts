/**
 * Fuzzing every surface through the Worker's real fetch handler: each operation of the OpenAPI
 * document (with hostile path ids, query values, raw bodies, content types and a hostile value
 * for each schema field), the upload endpoint with broken multipart and lying media, the
 * callbacks and webhooks, downloads with bad ranges, capability pages and the developer area's
 * forms. A seeded generator makes the corpus reproducible (FUZZ_SEED, FUZZ_PER_OPERATION in
 * vitest.workers.config.ts bindings). Afterwards: no 5xx, every API error in the contract's
 * envelope with a short message, and nothing charged or stored for the fuzzed account.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import {
  ADMIN,
  balanceOf,
  call,
  expectLedgerConsistent,
  fixtureBytes,
  newAccount,
  waitForJob,
  type TestAccount,
} from "../helpers/api";
import { signedUpClient } from "../helpers/web";

/** mulberry32: small, seedable, good enough to pick cases. */
function generator(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]! };
}

const nested = (depth: number): unknown => (depth === 0 ? "leaf" : { a: nested(depth - 1) });

const hostileStrings = [
  "",
  " ",
  "\u0000",
  "a".repeat(70_000),
  "🎬".repeat(2_000),
  "\u202e\u0644\u0639\u202c",
  "\ud800",
  "../../../etc/passwd",
  "<script>alert(1)</script>",
  "' OR 1=1 --",
  "%00%ff%2e%2e",
  `upl_${"x".repeat(60)}`,
  "\n\r\t",
  "NaN",
  "-0",
  "1e309",
  "job_00000000000000000000000000",
  "javascript:alert(1)",
  "http://127.0.0.1:1/",
  "file:///etc/passwd",
];
const hostileValues: unknown[] = [
  ...hostileStrings,
  0,
  -1,
  1.5,
  1e308,
  -1e308,
  Number.MAX_SAFE_INTEGER + 2,
  true,
  false,
  null,
  [],
  {},
  [1, 2, 3],
  { $ne: null },
  nested(200),
  Array.from({ length: 10_000 }, () => "a"),
  ["upl_a", 5, null],
];
const rawBodies = [
  "",
  "{",
  "}",
  '{"a":',
  "null",
  "[]",
  "[{}]",
  '"x"',
  "123",
  "true",
  '{"__proto__":{"polluted":1}}',
  '{"constructor":{"prototype":{"x":1}}}',
  "\ufeff{}",
  "[".repeat(5_000),
  '{"a":'.repeat(3_000),
  "{'single': 1}",
  '{"uploadId":"a","uploadId":5}',
  `{"text":"${"x".repeat(2_000_000)}"}`,
  "\u0000\u0001\u0002\u00ff",
];
const contentTypes = [
  "application/json",
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data",
  "multipart/form-data; boundary=xyz",
  "application/json; charset=utf-16",
  "",
];
const hostileIds = [
  "x",
  "x".repeat(5_000),
  "%2e%2e%2f%2e%2e",
  "%F0%9F%8E%AC",
  "upl_0",
  "job_'%20OR%20'1'%3D'1",
  "%00",
  "%E0%A4%A",
];

/** encodeURIComponent, with a lone surrogate sent as its (invalid) UTF-8 bytes. */
function encodeQuery(value: string): string {
  try {
    return encodeURIComponent(value);
  } catch {
    return "%ED%A0%80";
  }
}

interface Operation {
  method: string;
  path: string;
  fields: string[];
  query: string[];
  hasBody: boolean;
}

interface Tally {
  /** The body of the last answer. */
  lastBody: string;
  requests: number;
  byStatus: Map<number, number>;
  failures: string[];
}

function operationsOf(document: {
  paths: Record<
    string,
    Record<
      string,
      {
        requestBody?: {
          content?: Record<string, { schema?: { properties?: Record<string, unknown>; $ref?: string } }>;
        };
        parameters?: { in: string; name: string }[];
      }
    >
  >;
  components?: { schemas?: Record<string, { properties?: Record<string, unknown> }> };
}): Operation[] {
  const operations: Operation[] = [];
  for (const [path, methods] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      if (!["get", "post", "put", "patch", "delete"].includes(method)) continue;
      let schema = operation.requestBody?.content?.["application/json"]?.schema;
      if (schema?.$ref) schema = document.components?.schemas?.[schema.$ref.split("/").pop()!];
      operations.push({
        method: method.toUpperCase(),
        path,
        fields: Object.keys(schema?.properties ?? {}),
        query: (operation.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name),
        hasBody: operation.requestBody !== undefined,
      });
    }
  }
  return operations;
}

/**
 * A fresh key every 900 calls on a Scale account (1000 requests per key and 3000 per account every
 * 10 s): the rate limits stay out of the way (their own test covers them). An account holds at most
 * 20 unrevoked keys: past that, the last one goes on (the long campaign, npm run fuzz).
 */
class Keys {
  private used = 0;
  private current: string;
  constructor(private readonly account: TestAccount) {
    this.current = account.apiKey;
  }
  async next(): Promise<string> {
    if (++this.used % 900 === 0) {
      const response = await call(`/api/admin/accounts/${this.account.accountId}/keys`, {
        method: "POST",
        headers: ADMIN,
      });
      if (response.ok) this.current = ((await response.json()) as { apiKey: string }).apiKey;
      else await response.body?.cancel();
    }
    return this.current;
  }
}

let addressCounter = 0;
const nextAddress = () => `2001:db8:f::${(++addressCounter).toString(16)}`;

async function send(
  tally: Tally,
  label: string,
  path: string,
  init: RequestInit,
  jsonErrors: boolean,
): Promise<Response> {
  const headers = new Headers(init.headers);
  if (!headers.has("cf-connecting-ip")) headers.set("cf-connecting-ip", nextAddress());
  const response = await call(path, { ...init, headers, redirect: "manual" });
  tally.requests++;
  tally.byStatus.set(response.status, (tally.byStatus.get(response.status) ?? 0) + 1);
  const text = await response.text();
  tally.lastBody = text;
  const where = `${label} ${init.method ?? "GET"} ${path.slice(0, 120)} -> ${response.status}`;
  if (response.status >= 500) tally.failures.push(`${where}: ${text.slice(0, 200)}`);
  else if (jsonErrors && response.status >= 400) {
    let body: { error?: { code?: unknown; message?: unknown } } | undefined;
    try {
      body = JSON.parse(text);
    } catch {
      tally.failures.push(`${where}: not JSON: ${text.slice(0, 120)}`);
      return response;
    }
    if (typeof body?.error?.code !== "string" || typeof body.error.message !== "string")
      tally.failures.push(`${where}: not the error envelope`);
    else if (body.error.message.length > 1_000)
      tally.failures.push(`${where}: message of ${body.error.message.length} characters`);
  }
  return response;
}

const settings = env as unknown as { FUZZ_SEED?: string; FUZZ_PER_OPERATION?: string };
const seed = Number(settings.FUZZ_SEED ?? 20261123);
const perOperation = Number(settings.FUZZ_PER_OPERATION ?? 40);

describe("fuzzing", () => {
  it("every /api operation: zero 5xx, errors in the envelope, nothing charged or stored", async () => {
    const random = generator(seed);
    const account = await newAccount({ credits: 1_000, plan: "scale" });
    const before = await balanceOf(account);
    const keys = new Keys(account);
    // A job is read with the key that created it (another key gets 404).
    const accepted: { jobId: string; creditsUsed: number; authorization: string }[] = [];
    const tally: Tally = { lastBody: "", requests: 0, byStatus: new Map(), failures: [] };
    // The public document (/api/v1) and the operator's (/api/admin, behind the admin token).
    const publicDocument = await (await call("/api/v1/openapi.json")).json();
    const adminDocument = await (await call("/api/admin/openapi.json", { headers: ADMIN })).json();
    const operations = [...operationsOf(publicDocument as never), ...operationsOf(adminDocument as never)];
    expect(operations.length).toBeGreaterThan(25);
    expect(operations.filter((operation) => operation.path.startsWith("/api/admin/")).length).toBeGreaterThanOrEqual(7);

    for (const operation of operations) {
      const cases: (() => { path: string; init: RequestInit })[] = [];
      const admin = operation.path.startsWith("/api/admin");
      const auth = async () => (admin ? ADMIN.authorization : `Bearer ${await keys.next()}`);
      const pathWith = (id: () => string) => operation.path.replace(/\{[^}]+\}/g, () => id());
      // Ids of other accounts' or unknown objects only: the fuzzed account owns nothing.
      const somePath = () => pathWith(() => random.pick(hostileIds));
      for (const id of hostileIds) cases.push(() => ({ path: pathWith(() => id), init: { method: operation.method } }));
      for (const name of operation.query) {
        for (const value of hostileStrings.slice(0, 12))
          cases.push(() => ({
            path: `${somePath()}?${name}=${encodeQuery(value)}`,
            init: { method: operation.method },
          }));
      }
      if (operation.hasBody || operation.method !== "GET") {
        for (const body of rawBodies) {
          cases.push(() => ({
            path: somePath(),
            init: { method: operation.method, headers: { "content-type": random.pick(contentTypes) }, body },
          }));
        }
        for (const field of operation.fields) {
          for (const value of hostileValues) {
            cases.push(() => ({
              path: somePath(),
              init: {
                method: operation.method,
                headers: { "content-type": "application/json" },
                body: JSON.stringify({ [field]: value }),
              },
            }));
          }
        }
        // Several fields wrong at once.
        for (let i = 0; i < 10 && operation.fields.length > 1; i++) {
          const body = Object.fromEntries(operation.fields.map((field) => [field, random.pick(hostileValues)]));
          cases.push(() => ({
            path: somePath(),
            init: {
              method: operation.method,
              headers: { "content-type": "application/json" },
              body: JSON.stringify(body),
            },
          }));
        }
      }
      // Shuffled and capped per operation (FUZZ_PER_OPERATION) to keep CI short.
      const chosen = cases
        .map((make) => ({ make, order: random.next() }))
        .sort((a, b) => a.order - b.order)
        .slice(0, perOperation);
      for (const { make } of chosen) {
        const { path, init } = make();
        const headers = new Headers(init.headers);
        headers.set("authorization", await auth());
        const response = await send(tally, "api", path, { ...init, headers }, true);
        // Some fuzzed values are valid input (any text is something to speak): those jobs are counted.
        if (response.status === 200 && tally.lastBody.includes('"jobId"')) {
          accepted.push({
            ...(JSON.parse(tally.lastBody) as { jobId: string; creditsUsed: number }),
            authorization: headers.get("authorization")!,
          });
        }
      }
    }
    // Without a key, and with a malformed one: 401 in the envelope whatever the body.
    for (const authorization of [
      "",
      "Bearer",
      "Bearer mk_live_",
      `Bearer mk_live_${"a".repeat(10_000)}`,
      "Basic Zm9vOmJhcg==",
      "Bearer 🎬",
    ]) {
      await send(
        tally,
        "auth",
        "/api/v1/convert",
        { method: "POST", headers: { authorization, "content-type": "application/json" }, body: "{" },
        true,
      );
    }

    console.log(
      `fuzz /api: ${tally.requests} requests over ${operations.length} operations (seed ${seed}), ${accepted.length} accepted tool calls; statuses ${JSON.stringify(Object.fromEntries(tally.byStatus))}`,
    );
    expect(tally.failures).toEqual([]);
    // Refused calls changed nothing: the only jobs are the accepted calls', and the balance is
    // what their completed jobs cost (failed ones are refunded).
    let spent = 0;
    for (const { jobId, creditsUsed, authorization } of accepted) {
      const job = await waitForJob({ ...account, auth: { authorization } }, jobId);
      if (job.status === "completed") spent += creditsUsed;
    }
    expect(await balanceOf(account)).toBe(before - spent);
    await expectLedgerConsistent(account);
    const jobs = await env.DB.prepare("SELECT COUNT(*) AS n FROM jobs WHERE account_id = ?")
      .bind(account.accountId)
      .first<{ n: number }>();
    const uploads = await env.DB.prepare("SELECT COUNT(*) AS n FROM uploads WHERE account_id = ?")
      .bind(account.accountId)
      .first<{ n: number }>();
    expect({ jobs: jobs!.n, uploads: uploads!.n }).toEqual({ jobs: accepted.length, uploads: 0 });
    expect((await env.MEDIA.list({ prefix: `uploads/${account.accountId}/` })).objects).toHaveLength(0);
  });

  it("uploads: broken multipart and lying media are refused with a 400 and store nothing", async () => {
    const account = await newAccount({ credits: 100 });
    const tally: Tally = { lastBody: "", requests: 0, byStatus: new Map(), failures: [] };
    const clip = await fixtureBytes("clip.mp4");
    const png = await fixtureBytes("logo.png");
    const text = new TextEncoder();
    // An MP4 whose movie header claims 100 hours: the probe must not believe a 4-hour-plus file.
    const claimsHours = clip.slice();
    const mvhd = Buffer.from(claimsHours).indexOf("mvhd");
    const view = new DataView(claimsHours.buffer);
    const timescale = view.getUint32(mvhd + 4 + 12);
    view.setUint32(mvhd + 4 + 16, Math.min(0xfffffffe, timescale * 360_000));
    const files: [string, Uint8Array][] = [
      ["notes.mp4", text.encode("this is not a video")],
      ["clip.mp3", clip.slice(0, 64)],
      ["half.mp4", clip.slice(0, clip.length >> 1)],
      ["logo.mp4", png.slice(0, png.length >> 1)], // a truncated PNG under a video's name
      ["empty.wav", new Uint8Array()],
      ["hours.mp4", claimsHours],
      ["zeros.mkv", new Uint8Array(100_000)],
      [`${"🎬".repeat(300)}.mp4`, text.encode("x")],
    ];
    for (const [name, bytes] of files) {
      const form = new FormData();
      form.append("file", new File([bytes], name));
      const response = await send(
        tally,
        "upload",
        "/api/v1/uploads",
        { method: "POST", headers: account.auth, body: form },
        true,
      );
      expect(response.status, name).toBe(400);
    }
    const boundary = "fuzzboundary";
    const multipartBodies = [
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.mp4"\r\n\r\nabc`, // never closed
      `--${boundary}--\r\n`, // no parts
      `--${boundary}\r\nContent-Disposition: form-data; name="other"\r\n\r\nvalue\r\n--${boundary}--\r\n`, // no file field
      `--wrong\r\nContent-Disposition: form-data; name="file"; filename="a.mp4"\r\n\r\nabc\r\n--wrong--\r\n`,
      `--${boundary}\r\nContent-Disposition: form-data; name="file"\r\n\r\nno filename\r\n--${boundary}--\r\n`,
      `--${boundary}\r\n${"X-Header: y\r\n".repeat(2_000)}\r\nabc\r\n--${boundary}--\r\n`,
      "garbage",
    ];
    for (const body of multipartBodies) {
      for (const type of [
        `multipart/form-data; boundary=${boundary}`,
        "multipart/form-data",
        "multipart/mixed; boundary=fuzzboundary",
      ]) {
        const response = await send(
          tally,
          "multipart",
          "/api/v1/uploads",
          { method: "POST", headers: { ...account.auth, "content-type": type }, body },
          true,
        );
        expect(response.status, body.slice(0, 40)).toBe(400);
      }
    }
    console.log(
      `fuzz uploads: ${tally.requests} requests; statuses ${JSON.stringify(Object.fromEntries(tally.byStatus))}`,
    );
    expect(tally.failures).toEqual([]);
    expect(await balanceOf(account)).toBe(100);
    expect((await env.MEDIA.list({ prefix: `uploads/${account.accountId}/` })).objects).toHaveLength(0);
  });

  it("callbacks, webhooks, downloads, capability pages and the developer area's forms: zero 5xx", async () => {
    const random = generator(seed + 1);
    const tally: Tally = { lastBody: "", requests: 0, byStatus: new Map(), failures: [] };
    // Header values stay ASCII, as browsers and fetch clients send them.
    const headerValues = ["", "t=1,v1=abc", `v1,${"A".repeat(5_000)}`, "\x7f\x01", "9999999999", "-1", "Bearer x"];
    for (const body of rawBodies) {
      const headers = {
        "content-type": random.pick(contentTypes),
        "stripe-signature": random.pick(headerValues),
        "webhook-timestamp": random.pick(headerValues),
        "webhook-signature": random.pick(headerValues),
        "x-callback-timestamp": random.pick(headerValues),
        "x-callback-signature": random.pick(headerValues),
      };
      await send(tally, "stripe", "/api/webhooks/stripe", { method: "POST", headers, body }, true);
      await send(tally, "engagement", "/api/integrations/engagement", { method: "POST", headers, body }, true);
      await send(
        tally,
        "callback",
        `/internal/jobs/${random.pick(hostileIds)}/callback`,
        { method: "POST", headers, body },
        false,
      );
      await send(
        tally,
        "media-put",
        `/internal/media/${random.pick(hostileIds)}`,
        { method: "PUT", headers, body },
        false,
      );
    }
    for (const id of hostileIds) {
      await send(tally, "media-get", `/internal/media/${id}`, {}, false);
      for (const range of ["bytes=999999999999-", "bytes=-0", "bytes=5-1", "bytes=abc", "bytes=0-1,2-3", "items=0-1"]) {
        await send(tally, "download", `/api/download/${id}`, { headers: { range } }, true);
      }
      await send(tally, "upload-page", `/upload/${id}`, {}, false);
      await send(
        tally,
        "upload-page",
        `/upload/${id}`,
        {
          method: "POST",
          headers: { origin: "http://api.test" },
          body: new URLSearchParams({ url: random.pick(hostileStrings) }),
        },
        false,
      );
      await send(tally, "review", `/review/${id}`, {}, false);
      await send(tally, "review", `/review/${id}/media`, {}, false);
    }
    // Forms, signed in, with the Origin a browser sends (the CSRF check passes; the values do not).
    const { client } = await signedUpClient();
    const forms: [string, string[]][] = [
      ["/app/keys", ["name"]],
      ["/app/keys/KEY/revoke", []],
      ["/app/voice", ["uploadId"]],
      ["/app/billing/checkout", ["offer"]],
      ["/app/billing/plan", ["plan"]],
      ["/app/connected/GRANT/revoke", []],
      ["/app/login", ["email", "password", "next"]],
      ["/app/signup", ["email", "password"]],
      ["/app/reset", ["email"]],
      ["/app/reset/TOKEN", ["password"]],
    ];
    for (const [path, fields] of forms) {
      for (let i = 0; i < 12; i++) {
        const form = new URLSearchParams(fields.map((field) => [field, String(random.pick(hostileValues))]));
        const target = path.replace(/KEY|GRANT|TOKEN/, () => random.pick(hostileIds));
        const response = await client.request(target, {
          method: "POST",
          headers: { origin: client.base, "cf-connecting-ip": nextAddress() },
          body: form,
        });
        tally.requests++;
        tally.byStatus.set(response.status, (tally.byStatus.get(response.status) ?? 0) + 1);
        if (response.status >= 500) tally.failures.push(`form POST ${target.slice(0, 80)} -> ${response.status}`);
        await response.body?.cancel();
      }
    }
    for (const query of ["kind=🎬", "before=abc", `before=${"9".repeat(400)}`, "kind=purchase&before=-1"]) {
      const response = await client.get(`/app/ledger?${query}`);
      tally.requests++;
      if (response.status >= 500) tally.failures.push(`GET /app/ledger?${query} -> ${response.status}`);
      await response.body?.cancel();
    }
    console.log(
      `fuzz other surfaces: ${tally.requests} requests; statuses ${JSON.stringify(Object.fromEntries(tally.byStatus))}`,
    );
    expect(tally.failures).toEqual([]);
  });
});
