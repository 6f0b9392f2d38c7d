/**
 * A PNG of headers alone (45 bytes: signature, IHDR, IEND) declaring `width` x `height`: what a
 * decoder would size its buffers from, without the pixels.
 */
export function headersOnlyPng(width: number, height: number): Uint8Array {
  const png = new Uint8Array(8 + 25 + 12);
  const data = new DataView(png.buffer);
  png.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  data.setUint32(8, 13);
  png.set(new TextEncoder().encode("IHDR"), 12);
  data.setUint32(16, width);
  data.setUint32(20, height);
  png.set([8, 6, 0, 0, 0], 24);
  png.set(new TextEncoder().encode("IEND"), 37);
  return png;
}
