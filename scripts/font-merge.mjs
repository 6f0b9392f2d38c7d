/**
 * TrueType faces in and out: reading an sfnt's tables, writing a table directory with its
 * checksums, and merging the script subsets of one font back into one face.
 *
 * Why merge: ffmpeg's drawtext (the text watermark, the test-mode mark) draws with one font
 * file and has no fallback, while @fontsource ships a family as one file per script subset
 * (latin, latin-ext, cyrillic...). The subsets are cut from the same font (same units per em,
 * same outlines and advances), so the glyphs each adds can be appended to the `latin` face: its
 * own glyph ids, layout tables (GSUB, GPOS, GDEF) and names stay as they are, the new glyphs get
 * the ids after them (composite glyphs' components copied and renumbered), `cmap` maps their
 * code points, `hmtx`, `loca`, `maxp`, `hhea`, `head` and `OS/2` follow. Layout features of the
 * added glyphs (kerning pairs with them) are not carried over; drawtext does not use GPOS.
 * `cmap` formats 4 (the BMP) and 12 (all of Unicode, for emoji) are read and written.
 * Used by scripts/build-fonts.mjs (npm postinstall); the merged Inter face is checked by drawing
 * each script with it on ffmpeg.wasm (test/media/tools-light.test.ts, text watermark).
 */

const padded = (n) => (n + 3) & ~3;

/** The sfnt checksum of a table: the sum of its big-endian 32-bit words. */
export function tableChecksum(data) {
  let sum = 0;
  const whole = data.length & ~3;
  for (let i = 0; i < whole; i += 4) sum = (sum + data.readUInt32BE(i)) >>> 0;
  if (whole < data.length) {
    const tail = Buffer.alloc(4);
    data.copy(tail, 0, whole);
    sum = (sum + tail.readUInt32BE(0)) >>> 0;
  }
  return sum;
}

/** An sfnt file from its flavour and tables ({tag, data}): sorted directory, checksums, head.checkSumAdjustment. */
export function writeSfnt(flavor, tables) {
  const sorted = [...tables].sort((a, b) => (a.tag < b.tag ? -1 : a.tag > b.tag ? 1 : 0));
  const numTables = sorted.length;
  const headerSize = 12 + 16 * numTables;
  const out = Buffer.alloc(sorted.reduce((size, t) => size + padded(t.data.length), headerSize));
  const entrySelector = Math.floor(Math.log2(numTables));
  const searchRange = 2 ** entrySelector * 16;
  out.writeUInt32BE(flavor, 0);
  out.writeUInt16BE(numTables, 4);
  out.writeUInt16BE(searchRange, 6);
  out.writeUInt16BE(entrySelector, 8);
  out.writeUInt16BE(numTables * 16 - searchRange, 10);
  let offset = headerSize;
  let headOffset = -1;
  sorted.forEach((table, i) => {
    const record = 12 + i * 16;
    if (table.tag === "head") {
      headOffset = offset;
      table.data.writeUInt32BE(0, 8); // checkSumAdjustment, computed over the whole file below
    }
    out.write(table.tag, record, 4, "latin1");
    out.writeUInt32BE(tableChecksum(table.data), record + 4);
    out.writeUInt32BE(offset, record + 8);
    out.writeUInt32BE(table.data.length, record + 12);
    table.data.copy(out, offset);
    offset += padded(table.data.length);
  });
  if (headOffset >= 0) out.writeUInt32BE((0xb1b0afba - tableChecksum(out)) >>> 0, headOffset + 8);
  return out;
}

/** The tables of an sfnt, by tag (copies). */
export function readSfnt(sfnt) {
  const buf = Buffer.from(sfnt.buffer, sfnt.byteOffset, sfnt.byteLength);
  const tables = new Map();
  for (let i = 0; i < buf.readUInt16BE(4); i++) {
    const record = 12 + i * 16;
    const offset = buf.readUInt32BE(record + 8);
    tables.set(
      buf.toString("latin1", record, record + 4),
      Buffer.from(buf.subarray(offset, offset + buf.readUInt32BE(record + 12))),
    );
  }
  return { flavor: buf.readUInt32BE(0), tables };
}

/**
 * Code point -> glyph id of a `cmap` table: its full-Unicode (format 12) subtable where it has one
 * (emoji past U+FFFF), else its Windows Unicode BMP (format 4) one.
 */
