/**
 * A resumable upload's refused parts through `wrangler dev`: the 400 must reach the client also
 * when the refused body is large. Cancelled unread, a 10-16 MB body made the local runtime drop
 * the connection about half the time, and the client got a plain-text 500 instead.
 */
import { beforeAll, describe, expect, inject, it } from "vitest";
import { newClient, type Client } from "./client";

const MiB = 1024 * 1024;
let client: Client;

beforeAll(async () => {
  client = await newClient(inject("e2eMainUrl"));
});

async function expectRefused(response: Response, message: RegExp) {
  expect(response.status).toBe(400);
  expect(response.headers.get("content-type")).toContain("application/json");
  const body = (await response.json()) as { error: { code: string; message: string } };
  expect(body.error.code).toBe("invalid_request");
  expect(body.error.message).toMatch(message);
}

/** A body without Content-Length (chunked), as a client streaming a file sends it. */
function chunked(bytes: number): ReadableStream<Uint8Array> {
  let left = bytes;
  return new ReadableStream({
    pull(controller) {
      const size = Math.min(MiB, left);
      left -= size;
      controller.enqueue(new Uint8Array(size));
      if (left === 0) controller.close();
    },
  });
}

describe("resumable upload parts refused with a large body", () => {
  it("answer 400 in the error shape every time, and store nothing", async () => {
    const opened = await fetch(`${client.base}/api/v1/uploads/multipart`, {
      method: "POST",
      headers: { ...client.auth, "content-type": "application/json" },
      body: JSON.stringify({ filename: "big.mp4", size: 40 * MiB }),
    });
    expect(opened.status).toBe(200);
    const { uploadId, partSize } = (await opened.json()) as { uploadId: string; partSize: number };
    const part = (n: number | string, body: BodyInit) =>
      fetch(`${client.base}/api/v1/uploads/multipart/${uploadId}/parts/${n}`, {
        method: "PUT",
        headers: client.auth,
        body,
        duplex: "half",
      } as RequestInit);
    for (let round = 0; round < 3; round++) {
      await expectRefused(
        await part(1, new Uint8Array(10_000_000)),
        /must be exactly 16777216 bytes \(Content-Length says 10000000\)/,
      );
      await expectRefused(await part(0, new Uint8Array(partSize)), /partNumber/);
      await expectRefused(await part(99, new Uint8Array(partSize)), /partNumber/);
      await expectRefused(
        await part(3, chunked(12 * MiB)),
        /part 3 must be exactly 8388608 bytes; the body was shorter or longer/,
      );
    }
    const session = (await (
      await fetch(`${client.base}/api/v1/uploads/multipart/${uploadId}`, { headers: client.auth })
    ).json()) as { parts: unknown[] };
    expect(session.parts).toEqual([]);
  });
});
