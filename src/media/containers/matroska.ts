import type { IRandomAccessTokenizer } from "strtok3";
import { readAt } from "../bytes";
import { UnsupportedMediaError } from "../types";

const EBML_HEADER = 0x1a45dfa3;
const SEGMENT = 0x18538067;
const CLUSTER = 0x1f43b675;
/** Top-level elements before the first cluster: SeekHead, Info, Tracks, Tags, Void, Cues, Attachments, ... */
const MAX_ELEMENTS_BEFORE_CLUSTERS = 64;

interface ElementHeader {
  id: number;
  /** undefined: "unknown size", as live recorders write it. */
  size: number | undefined;
  headerLength: number;
}

/**
 * Offset of the first Cluster, the end of what the metadata parser needs: segment info (with the
 * duration) and tracks come before the media data. Parsing only that prefix avoids hopping from
 * cluster to cluster, one read each, in files whose SeekHead does not point past them.
 * Also refuses segments that claim more bytes than the file has.
 */
export async function findFirstCluster(source: IRandomAccessTokenizer, label: string): Promise<number> {
  const size = source.fileInfo.size;
  const ebml = await readElementHeader(source, 0, label);
  if (ebml.id !== EBML_HEADER || ebml.size === undefined) throw corrupt(label, 0);
  const segmentStart = ebml.headerLength + ebml.size;
  const segment = await readElementHeader(source, segmentStart, label);
  if (segment.id !== SEGMENT) throw corrupt(label, segmentStart);
  let position = segmentStart + segment.headerLength;
  const segmentEnd = segment.size === undefined ? size : position + segment.size;
  if (segmentEnd > size) throw truncated(label, segmentEnd, size);
  for (let count = 0; count < MAX_ELEMENTS_BEFORE_CLUSTERS && position < segmentEnd; count++) {
    const element = await readElementHeader(source, position, label);
    if (element.id === CLUSTER) return position;
    if (element.size === undefined) break;
    position += element.headerLength + element.size;
    if (position > segmentEnd) throw truncated(label, position, size);
  }
  return size;
}

async function readElementHeader(
  source: IRandomAccessTokenizer,
  position: number,
  label: string,
): Promise<ElementHeader> {
  const bytes = await readAt(source, position, 12);
  const id = readVint(bytes, 0, 4);
  const size = id && readVint(bytes, id.length, 8);
  if (!id || !size) throw corrupt(label, position);
  return { id: id.raw, size: size.allOnes ? undefined : size.value, headerLength: id.length + size.length };
}

/** EBML variable-size integer: the count of leading zero bits of the first byte gives its length. */
function readVint(bytes: Uint8Array, offset: number, maxLength: number) {
  const first = bytes[offset];
  if (first === undefined || first === 0) return undefined;
  const length = Math.clz32(first) - 23;
  if (length > maxLength || offset + length > bytes.length) return undefined;
  let raw = 0;
  let value = first & (0xff >> length);
  let allOnes = value === 0xff >> length;
  for (let i = 1; i < length; i++) {
    const byte = bytes[offset + i];
    raw = raw * 256 + byte;
    value = value * 256 + byte;
    allOnes &&= byte === 0xff;
  }
  raw += first * 256 ** (length - 1);
  return { raw, value, length, allOnes };
}

function corrupt(label: string, position: number): UnsupportedMediaError {
  return new UnsupportedMediaError(`The ${label} file is corrupt: no valid element at byte ${position}.`);
}

function truncated(label: string, needed: number, size: number): UnsupportedMediaError {
  return new UnsupportedMediaError(`The ${label} file is truncated: it needs ${needed} bytes but has only ${size}.`);
}
