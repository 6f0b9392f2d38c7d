/**
 * Resumable uploads through the Worker (real D1 and R2 multipart emulation): a 40 MB WAV in
 * three parts, one of them dropped and sent later and one sent twice, assembled byte for byte
 * and probed; refusals that store nothing; abort and expiry.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { balanceOf, call, expectError, newAccount, postJson, type TestAccount } from "../helpers/api";
import { runMaintenance } from "../../src/services/platform/maintenance";
import { RESUMABLE_PART_SIZE } from "../../src/services/media-jobs/resumable-uploads";
import { makeWav } from "../helpers/audio-checks";

async function sha256(data: ArrayBuffer | Uint8Array): Promise<string> {
  return [...new Uint8Array(await crypto.subtle.digest("SHA-256", data))]
    .map((b) => b.toString(16).padStart(2, "0"))
    .join("");
}

interface Session {
  uploadId: string;
  partSize: number;
  partCount: number;
  size: number;
  filename: string;
  expiresAt: string;
}

async function open(account: TestAccount, body: unknown): Promise<Session> {
  const response = await postJson("/api/v1/uploads/multipart", body, account.auth);
  const json = (await response.json()) as Session;
  expect(response.status, JSON.stringify(json)).toBe(200);
  return json;
}

function putPart(
  account: TestAccount,
  uploadId: string,
  partNumber: number | string,
  body: BodyInit | null,
  headers: Record<string, string> = {},
) {
  return call(`/api/v1/uploads/multipart/${uploadId}/parts/${partNumber}`, {
    method: "PUT",
    headers: { ...account.auth, ...headers },
    body,
  });
}

const partOf = (file: Uint8Array, session: Session, n: number) =>
  file.subarray((n - 1) * session.partSize, Math.min(file.length, n * session.partSize));

async function receivedParts(account: TestAccount, uploadId: string): Promise<number[]> {
  const response = await call(`/api/v1/uploads/multipart/${uploadId}`, { headers: account.auth });
  expect(response.status).toBe(200);
  return ((await response.json()) as { parts: { partNumber: number }[] }).parts.map((part) => part.partNumber);
}

async function sessionRows(accountId: string): Promise<number> {
  return (await env.DB.prepare("SELECT COUNT(*) AS n FROM upload_sessions WHERE account_id = ?")
    .bind(accountId)
    .first<{ n: number }>())!.n;
}

async function objects(accountId: string): Promise<number> {
  return (await env.MEDIA.list({ prefix: `uploads/${accountId}/` })).objects.length;
}

describe("resumable uploads", () => {
  const seconds = 210;
  const file = makeWav({ seconds, sampleRate: 48_000, channels: 2, frequency: 440 }); // 40.3 MB: three parts of 16 MiB, 16 MiB and the rest

  it("assembles a file sent in parts, one dropped and sent later, one sent twice, and probes it", async () => {
    const account = await newAccount({ credits: 10 });
    const session = await open(account, { filename: "long tone.wav", size: file.length, contentType: "audio/wav" });
    expect(session).toMatchObject({
      uploadId: expect.stringMatching(/^upl_/),
      filename: "long_tone.wav",
      size: file.length,
      partSize: RESUMABLE_PART_SIZE,
      partCount: 3,
    });
    expect(Date.parse(session.expiresAt) - Date.now()).toBeGreaterThan(23 * 3600 * 1000);

    // Part 1 is "lost" on the way; 3 and 2 arrive, in that order.
    for (const n of [3, 2]) {
      const response = await putPart(account, session.uploadId, n, partOf(file, session, n));
      const body = (await response.json()) as { partNumber: number; size: number };
      expect(response.status, JSON.stringify(body)).toBe(200);
      expect(body).toMatchObject({ partNumber: n, size: partOf(file, session, n).length, partCount: 3 });
    }
    expect(await receivedParts(account, session.uploadId)).toEqual([2, 3]);
    await expectError(
      await call(`/api/v1/uploads/multipart/${session.uploadId}/complete`, { method: "POST", headers: account.auth }),
      400,
      "invalid_request",
      /1 of 3 parts not received yet \(1\)/,
    );

    // The client resumes: it sends what the listing lacks, then part 1 again (idempotent).
    for (let i = 0; i < 2; i++)
      expect((await putPart(account, session.uploadId, 1, partOf(file, session, 1))).status).toBe(200);
    expect(await receivedParts(account, session.uploadId)).toEqual([1, 2, 3]);

    const completed = await call(`/api/v1/uploads/multipart/${session.uploadId}/complete`, {
      method: "POST",
      headers: account.auth,
    });
    const result = (await completed.json()) as { uploadId: string; durationSeconds: number; expiresIn: number };
    expect(completed.status, JSON.stringify(result)).toBe(200);
    expect(result).toEqual({ uploadId: session.uploadId, durationSeconds: seconds, expiresIn: 10800 });

    const stored = await env.MEDIA.get(`uploads/${account.accountId}/${session.uploadId}`);
    expect(stored!.size).toBe(file.length);
    expect(await sha256(await stored!.arrayBuffer())).toBe(await sha256(file));
    const row = await env.DB.prepare("SELECT kind, container, filename, size_bytes FROM uploads WHERE id = ?")
      .bind(session.uploadId)
      .first();
    expect(row).toEqual({ kind: "audio", container: "wav", filename: "long_tone.wav", size_bytes: file.length });

    // Completing again answers the same upload; the session itself is gone.
    const again = await call(`/api/v1/uploads/multipart/${session.uploadId}/complete`, {
      method: "POST",
      headers: account.auth,
    });
    expect(again.status).toBe(200);
    expect(((await again.json()) as { uploadId: string }).uploadId).toBe(session.uploadId);
    await expectError(
      await call(`/api/v1/uploads/multipart/${session.uploadId}`, { headers: account.auth }),
      404,
      "not_found",
    );
    expect(await sessionRows(account.accountId)).toBe(0);

    // The upload is a normal one: a tool takes it (and uploads cost nothing).
    expect(await balanceOf(account)).toBe(10);
    const job = await postJson("/api/v1/trim", { uploadId: session.uploadId, start: 200, end: 201 }, account.auth);
    expect(job.status, await job.clone().text()).toBe(200);
    expect(await balanceOf(account)).toBe(9);
  });

  it("refuses a part of the wrong length or number, and stores nothing for it", async () => {
    const account = await newAccount();
    const session = await open(account, { filename: "a.wav", size: file.length });
    const part1 = partOf(file, session, 1);
    await expectError(
      await putPart(account, session.uploadId, 1, part1.subarray(1)),
      400,
      "invalid_request",
      new RegExp(`exactly ${session.partSize} bytes \\(Content-Length says ${session.partSize - 1}\\)`),
    );
    // No Content-Length (a stream): counted as it arrives.
    const short = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(part1.subarray(0, 1024 * 1024));
        controller.close();
      },
    });
    await expectError(await putPart(account, session.uploadId, 1, short), 400, "invalid_request", /shorter or longer/);
    // The last part is the remainder, not a full part.
    await expectError(
      await putPart(account, session.uploadId, 3, part1),
      400,
      "invalid_request",
      /part 3 must be exactly/,
    );
    for (const n of ["0", "4", "99999"])
      await expectError(
        await putPart(account, session.uploadId, n, part1),
        400,
        "invalid_request",
        /partNumber: must be an integer from 1 to 3/,
      );
    for (const n of ["abc", "-1", "1.5", "123456"])
      await expectError(await putPart(account, session.uploadId, n, part1), 400, "invalid_request", /partNumber/);
    await expectError(
      await putPart(account, session.uploadId, 1, part1, { "content-length": "12x" }),
      400,
      "invalid_request",
    );
    expect(await receivedParts(account, session.uploadId)).toEqual([]);
  });

  it("validates the opening request by field and stores nothing", async () => {
    const account = await newAccount();
    const cases: [unknown, RegExp][] = [
      [{ filename: "a.mp4" }, /size/],
      [{ filename: "a.mp4", size: 0 }, /size/],
      [{ filename: "a.mp4", size: 5_000_000_001 }, /size/],
      [{ filename: "a.mp4", size: 1.5 }, /size/],
      [{ filename: "a.mp4", size: "100" }, /size/],
      [{ size: 100 }, /filename/],
      [{ filename: "", size: 100 }, /filename/],
      [{ filename: "x".repeat(256), size: 100 }, /filename/],
      [{ filename: "a.mp4", size: 100, contentType: "x".repeat(256) }, /contentType/],
      [[1, 2], /JSON object/],
    ];
    for (const [body, message] of cases)
      await expectError(
        await postJson("/api/v1/uploads/multipart", body, account.auth),
        400,
        "invalid_request",
        message,
      );
    expect(await sessionRows(account.accountId)).toBe(0);
    await expectError(
      await postJson("/api/v1/uploads/multipart", { filename: "a.mp4", size: 100 }),
      401,
      "unauthorized",
    );
  });

  it("keeps sessions to their account and caps ids", async () => {
    const owner = await newAccount();
    const other = await newAccount();
    const session = await open(owner, { filename: "a.wav", size: 100 });
    await expectError(
      await call(`/api/v1/uploads/multipart/${session.uploadId}`, { headers: other.auth }),
      404,
      "not_found",
    );
    await expectError(await putPart(other, session.uploadId, 1, new Uint8Array(100)), 404, "not_found");
    await expectError(
      await call(`/api/v1/uploads/multipart/${session.uploadId}/complete`, { method: "POST", headers: other.auth }),
      404,
      "not_found",
    );
    await expectError(
      await call(`/api/v1/uploads/multipart/${session.uploadId}`, { method: "DELETE", headers: other.auth }),
      404,
      "not_found",
    );
    await expectError(await call(`/api/v1/uploads/multipart/upl_unknown`, { headers: owner.auth }), 404, "not_found");
    const long = "u".repeat(65);
    await expectError(
      await call(`/api/v1/uploads/multipart/${long}`, { headers: owner.auth }),
      400,
      "invalid_request",
      /uploadId/,
    );
    await expectError(await putPart(owner, long, 1, new Uint8Array(100)), 400, "invalid_request", /uploadId/);
    expect(await receivedParts(owner, session.uploadId)).toEqual([]);
  });

  it("refuses media it cannot use at completion and leaves nothing behind", async () => {
    const account = await newAccount();
    const junk = crypto.getRandomValues(new Uint8Array(65536));
    const session = await open(account, { filename: "fake.mp4", size: junk.length });
    expect(session.partCount).toBe(1);
    expect((await putPart(account, session.uploadId, 1, junk)).status).toBe(200);
    await expectError(
      await call(`/api/v1/uploads/multipart/${session.uploadId}/complete`, { method: "POST", headers: account.auth }),
      400,
      "invalid_request",
      /^file: /,
    );
    expect(await objects(account.accountId)).toBe(0);
    expect(await sessionRows(account.accountId)).toBe(0);
    expect(
      (await env.DB.prepare("SELECT COUNT(*) AS n FROM uploads WHERE account_id = ?")
        .bind(account.accountId)
        .first<{ n: number }>())!.n,
    ).toBe(0);
  });

  it("aborts on request, and after a day by maintenance; at most 20 open at once", async () => {
    const account = await newAccount();
    const first = await open(account, { filename: "a.wav", size: 1000 });
    expect((await putPart(account, first.uploadId, 1, new Uint8Array(1000))).status).toBe(200);
    const aborted = await call(`/api/v1/uploads/multipart/${first.uploadId}`, {
      method: "DELETE",
      headers: account.auth,
    });
    expect(await aborted.json()).toEqual({ uploadId: first.uploadId, status: "aborted" });
    await expectError(await putPart(account, first.uploadId, 1, new Uint8Array(1000)), 404, "not_found");
    await expectError(
      await call(`/api/v1/uploads/multipart/${first.uploadId}/complete`, { method: "POST", headers: account.auth }),
      404,
      "not_found",
    );

    for (let i = 0; i < 20; i++) await open(account, { filename: `f${i}.wav`, size: 1000 });
    await expectError(
      await postJson("/api/v1/uploads/multipart", { filename: "more.wav", size: 1000 }, account.auth),
      400,
      "invalid_request",
      /Too many resumable uploads in progress \(20\)/,
    );

    const summary = await runMaintenance(env.DB, env.MEDIA, Date.now() + 25 * 3600 * 1000);
    expect(summary.resumableUploads).toBeGreaterThanOrEqual(20);
    expect(await sessionRows(account.accountId)).toBe(0);
    await open(account, { filename: "after.wav", size: 1000 });
    expect(await objects(account.accountId)).toBe(0);
  });
});
