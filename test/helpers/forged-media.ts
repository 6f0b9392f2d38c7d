/**
 * Lying media for the pricing tests: copies of real files (made by ffmpeg in the tests) whose
 * container header claims a much shorter duration while every media sample stays intact, so a
 * decoder still plays the whole real length. Pure byte edits of a copy, no size change: runs in
 * Node and in workerd alike (Uint8Array/DataView only).
 */

function view(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function ascii(bytes: Uint8Array, at: number, length: number): string {
  return String.fromCharCode(...bytes.subarray(at, at + length));
}

interface Box {
  type: string;
  start: number;
  payload: number;
  end: number;
}

/** ISO BMFF boxes between `start` and `end` (32-bit, 64-bit and "to the end" sizes). */
function* boxes(bytes: Uint8Array, start: number, end: number): Generator<Box> {
  const data = view(bytes);
  for (let at = start; at + 8 <= end; ) {
    const size32 = data.getUint32(at);
    const header = size32 === 1 ? 16 : 8;
    const size = size32 === 1 ? Number(data.getBigUint64(at + 8)) : size32 === 0 ? end - at : size32;
    if (size < header || at + size > end) throw new Error(`forged-media: invalid MP4 box at byte ${at}`);
    yield { type: ascii(bytes, at + 4, 4), start: at, payload: at + header, end: at + size };
    at += size;
  }
}

function childBox(bytes: Uint8Array, parent: { payload: number; end: number }, type: string): Box {
  for (const box of boxes(bytes, parent.payload, parent.end)) if (box.type === type) return box;
  throw new Error(`forged-media: no '${type}' box found in the MP4`);
}

/**
 * Rewrites only the movie header's duration (mvhd, version 0 or 1, its timescale kept): that is
 * the duration the Worker's probe and ffprobe's format report, while tkhd, mdhd and the sample
 * tables (what a decoder follows) still describe the real length.
 */
export function forgeMp4Duration(bytes: Uint8Array, claimedSeconds: number): Uint8Array {
  const copy = bytes.slice();
  const mvhd = childBox(copy, childBox(copy, { payload: 0, end: copy.length }, "moov"), "mvhd");
  const data = view(copy);
  const version = copy[mvhd.payload];
  const timescale = data.getUint32(mvhd.payload + (version === 1 ? 20 : 12));
  if (timescale === 0) throw new Error("forged-media: the mvhd box has a zero timescale");
  const duration = Math.round(claimedSeconds * timescale);
  if (version === 1) data.setBigUint64(mvhd.payload + 24, BigInt(duration));
  else data.setUint32(mvhd.payload + 16, duration);
  return copy;
}

const VISUAL_ENTRIES = new Set(["avc1", "avc3", "hvc1", "hev1", "mp4v", "av01", "vp09"]);

/**
 * Rewrites the picture size the headers state (each video track's tkhd, 16.16 fixed point, and its
 * visual sample entry's width and height), leaving the coded stream alone: a decoder still makes
 * frames of the real size. What a header-only reader (the Worker's probe) then reports.
 */
export function forgeMp4Dimensions(bytes: Uint8Array, width: number, height: number): Uint8Array {
  const copy = bytes.slice();
  const data = view(copy);
  let patched = 0;
  const walk = (start: number, end: number): void => {
    for (const box of boxes(copy, start, end)) {
      if (["moov", "trak", "mdia", "minf", "stbl"].includes(box.type)) walk(box.payload, box.end);
      else if (box.type === "tkhd") {
        const at = box.payload + (copy[box.payload] === 1 ? 88 : 76);
        // Audio tracks state 0x0.
        if (data.getUint32(at) === 0) continue;
        data.setUint32(at, width * 65536);
        data.setUint32(at + 4, height * 65536);
        patched++;
      } else if (box.type === "stsd") {
        for (const entry of boxes(copy, box.payload + 8, box.end)) {
          if (!VISUAL_ENTRIES.has(entry.type)) continue;
          data.setUint16(entry.start + 32, width);
          data.setUint16(entry.start + 34, height);
          patched++;
        }
      }
    }
  };
  walk(0, copy.length);
  if (patched === 0) throw new Error("forged-media: no video track found in the MP4");
  return copy;
}

/** EBML variable-size integer at `at`: its length, value, and whether it is "unknown" (all ones). */
function vint(bytes: Uint8Array, at: number, keepMarker: boolean): { length: number; value: number; unknown: boolean } {
  const first = bytes[at] ?? 0;
  const length = Math.clz32(first) - 23;
  if (first === 0 || length > 8 || at + length > bytes.length)
    throw new Error(`forged-media: invalid EBML number at byte ${at}`);
  let value = keepMarker ? first : first & (0xff >> length);
  let unknown = (first & (0xff >> length)) === 0xff >> length;
  for (let i = 1; i < length; i++) {
    value = value * 256 + bytes[at + i]!;
    unknown &&= bytes[at + i] === 0xff;
  }
  return { length, value, unknown };
}

interface Element {
  id: number;
  payload: number;
  end: number;
}

/** EBML elements between `start` and `end`; an unknown size (live recordings) runs to `end`. */
function* elements(bytes: Uint8Array, start: number, end: number): Generator<Element> {
  for (let at = start; at < end; ) {
    const id = vint(bytes, at, true);
    const size = vint(bytes, at + id.length, false);
    const payload = at + id.length + size.length;
    const elementEnd = size.unknown ? end : payload + size.value;
    if (elementEnd > end) throw new Error(`forged-media: Matroska element at byte ${at} overruns its parent`);
    yield { id: id.value, payload, end: elementEnd };
    at = elementEnd;
  }
}

function childElement(bytes: Uint8Array, start: number, end: number, id: number, name: string): Element {
  for (const element of elements(bytes, start, end)) if (element.id === id) return element;
  throw new Error(`forged-media: no Matroska ${name} element found`);
}

/**
 * Rewrites Segment/Info/Duration (a 4- or 8-byte float in TimestampScale units, 1 ms by default):
 * the duration the probe (music-metadata) and ffprobe's format report; clusters, cues and the
 * per-track DURATION tags ffmpeg writes are left as they are.
 */
export function forgeMatroskaDuration(bytes: Uint8Array, claimedSeconds: number): Uint8Array {
  const copy = bytes.slice();
  const ebml = childElement(copy, 0, copy.length, 0x1a45dfa3, "EBML header");
  const segment = childElement(copy, ebml.end, copy.length, 0x18538067, "Segment");
  const info = childElement(copy, segment.payload, segment.end, 0x1549a966, "Segment Info");
  let timestampScale = 1_000_000;
  let duration: Element | undefined;
  for (const element of elements(copy, info.payload, info.end)) {
    if (element.id === 0x2ad7b1)
      timestampScale = copy.subarray(element.payload, element.end).reduce((value, byte) => value * 256 + byte, 0);
    if (element.id === 0x4489) duration = element;
  }
  if (!duration) throw new Error("forged-media: no Matroska Duration element found in Segment Info");
  const value = (claimedSeconds * 1e9) / timestampScale;
  const size = duration.end - duration.payload;
  if (size === 8) view(copy).setFloat64(duration.payload, value);
  else if (size === 4) view(copy).setFloat32(duration.payload, value);
  else throw new Error(`forged-media: the Matroska Duration is ${size} bytes, not a 4- or 8-byte float`);
  return copy;
}

const MP3_SAMPLE_RATES = [44100, 48000, 32000];

/** CRC-16/ARC (reflected 0x8005, initial 0): the checksum of the LAME tag ffmpeg and LAME write. */
function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ 0xa001 : crc >>> 1;
  }
  return crc;
}

