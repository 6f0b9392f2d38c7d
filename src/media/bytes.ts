import type { IRandomAccessTokenizer } from "strtok3";

/** Up to `length` bytes at `position`; fewer only where the object ends. Served from the tokenizer's cache when possible. */
export async function readAt(source: IRandomAccessTokenizer, position: number, length: number): Promise<Uint8Array> {
  const available = Math.max(0, Math.min(length, source.fileInfo.size - position));
  const bytes = new Uint8Array(available);
  if (available > 0) await source.peekBuffer(bytes, { position, length: available });
  return bytes;
}

export function fourCC(bytes: Uint8Array, offset: number): string {
  return String.fromCharCode(...bytes.subarray(offset, offset + 4));
}

function view(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export const u16le = (bytes: Uint8Array, offset: number): number => view(bytes).getUint16(offset, true);
export const u32le = (bytes: Uint8Array, offset: number): number => view(bytes).getUint32(offset, true);
export const i32le = (bytes: Uint8Array, offset: number): number => view(bytes).getInt32(offset, true);
export const u16be = (bytes: Uint8Array, offset: number): number => view(bytes).getUint16(offset, false);
export const u32be = (bytes: Uint8Array, offset: number): number => view(bytes).getUint32(offset, false);
/** 64-bit values as numbers: exact up to 2^53, far beyond any size or duration met here. */
export const u64be = (bytes: Uint8Array, offset: number): number => Number(view(bytes).getBigUint64(offset, false));
