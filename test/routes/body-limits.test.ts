/**
 * No body is read before it is bounded: every route that does not stream a file refuses a body
 * over its limit from Content-Length, or by counting the stream, before any handler parses it or
 * checks its signature. Each case sends 20 MB from a stream that counts what the Worker pulled.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BASE, call } from "../helpers/api";
import { fetchAt } from "../helpers/mcp";
import {
  bodyLimitFor,
  MAX_JSON_BODY_BYTES,
  MAX_PAGE_FORM_BYTES,
  MAX_SMALL_BODY_BYTES,
  MAX_STRIPE_EVENT_BYTES,
} from "../../src/lib/body-limit";

const MB = 1_000_000;
const CHUNK = 64 * 1024;

/** A 20 MB body that records how much of it was read. */
function countedBody(total = 20 * MB) {
  const state = { pulled: 0 };
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (state.pulled >= total) return controller.close();
      state.pulled += CHUNK;
      controller.enqueue(new Uint8Array(CHUNK).fill(0x61));
    },
  });
  return { stream, state };
}

const routes: [method: string, path: string, headers: Record<string, string>][] = [
  ["POST", "/app/login", { "content-type": "application/x-www-form-urlencoded", origin: BASE }],
  ["POST", "/app/signup", { "content-type": "multipart/form-data; boundary=x", origin: BASE }],
  ["POST", "/app/reset", { "content-type": "text/plain", origin: BASE }],
  ["POST", "/review/some-token", { "content-type": "application/x-www-form-urlencoded", origin: BASE }],
  [
    "POST",
    "/internal/jobs/job_x/callback",
    { "content-type": "application/json", "x-backend-timestamp": "1", "x-backend-signature": "sha256=00" },
  ],
  ["POST", "/api/webhooks/stripe", { "content-type": "application/json", "stripe-signature": "t=1,v1=00" }],
  ["POST", "/api/integrations/engagement", { "content-type": "application/json" }],
  ["POST", "/oauth/register", { "content-type": "application/json" }],
  ["POST", "/oauth/token", { "content-type": "application/x-www-form-urlencoded" }],
  ["POST", "/api/admin/accounts", { "content-type": "application/json" }],
];

describe("request bodies", () => {
  it("bounds every route by what it takes, and leaves the file routes to stream", () => {
    expect(bodyLimitFor("POST", "/app/login")).toBe(MAX_PAGE_FORM_BYTES);
    expect(bodyLimitFor("POST", "/internal/jobs/job_x/callback")).toBe(MAX_SMALL_BODY_BYTES);
    expect(bodyLimitFor("POST", "/api/webhooks/stripe")).toBe(MAX_STRIPE_EVENT_BYTES);
    expect(bodyLimitFor("POST", "/api/v1/trim")).toBe(MAX_JSON_BODY_BYTES);
    for (const [method, path] of [
      ["POST", "/api/v1/uploads"],
      ["PUT", "/api/v1/uploads/multipart/upl_x/parts/3"],
      ["POST", "/upload/tok"],
      ["POST", "/app/voice"],
      ["PUT", "/internal/media/tok"],
    ]) {
      expect(bodyLimitFor(method!, path!, "multipart/form-data; boundary=x"), `${method} ${path}`).toBeNull();
    }
  });

  for (const [method, path, headers] of routes) {
    it(`refuses 20 MB on ${method} ${path} with 413, reading at most its limit`, async () => {
      const limit = bodyLimitFor(method, path)!;
      // Stated by Content-Length: refused before a byte is read.
      const stated = countedBody();
      const declared = await call(path, {
        method,
        headers: { ...headers, "content-length": String(20 * MB), "cf-connecting-ip": "198.51.100.7" },
        body: stated.stream,
        duplex: "half",
      } as RequestInit);
      expect(declared.status).toBe(413);
      expect(stated.state.pulled).toBeLessThanOrEqual(CHUNK * 4);
      // Streamed without a length: counted, and dropped once past the limit.
      const streamed = countedBody();
      const counted = await call(path, {
        method,
        headers: { ...headers, "cf-connecting-ip": "198.51.100.8" },
        body: streamed.stream,
        duplex: "half",
      } as RequestInit);
      expect(counted.status).toBe(413);
      expect(streamed.state.pulled).toBeLessThanOrEqual(limit + CHUNK * 4);
      const body = (await counted.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe("invalid_request");
      expect(body.error.message).toMatch(/^The request body is larger than \d+ (KiB|MiB)\.$/);
    });
  }

  it("reads nothing of a connector call before its token is checked", async () => {
    const body = countedBody();
    const response = await fetchAt("/api/mcp", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer not-a-token" },
      body: body.stream,
      duplex: "half",
    } as RequestInit);
    expect(response.status).toBe(401);
    expect(body.state.pulled).toBeLessThanOrEqual(CHUNK * 4);
  });

  it("bounds a JSON body to the upload route, which streams only multipart files", () => {
    expect(bodyLimitFor("POST", "/api/v1/uploads", "application/json")).toBe(MAX_JSON_BODY_BYTES);
    expect(bodyLimitFor("POST", "/api/v1/uploads", "multipart/form-data; boundary=x")).toBeNull();
    expect(bodyLimitFor("POST", "/app/voice", "application/x-www-form-urlencoded")).toBe(MAX_PAGE_FORM_BYTES);
  });

  it("changes nothing on a refused sign-up", async () => {
    const email = `bounded-${Date.now()}@example.com`;
    const form = new URLSearchParams({
      email,
      password: "a long enough password",
      pad: "x".repeat(MAX_PAGE_FORM_BYTES),
    });
    const response = await call("/app/signup", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: BASE },
      body: form,
    });
    expect(response.status).toBe(413);
    expect(await env.DB.prepare("SELECT 1 FROM accounts WHERE email = ?").bind(email).first()).toBeNull();
  });
});
