/**
 * The backend's job callback as the Worker receives it: signed with the shared protocol
 * (packages/wire/src/protocol.ts, as the backend signs it), body checked with its schema.
 */
import { describe, expect, it } from "vitest";
import {
  callbackHeaders,
  CALLBACK_MAX_SKEW_MS,
  CALLBACK_SIGNATURE_HEADER,
  CALLBACK_TIMESTAMP_HEADER,
} from "@media-credits/wire/protocol";
import { call } from "../helpers/api";

const SECRET = "test-backend-secret"; // vitest.workers.config.ts
/** Well-formed, but no job has it: a valid callback is answered `recorded: false`. */
const JOB_ID = `job_${"01JCALLBACKTEST".padEnd(26, "0")}`;

async function post(body: string, headers: Record<string, string>, jobId = JOB_ID) {
  return call(`/internal/jobs/${jobId}/callback`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
}

const payload = (over: Record<string, unknown> = {}) =>
  JSON.stringify({
    jobId: JOB_ID,
    status: "failed",
    error: "ffmpeg exited with code 1",
    durationMs: 310,
    queuedMs: 0,
    ...over,
  });

describe("POST /internal/jobs/:jobId/callback", () => {
  it("accepts a callback signed as the backend signs it, within the clock skew", async () => {
    const body = payload();
    for (const skew of [0, -(CALLBACK_MAX_SKEW_MS - 30_000), CALLBACK_MAX_SKEW_MS - 30_000]) {
      const res = await post(body, await callbackHeaders(SECRET, body, Date.now() + skew));
      expect(res.status, String(skew)).toBe(200);
      expect(await res.json()).toEqual({ recorded: false });
    }
  });

  it("refuses unsigned, tampered, foreign and old callbacks with 401", async () => {
    const body = payload();
    const headers = await callbackHeaders(SECRET, body);
    const cases: [string, string, Record<string, string>][] = [
      ["unsigned", body, {}],
      ["no timestamp", body, { [CALLBACK_SIGNATURE_HEADER]: headers[CALLBACK_SIGNATURE_HEADER]! }],
      ["tampered body", payload({ status: "completed" }), headers],
      ["another secret", body, await callbackHeaders("another-secret", body)],
      ["6 minutes old", body, await callbackHeaders(SECRET, body, Date.now() - CALLBACK_MAX_SKEW_MS - 60_000)],
      ["6 minutes ahead", body, await callbackHeaders(SECRET, body, Date.now() + CALLBACK_MAX_SKEW_MS + 60_000)],
    ];
    for (const [name, sentBody, sentHeaders] of cases) {
      const res = await post(sentBody, sentHeaders);
      expect(res.status, name).toBe(401);
      await res.body?.cancel();
    }
    expect(Object.keys(headers)).toEqual([CALLBACK_TIMESTAMP_HEADER, CALLBACK_SIGNATURE_HEADER]);
  });

  it("refuses a signed body that breaks the protocol, or names another job, with 400", async () => {
    for (const body of [
      payload({ status: "done" }),
      payload({ error: "x".repeat(4001) }),
      payload({ jobId: `job_${"01JOTHER".padEnd(26, "0")}` }),
      "not json",
    ]) {
      const res = await post(body, await callbackHeaders(SECRET, body));
      expect(res.status, body.slice(0, 60)).toBe(400);
      await res.body?.cancel();
    }
  });
});
