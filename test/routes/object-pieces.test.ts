/**
 * objectResponse reads a large object from R2 one bounded piece at a time (src/services/media-jobs/downloads.ts):
 * the bytes and headers are those of one read, and a client that stops early has made storage read
 * at most one piece past what it took. The bucket is the real R2 binding, wrapped only to count reads.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { OBJECT_PIECE_BYTES, objectResponse } from "../../src/services/media-jobs/downloads";

const SIZE = 2 * OBJECT_PIECE_BYTES + 123_457;

/** Bytes whose every position is tellable: a 251-periodic ramp offset by the 64 KiB block. */
function pattern(size: number): Uint8Array {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = (i % 251) ^ ((i >> 16) & 0xff);
  return bytes;
}

/** Where two byte arrays first differ (-1: the same); a deep equality of 17 MB is slow. */
function firstDifference(actual: Uint8Array, expected: Uint8Array): number {
  if (actual.byteLength !== expected.byteLength) return Math.min(actual.byteLength, expected.byteLength);
  for (let i = 0; i < actual.byteLength; i++) if (actual[i] !== expected[i]) return i;
  return -1;
}

/** The R2 binding, counting the reads made through it. */
function countingBucket(): { bucket: R2Bucket; gets: { offset: number; length: number }[] } {
  const gets: { offset: number; length: number }[] = [];
  const bucket = new Proxy(env.MEDIA, {
    get(target, property) {
      if (property === "get") {
        return (key: string, options?: R2GetOptions) => {
          const range = options?.range as { offset: number; length: number };
          gets.push(range);
          return target.get(key, options);
        };
      }
      const value = Reflect.get(target, property) as unknown;
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { bucket, gets };
}

describe("answers for objects larger than one piece", () => {
  const bytes = pattern(SIZE);
  const key = "test/object-pieces.bin";
  beforeAll(async () => {
    await env.MEDIA.put(key, bytes);
  });
  const answer = async (range?: string) => {
    const counted = countingBucket();
    const request = new Request("https://example.test/", { headers: range ? { range } : {} });
    return { ...counted, response: await objectResponse(counted.bucket, key, request, new Headers(), "missing") };
  };

  it("serves the whole object and ranges across pieces byte for byte, with their lengths", async () => {
    const whole = await answer();
    expect(whole.response.status).toBe(200);
    expect(whole.response.headers.get("content-length")).toBe(String(SIZE));
    expect(firstDifference(new Uint8Array(await whole.response.arrayBuffer()), bytes)).toBe(-1);
    expect(whole.gets).toEqual([
      { offset: 0, length: OBJECT_PIECE_BYTES },
      { offset: OBJECT_PIECE_BYTES, length: OBJECT_PIECE_BYTES },
      { offset: 2 * OBJECT_PIECE_BYTES, length: 123_457 },
    ]);

    const across = await answer(`bytes=${OBJECT_PIECE_BYTES - 5}-${2 * OBJECT_PIECE_BYTES + 9}`);
    expect(across.response.status).toBe(206);
    expect(across.response.headers.get("content-range")).toBe(
      `bytes ${OBJECT_PIECE_BYTES - 5}-${2 * OBJECT_PIECE_BYTES + 9}/${SIZE}`,
    );
    expect(
      firstDifference(
        new Uint8Array(await across.response.arrayBuffer()),
        bytes.slice(OBJECT_PIECE_BYTES - 5, 2 * OBJECT_PIECE_BYTES + 10),
      ),
    ).toBe(-1);

    const tail = await answer("bytes=5000000-");
    expect(tail.response.headers.get("content-length")).toBe(String(SIZE - 5_000_000));
    expect(firstDifference(new Uint8Array(await tail.response.arrayBuffer()), bytes.slice(5_000_000))).toBe(-1);

    const small = await answer("bytes=-1000");
    expect(firstDifference(new Uint8Array(await small.response.arrayBuffer()), bytes.slice(SIZE - 1000))).toBe(-1);
    expect(small.gets).toHaveLength(1);
  });

  it("answers an empty object and a one-piece object whole", async () => {
    await env.MEDIA.put("test/object-pieces-empty.bin", new Uint8Array(0));
    const empty = await objectResponse(
      env.MEDIA,
      "test/object-pieces-empty.bin",
      new Request("https://example.test/"),
      new Headers(),
      "missing",
    );
    expect(empty.status).toBe(200);
    expect(empty.headers.get("content-length")).toBe("0");
    expect((await empty.arrayBuffer()).byteLength).toBe(0);
    await env.MEDIA.put("test/object-pieces-small.bin", bytes.subarray(0, 5000));
    const counted = countingBucket();
    const small = await objectResponse(
      counted.bucket,
      "test/object-pieces-small.bin",
      new Request("https://example.test/"),
      new Headers(),
      "missing",
    );
    expect(firstDifference(new Uint8Array(await small.arrayBuffer()), bytes.subarray(0, 5000))).toBe(-1);
    expect(counted.gets).toEqual([undefined]);
  });

  it("reads no piece past the one a client that stops early was reading", async () => {
    const { response, gets } = await answer("bytes=1000-");
    const reader = response.body!.getReader();
    let taken = 0;
    while (taken < 100_000) {
      const { done, value } = await reader.read();
      expect(done).toBe(false);
      taken += value!.byteLength;
    }
    await reader.cancel();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(gets).toEqual([{ offset: 1000, length: OBJECT_PIECE_BYTES }]);
  });
});
