/**
 * GET /api/v1/jobs/{id}?wait=N: one request answered when the job ends (the runner wakes it),
 * at once for an ended job, the job as it is when the time is up; a bad `wait` is a 400 that
 * changes nothing. The same wait serves MCP's get_job (test/mcp/tools.test.ts); the time-up case
 * against a job still running on the backend is in test/e2e/backend-path.test.ts.
 */
import { describe, expect, it } from "vitest";
import {
  balanceOf,
  call,
  callTool,
  expectError,
  expectLedgerConsistent,
  newAccount,
  uploadFixture,
} from "../helpers/api";

type Job = {
  jobId: string;
  status: string;
  progress: null;
  result?: { url: string; filename: string };
  error?: string;
};

const read = async (auth: { authorization: string }, jobId: string, query = "") => {
  const response = await call(`/api/v1/jobs/${jobId}${query}`, { headers: auth });
  return { status: response.status, job: (await response.json()) as Job };
};

describe("waiting for a job with GET /api/v1/jobs/{id}?wait", () => {
  it("answers a running job's read when the job completes, with its result", async () => {
    const account = await newAccount({ credits: 100 });
    const clip = await uploadFixture(account, "clip.mp4");
    const started = (await (
      await callTool(account, "extract-audio", { uploadId: clip.uploadId, format: "mp3" })
    ).json()) as { jobId: string };
    const waited = await read(account.auth, started.jobId, "?wait=50");
    expect(waited.status).toBe(200);
    expect(waited.job).toMatchObject({
      jobId: started.jobId,
      status: "completed",
      progress: null,
      result: { filename: "clip.mp3" },
    });
    const download = await call(waited.job.result!.url);
    expect(download.status).toBe(200);
    expect(download.headers.get("content-type")).toBe("audio/mpeg");
    // An ended job is answered at once, the same as without wait.
    const again = await read(account.auth, started.jobId, "?wait=50");
    expect(again.job).toEqual((await read(account.auth, started.jobId)).job);
  });

  it("answers as soon as a waited-for job is cancelled", async () => {
    const account = await newAccount({ credits: 100 });
    const clip = await uploadFixture(account, "clip.mp4");
    const started = (await (await callTool(account, "convert", { uploadId: clip.uploadId, format: "mkv" })).json()) as {
      jobId: string;
    };
    const waiting = read(account.auth, started.jobId, "?wait=50");
    const cancelled = await call(`/api/v1/jobs/${started.jobId}/cancel`, { method: "POST", headers: account.auth });
    // Cancelled while queued, or completed first (the copy is quick): either way the wait ends with the job's end.
    const waited = await waiting;
    expect(waited.status).toBe(200);
    if (cancelled.status === 200)
      expect(waited.job).toMatchObject({
        status: "failed",
        error: "Cancelled at the caller's request; credits refunded.",
      });
    else expect(waited.job.status).toBe("completed");
    await expectLedgerConsistent(account);
  });

  it("refuses a wait that is not a whole number of seconds from 0 to 50, and changes nothing", async () => {
    const account = await newAccount({ credits: 100 });
    const clip = await uploadFixture(account, "clip.mp4");
    const started = (await (await callTool(account, "extract-audio", { uploadId: clip.uploadId })).json()) as {
      jobId: string;
    };
    const before = await balanceOf(account);
    for (const wait of ["51", "-1", "1.5", "soon", "", "%205", "1e1", "0x10"]) {
      await expectError(
        await call(`/api/v1/jobs/${started.jobId}?wait=${wait}`, { headers: account.auth }),
        400,
        "invalid_request",
        /wait/,
      );
    }
    // Another key's job stays hidden, waiting or not.
    const other = await newAccount({ credits: 1 });
    await expectError(await call(`/api/v1/jobs/${started.jobId}?wait=5`, { headers: other.auth }), 404, "not_found");
    expect((await read(account.auth, started.jobId, "?wait=0")).status).toBe(200);
    expect(await balanceOf(account)).toBe(before);
  });

  it("is described in the OpenAPI document as an integer from 0 to 50, never null", async () => {
    const document = (await (await call("/api/v1/openapi.json")).json()) as {
      paths: Record<string, { get: { parameters: { name: string; schema: Record<string, unknown> }[] } }>;
    };
    const wait = document.paths["/api/v1/jobs/{id}"]!.get.parameters.find((parameter) => parameter.name === "wait");
    expect(wait?.schema).toMatchObject({ type: "integer", minimum: 0, maximum: 50 });
  });
});