export function cmapOf(cmap) {
  let sub = -1;
  for (let i = 0; i < cmap.readUInt16BE(2); i++) {
    const r = 4 + i * 8;
    const at = cmap.readUInt32BE(r + 4);
    if (cmap.readUInt16BE(at) === 12) return cmap12Of(cmap, at);
    if (cmap.readUInt16BE(r) === 3 && cmap.readUInt16BE(r + 2) === 1 && cmap.readUInt16BE(at) === 4) sub = at;
  }
  if (sub < 0) throw new Error("font has no Windows Unicode BMP (format 4) cmap");
  const segX2 = cmap.readUInt16BE(sub + 6);
  const ends = sub + 14;
  const starts = ends + segX2 + 2;
  const deltas = starts + segX2;
  const rangeOffsets = deltas + segX2;
  const map = new Map();
  for (let s = 0; s < segX2; s += 2) {
    const start = cmap.readUInt16BE(starts + s);
    const end = cmap.readUInt16BE(ends + s);
    const delta = cmap.readUInt16BE(deltas + s);
    const ro = cmap.readUInt16BE(rangeOffsets + s);
    for (let code = start; code <= end && code !== 0xffff; code++) {
      let glyph = ro === 0 ? (code + delta) & 0xffff : cmap.readUInt16BE(rangeOffsets + s + ro + 2 * (code - start));
      if (ro !== 0 && glyph !== 0) glyph = (glyph + delta) & 0xffff;
      if (glyph !== 0) map.set(code, glyph);
    }
  }
  return map;
}

/**
 * libass takes the first Windows Unicode cmap subtable it finds, and the (3,1) BMP one comes
 * before the (3,10) full one, so every emoji past U+FFFF was "not found" in a face that has it:
 * the (3,1) record is pointed at the full (format 12) subtable, which covers the BMP too.
 */
export function fullUnicodeCmapFirst(sfnt) {
  const { flavor, tables } = readSfnt(sfnt);
  const cmap = tables.get("cmap");
  const records = Array.from({ length: cmap.readUInt16BE(2) }, (_, i) => {
    const at = 4 + i * 8;
    return {
      at,
      platform: cmap.readUInt16BE(at),
      encoding: cmap.readUInt16BE(at + 2),
      offset: cmap.readUInt32BE(at + 4),
    };
  });
  const full = records.find((r) => r.platform === 3 && r.encoding === 10 && cmap.readUInt16BE(r.offset) === 12);
  const bmp = records.find((r) => r.platform === 3 && r.encoding === 1);
  if (!full || !bmp) throw new Error("the emoji face has no Windows (3,1) and full-Unicode (3,10) cmap pair");
  cmap.writeUInt32BE(full.offset, bmp.at + 4);
  return writeSfnt(
    flavor,
    [...tables].map(([tag, data]) => ({ tag, data })),
  );
}

/** Sequential map groups (format 12): code point ranges mapped to consecutive glyph ids. */
function cmap12Of(cmap, at) {
  const map = new Map();
  for (let g = 0; g < cmap.readUInt32BE(at + 12); g++) {
    const group = at + 16 + g * 12;
    const [start, end, glyph] = [0, 4, 8].map((d) => cmap.readUInt32BE(group + d));
    for (let code = start; code <= end; code++) if (glyph + code - start !== 0) map.set(code, glyph + code - start);
  }
  return map;
}

function buildCmap12(map) {
  const groups = [];
  for (const code of [...map.keys()].sort((a, b) => a - b)) {
    const last = groups.at(-1);
    if (last && code === last.end + 1 && map.get(code) === last.glyph + (code - last.start)) last.end = code;
    else groups.push({ start: code, end: code, glyph: map.get(code) });
  }
  const sub = Buffer.alloc(16 + groups.length * 12);
  sub.writeUInt16BE(12, 0);
  sub.writeUInt32BE(sub.length, 4);
  sub.writeUInt32BE(groups.length, 12);
  groups.forEach((group, i) =>
    [group.start, group.end, group.glyph].forEach((value, d) => sub.writeUInt32BE(value, 16 + i * 12 + d * 4)),
  );
  return sub;
}

/**
 * A format 4 cmap (Windows and Unicode platform records) for BMP code points -> glyph ids, and a
 * format 12 one beside it when a code point lies past U+FFFF; then the Windows BMP record points
 * at the full one too, since libass takes the first Windows record (fullUnicodeCmapFirst).
 */
