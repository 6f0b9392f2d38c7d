/**
 * Streams a body of unknown length into R2 without holding it in memory: bytes are gathered
 * into one fixed-size part buffer and sent as R2 multipart parts (R2 wants every part but the
 * last of the same size, >= 5 MiB). Bodies smaller than one part become a single put.
 * Memory stays at about one part whatever the size of the body; bytes are read straight into
 * the part (src/lib/byte-reader.ts).
 */
import { byteReader } from "./byte-reader";

export const PART_SIZE = 8 * 1024 * 1024;

export class BodyTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`body exceeds ${limit} bytes`);
  }
}

export async function streamToR2(
  bucket: R2Bucket,
  key: string,
  body: ReadableStream<Uint8Array>,
  options: { maxBytes: number; contentType?: string },
): Promise<{ size: number }> {
  const httpMetadata = options.contentType ? { contentType: options.contentType } : undefined;
  let part: Uint8Array = new Uint8Array(PART_SIZE);
  let filled = 0;
  let total = 0;
  let upload: R2MultipartUpload | undefined;
  const parts: R2UploadedPart[] = [];
  const reader = byteReader(body);
  try {
    for (;;) {
      const read = await reader.readInto(part, filled);
      part = read.buffer;
      if (read.done) break;
      filled += read.bytes;
      total += read.bytes;
      if (total > options.maxBytes) throw new BodyTooLargeError(options.maxBytes);
      if (filled === PART_SIZE) {
        upload ??= await bucket.createMultipartUpload(key, { httpMetadata });
        parts.push(await upload.uploadPart(parts.length + 1, part));
        // A new buffer: the runtime may still reference the one just sent.
        part = new Uint8Array(PART_SIZE);
        filled = 0;
      }
    }
    if (!upload) {
      await bucket.put(key, part.subarray(0, filled), { httpMetadata });
      return { size: total };
    }
    if (filled > 0) parts.push(await upload.uploadPart(parts.length + 1, part.subarray(0, filled)));
    await upload.complete(parts);
    return { size: total };
  } catch (error) {
    await reader.cancel().catch(() => {});
    await upload?.abort().catch(() => {});
    throw error;
  }
}
