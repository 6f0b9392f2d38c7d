/**
 * Streaming multipart/form-data: each part's body is a stream handed over while the request is
 * still arriving (@mjackson/multipart-parser). That parser pushes bytes into part streams
 * without waiting for the reader, so the request body is fed to it with backpressure: feeding
 * pauses while more than HIGH_WATER bytes are parsed but not yet read by the part's consumer.
 */
import { getMultipartBoundary, MultipartParseError, MultipartParser } from "@mjackson/multipart-parser";
import { invalidRequest } from "../errors";
import { byteReader } from "./byte-reader";

const HIGH_WATER = 4 * 1024 * 1024;
const FEED_CHUNK = 256 * 1024;

export interface StreamedPart {
  name: string | undefined;
  filename: string | undefined;
  body: ReadableStream<Uint8Array>;
}

/**
 * Browsers and fetch's FormData write a quote, CR and LF of a file name as %22, %0D and %0A
 * (HTML's multipart/form-data encoding); read them back so a name keeps its own characters.
 */
function decodeFormFilename(filename: string | undefined): string | undefined {
  return filename?.replace(/%(22|0D|0A)/gi, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
}

export function createMultipartParser(request: Request) {
  const contentType = request.headers.get("content-type") ?? "";
  // Media types are case-insensitive (RFC 9110); the boundary's value is not.
  const boundary = /^multipart\/form-data\b/i.test(contentType) ? getMultipartBoundary(contentType) : null;
  if (!boundary || !request.body) throw invalidRequest("Expected a multipart/form-data body with a boundary.");
  const source = request.body;

  let fed = 0;
  let consumed = 0;
  let wake: (() => void) | undefined;
  let failure: unknown;
  const progress = (bytes: number) => {
    consumed += bytes;
    if (fed - consumed <= HIGH_WATER) wake?.();
  };
  // The parser gets the body in chunks of FEED_CHUNK, not the runtime's 4-8 KiB reads: its work
  // and the part streams' is per chunk.
  async function* throttled(): AsyncGenerator<Uint8Array> {
    const reader = byteReader(source);
    let chunk: Uint8Array = new Uint8Array(FEED_CHUNK);
    let filled = 0;
    let ended = false;
    try {
      while (!ended) {
        const read = await reader.readInto(chunk, filled);
        chunk = read.buffer;
        filled += read.bytes;
        ended = read.done;
        if (!ended && filled < FEED_CHUNK) continue;
        if (filled > 0) {
          while (fed - consumed > HIGH_WATER && failure === undefined)
            await new Promise<void>((resolve) => (wake = resolve));
          if (failure !== undefined) throw failure;
          fed += filled;
          // Handed over whole: the parser's part streams keep views of it.
          yield chunk.subarray(0, filled);
          chunk = new Uint8Array(FEED_CHUNK);
          filled = 0;
        }
      }
    } finally {
      // The parser stopped early (an error, or the body's end boundary before its end): stop the body.
      if (!ended) await reader.cancel().catch(() => {});
    }
  }

  return {
    /** Calls `handler` for every part; the handler must read `body` to its end. */
    async forEachPart(handler: (part: StreamedPart) => Promise<void>): Promise<void> {
      const parser = new MultipartParser(boundary);
      try {
        await parser.parse(throttled(), (part) => {
          const counted = part.body.pipeThrough(
            new TransformStream<Uint8Array, Uint8Array>({
              transform(chunk, controller) {
                progress(chunk.byteLength);
                controller.enqueue(chunk);
              },
            }),
          );
          // A failed handler stops the feeding at once instead of waiting for a reader forever.
          return handler({ name: part.name, filename: decodeFormFilename(part.filename), body: counted }).catch(
            (error: unknown) => {
              failure ??= error;
              wake?.();
            },
          );
        });
        if (failure !== undefined) throw failure;
      } catch (error) {
        await source.cancel().catch(() => {});
        if (error instanceof MultipartParseError) throw invalidRequest(`Malformed multipart body: ${error.message}.`);
        throw error;
      }
    },
  };
}

/** Reads a stream to its end, discarding it (parts the caller does not want); past `limitBytes`, cancels the rest. */
export async function drain(body: ReadableStream<Uint8Array>, limitBytes = Infinity): Promise<void> {
  const reader = body.getReader();
  for (let read = 0; ; ) {
    const { done, value } = await reader.read();
    if (done) return;
    read += value.byteLength;
    if (read > limitBytes) return reader.cancel();
  }
}
