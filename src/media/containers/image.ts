/**
 * Watermark images are only sniffed by their magic bytes; this checks that the file is whole
 * before it is accepted, so a truncated or padded-out upload is refused at upload time instead
 * of failing the watermark job later: PNG ends with its IEND chunk, JPEG with an end-of-image
 * marker, and a WebP's RIFF size covers the file.
 */
import type { IRandomAccessTokenizer } from "strtok3";
import { fourCC, readAt, u32be, u32le } from "../bytes";
import { UnsupportedMediaError } from "../types";

/** Encoders and editors sometimes leave padding after a JPEG's end marker. */
const JPEG_TAIL_WINDOW = 1024;

export async function checkImage(source: IRandomAccessTokenizer, container: string, label: string): Promise<void> {
  const size = source.fileInfo.size;
  const truncated = () => new UnsupportedMediaError(`The ${label} image is truncated or corrupt.`);
  if (container === "png") {
    const header = await readAt(source, 0, Math.min(size, 24));
    if (header.length < 24 || fourCC(header, 12) !== "IHDR" || u32be(header, 16) === 0 || u32be(header, 20) === 0) throw truncated();
    if (size < 12 || fourCC(await readAt(source, size - 8, 4), 0) !== "IEND") throw truncated();
  } else if (container === "jpeg") {
    const window = Math.min(size, JPEG_TAIL_WINDOW);
    const tail = await readAt(source, size - window, window);
    let end = false;
    for (let i = tail.length - 2; i >= 0 && !end; i--) end = tail[i] === 0xff && tail[i + 1] === 0xd9;
    if (!end) throw truncated();
  } else if (container === "webp") {
    const header = await readAt(source, 0, Math.min(size, 12));
    if (header.length < 12 || u32le(header, 4) + 8 > size) throw truncated();
  }
}
