/**
 * Watermark images are only sniffed by their magic bytes; this checks that the file is whole
 * before it is accepted, so a truncated or padded-out upload is refused at upload time instead
 * of failing the watermark job later: PNG ends with its IEND chunk, JPEG with an end-of-image
 * marker, and a WebP's RIFF size covers the file. It also reads the picture's size: a small file
 * may declare a huge picture, which decoding would blow up to gigabytes on the job's engine.
 */
import type { IRandomAccessTokenizer } from "strtok3";
import { fourCC, readAt, u16be, u16le, u32be, u32le } from "../bytes";
import { UnsupportedMediaError } from "../types";

/** Encoders and editors sometimes leave padding after a JPEG's end marker. */
const JPEG_TAIL_WINDOW = 1024;
/** A 48-megapixel phone photo fits; decoded as RGBA it is 200 MB. */
export const MAX_IMAGE_PIXELS = 50_000_000;
export const MAX_IMAGE_SIDE = 16_384;
/** JPEG segments read while looking for the frame header (EXIF, ICC and the like come first). */
const JPEG_MAX_SEGMENTS = 64;

export interface ImageSize {
  width: number;
  height: number;
}

export async function checkImage(source: IRandomAccessTokenizer, container: string, label: string): Promise<ImageSize> {
  const size = source.fileInfo.size;
  const truncated = () => new UnsupportedMediaError(`The ${label} image is truncated or corrupt.`);
  let picture: ImageSize | undefined;
  if (container === "png") {
    const header = await readAt(source, 0, Math.min(size, 24));
    if (header.length < 24 || fourCC(header, 12) !== "IHDR" || u32be(header, 16) === 0 || u32be(header, 20) === 0)
      throw truncated();
    if (size < 12 || fourCC(await readAt(source, size - 8, 4), 0) !== "IEND") throw truncated();
    picture = { width: u32be(header, 16), height: u32be(header, 20) };
  } else if (container === "jpeg") {
    const window = Math.min(size, JPEG_TAIL_WINDOW);
    const tail = await readAt(source, size - window, window);
    let end = false;
    for (let i = tail.length - 2; i >= 0 && !end; i--) end = tail[i] === 0xff && tail[i + 1] === 0xd9;
    if (!end) throw truncated();
    picture = await jpegSize(source);
  } else if (container === "webp") {
    const header = await readAt(source, 0, Math.min(size, 30));
    if (header.length < 12 || u32le(header, 4) + 8 > size) throw truncated();
    picture = webpSize(header);
  }
  if (picture === undefined || picture.width === 0 || picture.height === 0) throw truncated();
  const { width, height } = picture;
  if (width > MAX_IMAGE_SIDE || height > MAX_IMAGE_SIDE || width * height > MAX_IMAGE_PIXELS) {
    throw new UnsupportedMediaError(
      `The ${label} image is ${width}x${height} pixels: images may be at most ${MAX_IMAGE_SIDE} pixels a side and ${MAX_IMAGE_PIXELS / 1e6} megapixels. Scale it down and upload it again.`,
    );
  }
  return picture;
}

/** The size in the frame header (SOF0-SOF15 but DHT, JPG and DAC), found segment by segment. */
async function jpegSize(source: IRandomAccessTokenizer): Promise<ImageSize | undefined> {
  let at = 2;
  for (let segment = 0; segment < JPEG_MAX_SEGMENTS; segment++) {
    const head = await readAt(source, at, 9);
    if (head.length < 4 || head[0] !== 0xff) return undefined;
    const marker = head[1]!;
    // Fill bytes before a marker.
    if (marker === 0xff) {
      at += 1;
      continue;
    }
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return head.length < 9 ? undefined : { width: u16be(head, 7), height: u16be(head, 5) };
    }
    // Start of scan before any frame header: not a picture this reader understands.
    if (marker === 0xda) return undefined;
    at += 2 + u16be(head, 2);
  }
  return undefined;
}

/** Lossy (VP8), lossless (VP8L) and extended (VP8X) WebP headers, from the file's first 30 bytes. */
function webpSize(header: Uint8Array): ImageSize | undefined {
  if (header.length < 30) return undefined;
  switch (fourCC(header, 12)) {
    case "VP8 ":
      return { width: u16le(header, 26) & 0x3fff, height: u16le(header, 28) & 0x3fff };
    case "VP8L": {
      const bits = u32le(header, 21);
      return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
    }
    case "VP8X":
      return {
        width: 1 + (header[24]! | (header[25]! << 8) | (header[26]! << 16)),
        height: 1 + (header[27]! | (header[28]! << 8) | (header[29]! << 16)),
      };
    default:
      return undefined;
  }
}