function buildCmap(map) {
  const codes = [...map.keys()].filter((c) => c < 0xffff).sort((a, b) => a - b);
  // Runs of consecutive code points whose glyph ids keep the same distance: one idDelta each.
  const segments = [];
  for (const code of codes) {
    const last = segments.at(-1);
    if (last && code === last.end + 1 && map.get(code) - code === last.delta) last.end = code;
    else segments.push({ start: code, end: code, delta: map.get(code) - code });
  }
  segments.push({ start: 0xffff, end: 0xffff, delta: 1 });
  const segX2 = segments.length * 2;
  const length = 16 + segX2 * 4;
  const sub = Buffer.alloc(length);
  const entrySelector = Math.floor(Math.log2(segments.length));
  const searchRange = 2 * 2 ** entrySelector;
  sub.writeUInt16BE(4, 0);
  sub.writeUInt16BE(length, 2);
  sub.writeUInt16BE(segX2, 6);
  sub.writeUInt16BE(searchRange, 8);
  sub.writeUInt16BE(entrySelector, 10);
  sub.writeUInt16BE(segX2 - searchRange, 12);
  segments.forEach((segment, i) => {
    sub.writeUInt16BE(segment.end, 14 + 2 * i);
    sub.writeUInt16BE(segment.start, 16 + segX2 + 2 * i);
    sub.writeUInt16BE(segment.delta & 0xffff, 16 + 2 * segX2 + 2 * i);
    // idRangeOffset stays 0: every segment maps by its delta.
  });
  const full = [...map.keys()].some((code) => code > 0xffff) ? buildCmap12(map) : undefined;
  // [platform, encoding, subtable]: 0 the BMP one, 1 the full one; records sorted as the spec asks.
  const records = full
    ? [
        [0, 3, 0],
        [0, 4, 1],
        [3, 1, 1],
        [3, 10, 1],
      ]
    : [
        [0, 3, 0],
        [3, 1, 0],
      ];
  const header = Buffer.alloc(4 + records.length * 8);
  header.writeUInt16BE(records.length, 2);
  const offsets = [header.length, header.length + sub.length];
  records.forEach(([platform, encoding, table], i) => {
    header.writeUInt16BE(platform, 4 + i * 8);
    header.writeUInt16BE(encoding, 6 + i * 8);
    header.writeUInt32BE(offsets[table], 8 + i * 8);
  });
  return Buffer.concat(full ? [header, sub, full] : [header, sub]);
}

/** Glyph outlines (one Buffer each, empty for a blank glyph) and horizontal metrics of a face. */
function glyphsOf(tables) {
  const head = tables.get("head");
  const numGlyphs = tables.get("maxp").readUInt16BE(4);
  const loca = tables.get("loca");
  const long = head.readInt16BE(50) === 1;
  const at = (i) => (long ? loca.readUInt32BE(i * 4) : loca.readUInt16BE(i * 2) * 2);
  const glyf = tables.get("glyf");
  const hmtx = tables.get("hmtx");
  const numberOfHMetrics = tables.get("hhea").readUInt16BE(34);
  const glyphs = [];
  for (let i = 0; i < numGlyphs; i++) {
    const advance = hmtx.readUInt16BE(4 * Math.min(i, numberOfHMetrics - 1));
    const lsb =
      i < numberOfHMetrics
        ? hmtx.readInt16BE(4 * i + 2)
        : hmtx.readInt16BE(4 * numberOfHMetrics + 2 * (i - numberOfHMetrics));
    glyphs.push({ data: Buffer.from(glyf.subarray(at(i), at(i + 1))), advance, lsb });
  }
  return glyphs;
}

const ARG_1_AND_2_ARE_WORDS = 0x0001;
const WE_HAVE_A_SCALE = 0x0008;
const MORE_COMPONENTS = 0x0020;
const WE_HAVE_AN_X_AND_Y_SCALE = 0x0040;
const WE_HAVE_A_TWO_BY_TWO = 0x0080;

/** The component glyph id offsets of a composite glyph (numberOfContours < 0). */
function componentOffsets(data) {
  const offsets = [];
  if (data.length < 10 || data.readInt16BE(0) >= 0) return offsets;
  let at = 10;
  for (;;) {
    const flags = data.readUInt16BE(at);
    offsets.push(at + 2);
    at += 4 + (flags & ARG_1_AND_2_ARE_WORDS ? 4 : 2);
    if (flags & WE_HAVE_A_SCALE) at += 2;
    else if (flags & WE_HAVE_AN_X_AND_Y_SCALE) at += 4;
    else if (flags & WE_HAVE_A_TWO_BY_TWO) at += 8;
    if (!(flags & MORE_COMPONENTS)) return offsets;
  }
}

/**
 * One face holding `base` and every code point of `faces` that `base` lacks (TrueType outlines,
 * BMP only). `base` keeps its glyph ids, so its layout tables stay valid.
 */
