/**
 * Reads a stream into buffers the caller owns. workerd delivers a request or R2 body in reads of
 * 4-8 KiB: read with the default reader, each read is a new small array, so a gigabyte is
 * ~200,000 allocations for the garbage collector (measured: half the throughput of a BYOB
 * reader, and its RSS high-water mark grows with them). A byte stream is read with a BYOB reader
 * straight into the caller's buffer; any other stream is read normally and copied.
 */
export interface ByteReader {
  /**
   * Reads once into `buffer` from `offset` (< its length). A BYOB read moves the buffer's memory,
   * even the read that finds the end, so the caller always goes on with the returned `buffer`
   * (the same bytes, and the `bytes` new ones after `offset`).
   */
  readInto(buffer: Uint8Array, offset: number): Promise<{ buffer: Uint8Array; bytes: number; done: boolean }>;
  cancel(reason?: unknown): Promise<void>;
}

export function byteReader(stream: ReadableStream<Uint8Array>): ByteReader {
  let byob: ReadableStreamBYOBReader | undefined;
  try {
    byob = stream.getReader({ mode: "byob" });
  } catch {
    // Not a byte stream (a stream made in JavaScript): read chunks and copy them.
  }
  if (byob) {
    const reader = byob;
    return {
      async readInto(buffer, offset) {
        // Taken before the read: the transfer detaches `buffer`, whose length then reads 0.
        const { byteOffset, byteLength } = buffer;
        const { done, value } = await reader.read(buffer.subarray(offset));
        if (!value) throw new Error("the stream was cancelled while it was read");
        return {
          buffer: new Uint8Array(value.buffer, byteOffset, byteLength),
          bytes: done ? 0 : value.byteLength,
          done,
        };
      },
      cancel: (reason) => reader.cancel(reason),
    };
  }
  const reader = stream.getReader();
  let pending: Uint8Array = new Uint8Array(0);
  return {
    async readInto(buffer, offset) {
      while (pending.byteLength === 0) {
        const { done, value } = await reader.read();
        if (done) return { buffer, bytes: 0, done };
        pending = value;
      }
      const bytes = Math.min(pending.byteLength, buffer.byteLength - offset);
      buffer.set(pending.subarray(0, bytes), offset);
      pending = pending.subarray(bytes);
      return { buffer, bytes, done: false };
    },
    cancel: (reason) => reader.cancel(reason),
  };
}

/**
 * The whole of a stream that must be exactly `length` bytes (a resumable upload's part), in one
 * buffer; undefined when it is shorter or longer (a longer one is read on for up to
 * `overflowDrainBytes` more, discarded, then cancelled).
 */
export async function readExactly(
  stream: ReadableStream<Uint8Array>,
  length: number,
  overflowDrainBytes = 0,
): Promise<Uint8Array | undefined> {
  const reader = byteReader(stream);
  let buffer: Uint8Array = new Uint8Array(length + 1);
  let filled = 0;
  for (;;) {
    const read = await reader.readInto(buffer, filled);
    buffer = read.buffer;
    if (read.done) return filled === length ? buffer.subarray(0, length) : undefined;
    filled += read.bytes;
    if (filled > length) {
      // Up to `overflowDrainBytes` more are read and discarded, so the answer can follow the body.
      for (let discarded = filled - length; discarded <= overflowDrainBytes; ) {
        const more = await reader.readInto(buffer, 0);
        buffer = more.buffer;
        if (more.done) return undefined;
        discarded += more.bytes;
      }
      await reader.cancel().catch(() => {});
      return undefined;
    }
  }
}