/**
 * Rewrites the frame count of the Xing/Info header in the first MPEG audio layer III frame, from
 * which players, ffprobe and the probe (music-metadata) take the duration of an MP3 instead of
 * counting frames; the LAME tag's CRC is kept valid so the header still looks genuine.
 */
export function forgeMp3Duration(bytes: Uint8Array, claimedSeconds: number): Uint8Array {
  const copy = bytes.slice();
  const data = view(copy);
  // An ID3v2 tag first: 10-byte header, syncsafe size, and a 10-byte footer when flagged.
  let frame =
    ascii(copy, 0, 3) === "ID3"
      ? 10 + ((copy[6]! << 21) | (copy[7]! << 14) | (copy[8]! << 7) | copy[9]!) + (copy[5]! & 0x10 ? 10 : 0)
      : 0;
  while (frame < copy.length && copy[frame] === 0) frame++; // padding some taggers leave
  const header = frame + 4 <= copy.length ? data.getUint32(frame) : 0;
  const versionBits = (header >>> 19) & 3; // 3: MPEG-1, 2: MPEG-2, 0: MPEG-2.5
  const rateIndex = (header >>> 10) & 3;
  if (header >>> 21 !== 0x7ff || ((header >>> 17) & 3) !== 1 || versionBits === 1 || rateIndex === 3) {
    throw new Error(`forged-media: no MPEG audio layer III frame at byte ${frame}`);
  }
  const mpeg1 = versionBits === 3;
  const mono = ((header >>> 6) & 3) === 3;
  const tag = frame + 4 + (mpeg1 ? (mono ? 17 : 32) : mono ? 9 : 17);
  const kind = ascii(copy, tag, 4);
  if (kind !== "Xing" && kind !== "Info") throw new Error("forged-media: the first MP3 frame has no Xing/Info header");
  const flags = data.getUint32(tag + 4);
  if (!(flags & 1)) throw new Error("forged-media: the Xing/Info header carries no frame count");
  const sampleRate = MP3_SAMPLE_RATES[rateIndex]! / (mpeg1 ? 1 : versionBits === 2 ? 2 : 4);
  data.setUint32(tag + 8, Math.round((claimedSeconds * sampleRate) / (mpeg1 ? 1152 : 576)));
  // A LAME tag follows the Xing fields (frames, bytes, 100-byte TOC, quality), its last 2 bytes a CRC-16 of the frame's first
  // 190 bytes. The CRC is linear, so XOR-ing in the CRC of the changed bits keeps a valid one valid (ffmpeg zero-pads mono frames).
  const lame = tag + 8 + (flags & 2 ? 4 : 0) + (flags & 4 ? 100 : 0) + (flags & 8 ? 4 : 0) + 4;
  if (lame + 36 <= copy.length && /^(LAME|Lavc|Lavf)/.test(ascii(copy, lame, 4))) {
    const delta = new Uint8Array(190);
    for (let at = tag + 8; at < tag + 12; at++) delta[at - frame] = bytes[at]! ^ copy[at]!;
    data.setUint16(lame + 34, data.getUint16(lame + 34) ^ crc16(delta));
  }
  return copy;
}