export function mergeFaces(base, faces) {
  const { flavor, tables } = readSfnt(base);
  if (flavor !== 0x00010000 || !tables.has("glyf")) throw new Error("only TrueType (glyf) faces can be merged");
  const glyphs = glyphsOf(tables);
  const map = cmapOf(tables.get("cmap"));
  const maxpFields = [6, 8, 10, 12, 16, 18, 20, 22, 24, 26, 28, 30]; // maxPoints.. maxComponentDepth (maxZones at 14 kept)
  const maxp = tables.get("maxp");
  for (const face of faces) {
    const other = readSfnt(face).tables;
    const upem = (t) => t.get("head").readUInt16BE(18);
    if (upem(other) !== upem(tables)) throw new Error("faces of different units per em cannot be merged");
    const source = glyphsOf(other);
    const renumbered = new Map();
    const add = (gid) => {
      if (renumbered.has(gid)) return renumbered.get(gid);
      const id = glyphs.length;
      renumbered.set(gid, id);
      const glyph = { ...source[gid], data: Buffer.from(source[gid].data) };
      glyphs.push(glyph);
      for (const at of componentOffsets(glyph.data)) glyph.data.writeUInt16BE(add(glyph.data.readUInt16BE(at)), at);
      return id;
    };
    for (const [code, gid] of cmapOf(other.get("cmap"))) if (!map.has(code)) map.set(code, add(gid));
    const otherMaxp = other.get("maxp");
    if (otherMaxp.length >= 32 && maxp.length >= 32) {
      for (const at of maxpFields) maxp.writeUInt16BE(Math.max(maxp.readUInt16BE(at), otherMaxp.readUInt16BE(at)), at);
    }
  }
  if (glyphs.length > 0xffff) throw new Error("too many glyphs for one face");

  const glyf = Buffer.concat(
    glyphs.map((g) => Buffer.concat([g.data, Buffer.alloc(padded(g.data.length) - g.data.length)])),
  );
  const loca = Buffer.alloc(4 * (glyphs.length + 1));
  const hmtx = Buffer.alloc(4 * glyphs.length);
  const bbox = { xMin: 0x7fff, yMin: 0x7fff, xMax: -0x8000, yMax: -0x8000 };
  let offset = 0;
  glyphs.forEach((glyph, i) => {
    loca.writeUInt32BE(offset, 4 * i);
    offset += padded(glyph.data.length);
    hmtx.writeUInt16BE(glyph.advance, 4 * i);
    hmtx.writeInt16BE(glyph.lsb, 4 * i + 2);
    if (glyph.data.length >= 10) {
      bbox.xMin = Math.min(bbox.xMin, glyph.data.readInt16BE(2));
      bbox.yMin = Math.min(bbox.yMin, glyph.data.readInt16BE(4));
      bbox.xMax = Math.max(bbox.xMax, glyph.data.readInt16BE(6));
      bbox.yMax = Math.max(bbox.yMax, glyph.data.readInt16BE(8));
    }
  });
  loca.writeUInt32BE(offset, 4 * glyphs.length);

  const head = tables.get("head");
  head.writeInt16BE(1, 50); // long loca offsets
  head.writeInt16BE(bbox.xMin, 36);
  head.writeInt16BE(bbox.yMin, 38);
  head.writeInt16BE(bbox.xMax, 40);
  head.writeInt16BE(bbox.yMax, 42);
  maxp.writeUInt16BE(glyphs.length, 4);
  const hhea = tables.get("hhea");
  hhea.writeUInt16BE(Math.max(...glyphs.map((g) => g.advance)), 10);
  hhea.writeUInt16BE(glyphs.length, 34);
  const codes = [...map.keys()];
  const os2 = tables.get("OS/2");
  if (os2 && os2.length >= 68) {
    os2.writeUInt16BE(Math.min(...codes), 64);
    os2.writeUInt16BE(Math.min(0xffff, Math.max(...codes)), 66);
  }
  // Glyph names (post format 2) would have to cover the new glyphs: format 3 has none.
  const post = Buffer.from(tables.get("post").subarray(0, 32));
  post.writeUInt32BE(0x00030000, 0);

  tables.set("glyf", glyf);
  tables.set("loca", loca);
  tables.set("hmtx", hmtx);
  tables.set("cmap", buildCmap(map));
  tables.set("post", post);
  for (const tag of ["hdmx", "LTSH", "VDMX"]) tables.delete(tag); // per-glyph arrays of the old glyph count
  return writeSfnt(
    flavor,
    [...tables].map(([tag, data]) => ({ tag, data })),
  );
}
