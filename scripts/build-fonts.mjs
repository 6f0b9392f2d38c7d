#!/usr/bin/env node
/**
 * Builds the subtitle fonts: the `latin` subset (Basic Latin, Latin-1, Œ œ, €, typographic
 * quotes and spaces) of the six @fontsource families, converted from WOFF 1.0 to plain
 * TrueType into assets/fonts/<Name>-Regular.ttf, and the family's other script subsets
 * (Latin Extended, Cyrillic, Greek, Vietnamese) into <Name>-Regular.<subset>.ttf.
 *
 * ffmpeg.wasm's libass/FreeType get the fonts as plain files in the job's working directory
 * (`subtitles=...:fontsdir=.`, no fontconfig), and the Worker bundles them as Data modules
 * (wrangler `[[rules]] type = "Data" globs = ["**\/*.ttf"]`). The .ttf files are generated
 * (gitignored); this script runs from `postinstall`. It also refreshes the licence texts
 * assets/fonts/OFL-<Name>.txt, which are committed.
 *
 * WOFF 1.0 (https://www.w3.org/TR/WOFF/) is an sfnt whose tables are each optionally
 * zlib-compressed: inflating every table and writing a standard sfnt table directory gives
 * back the original font, byte for byte in every table.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { inflateSync } from "node:zlib";
import { cmapOf, fullUnicodeCmapFirst, mergeFaces, readSfnt, tableChecksum, writeSfnt } from "./font-merge.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const outDir = path.join(root, "assets", "fonts");
const require = createRequire(path.join(root, "package.json"));

/** fontId (API) -> @fontsource package, weight, and the output name stem. */
export const FONTS = [
  { id: "inter", pkg: "@fontsource/inter", weight: 400, name: "Inter" },
  { id: "montserrat", pkg: "@fontsource/montserrat", weight: 400, name: "Montserrat" },
  { id: "poppins", pkg: "@fontsource/poppins", weight: 400, name: "Poppins" },
  { id: "fredoka", pkg: "@fontsource/fredoka", weight: 400, name: "Fredoka" },
  { id: "archivo-black", pkg: "@fontsource/archivo-black", weight: 400, name: "ArchivoBlack" },
  { id: "anton", pkg: "@fontsource/anton", weight: 400, name: "Anton" },
];

const SUBSET = "latin";
/**
 * Script subsets written as further faces of each family, where its package has them
 * (`<Name>-Regular.<subset>.ttf`; src/media/fonts.ts lists which each family ships).
 */
const SCRIPT_SUBSETS = ["latin-ext", "cyrillic", "cyrillic-ext", "greek", "greek-ext", "vietnamese"];
/**
 * Faces of the scripts none of the families above draws, switched to by the captions' ASS
 * (src/media/fonts.ts `scriptFaces`): the script's own subset of a Noto Sans package, whose
 * family name is checked against the one the ASS asks for.
 */
export const SCRIPT_FACES = [
  {
    pkg: "@fontsource/noto-sans-arabic",
    subset: "arabic",
    name: "NotoSansArabic",
    family: "Noto Sans Arabic",
    drawtext: "merged",
  },
  {
    pkg: "@fontsource/noto-sans-hebrew",
    subset: "hebrew",
    name: "NotoSansHebrew",
    family: "Noto Sans Hebrew",
    drawtext: "merged",
  },
  {
    pkg: "@fontsource/noto-sans-devanagari",
    subset: "devanagari",
    name: "NotoSansDevanagari",
    family: "Noto Sans Devanagari",
    drawtext: "none",
  },
  {
    pkg: "@fontsource/noto-sans-thai",
    subset: "thai",
    name: "NotoSansThai",
    family: "Noto Sans Thai",
    drawtext: "merged",
  },
  {
    pkg: "@fontsource/noto-sans-jp",
    subset: "japanese",
    name: "NotoSansJP",
    family: "Noto Sans JP Thin",
    drawtext: "same",
  },
  {
    pkg: "@fontsource/noto-sans-sc",
    subset: "chinese-simplified",
    name: "NotoSansSC",
    family: "Noto Sans SC Thin",
    drawtext: "same",
  },
  {
    pkg: "@fontsource/noto-sans-kr",
    subset: "korean",
    name: "NotoSansKR",
    family: "Noto Sans KR Thin",
    drawtext: "same",
  },
];
/**
 * Emoji in captions: Noto Emoji, the monochrome outline face (libass draws outlines, not colour
 * bitmaps), whole: Google Fonts' own static TTF as @expo-google-fonts ships it (one cmap record
 * changed, fullUnicodeCmapFirst), since fontsource
 * splits it into 12 subsets and the ZWJ sequences, flags and skin tones are ligatures (GSUB)
 * that only a whole face keeps.
 */
const EMOJI_FACE = {
  pkg: "@expo-google-fonts/noto-emoji",
  file: "400Regular/NotoEmoji_400Regular.ttf",
  license: "LICENSE_FONT",
  name: "NotoEmoji",
  family: "Noto Emoji",
};
/**
 * Subsets of the same package merged into a script's drawtext face, so a text mark in that
 * script can also hold Latin: as `<name>-Regular.merged.ttf` beside the caption face
 * (`drawtext: "merged"`), or into the one face that serves both (`"same"`: the CJK faces, 2.4 MB
 * each, which a second copy would double). Devanagari has none: drawtext shapes with FriBidi only
 * (Arabic joining, right to left), not the reordering and conjuncts Devanagari needs.
 */
const DRAWTEXT_LATIN_SUBSETS = ["latin", "latin-ext"];
// The CJK subsets' name tables call their family "Noto Sans JP Thin" (SC, KR): a left-over of the
// instancing that made them, since they are static weight-400 faces (usWeightClass 400, no fvar,
// subfamily "Regular"). libass matches that name, so it is the one the ASS asks for.

/** The family drawtext uses (text watermark, test mark), also written as one merged face (scripts/font-merge.mjs). */
const DRAWTEXT_FAMILY = "inter";

/** WOFF 1.0 -> sfnt (TrueType or CFF flavour, whichever the WOFF wraps). */
export function woffToSfnt(woff) {
  const src = Buffer.from(woff.buffer, woff.byteOffset, woff.byteLength);
  if (src.toString("latin1", 0, 4) !== "wOFF") throw new Error("not a WOFF 1.0 file");
  const flavor = src.readUInt32BE(4);
  if (src.readUInt32BE(8) !== src.length) throw new Error("WOFF length field does not match the file size");
  const numTables = src.readUInt16BE(12);

  const tables = [];
  for (let i = 0; i < numTables; i++) {
    const entry = 44 + i * 20;
    const tag = src.toString("latin1", entry, entry + 4);
    const offset = src.readUInt32BE(entry + 4);
    const compLength = src.readUInt32BE(entry + 8);
    const origLength = src.readUInt32BE(entry + 12);
    const checksum = src.readUInt32BE(entry + 16);
    if (offset + compLength > src.length) throw new Error(`WOFF table ${tag} runs past the end of the file`);
    const stored = src.subarray(offset, offset + compLength);
    const data = compLength < origLength ? inflateSync(stored) : Buffer.from(stored);
    if (data.length !== origLength)
      throw new Error(`WOFF table ${tag}: ${data.length} bytes after inflate, ${origLength} expected`);
    tables.push({ tag, data, checksum });
  }
  for (const table of tables) {
    // head's checksum covers checkSumAdjustment, which writeSfnt recomputes over the whole file.
    if (table.tag === "head") continue;
    const checksum = tableChecksum(table.data);
    if (checksum !== table.checksum) {
      throw new Error(
        `table ${table.tag}: checksum ${hex(checksum)} differs from the WOFF directory's ${hex(table.checksum)}`,
      );
    }
  }
  if (!tables.some((table) => table.tag === "head")) throw new Error("font has no head table");
  const out = writeSfnt(flavor, tables);
  return new Uint8Array(out.buffer, out.byteOffset, out.length);
}

const hex = (n) => `0x${n.toString(16).padStart(8, "0")}`;

/** Reads name records (family 1, subfamily 2, full name 4, PostScript 6, typographic 16/17). */
export function sfntNames(sfnt) {
  const buf = Buffer.from(sfnt.buffer, sfnt.byteOffset, sfnt.byteLength);
  const numTables = buf.readUInt16BE(4);
  let nameOffset = -1;
  for (let i = 0; i < numTables; i++) {
    if (buf.toString("latin1", 12 + i * 16, 16 + i * 16) === "name") nameOffset = buf.readUInt32BE(12 + i * 16 + 8);
  }
  if (nameOffset < 0) throw new Error("font has no name table");
  const count = buf.readUInt16BE(nameOffset + 2);
  const strings = nameOffset + buf.readUInt16BE(nameOffset + 4);
  const names = {};
  for (let i = 0; i < count; i++) {
    const r = nameOffset + 6 + i * 12;
    const [platform, encoding, language, nameId, length, offset] = [0, 2, 4, 6, 8, 10].map((d) =>
      buf.readUInt16BE(r + d),
    );
    const raw = buf.subarray(strings + offset, strings + offset + length);
    // Windows, Unicode BMP, US English: the record libass (FreeType) reads first.
    if (platform === 3 && encoding === 1 && language === 0x409)
      names[nameId] = Buffer.from(raw).swap16().toString("utf16le");
  }
  return names;
}

/** Characters of the French captions the subset must cover. */
const REQUIRED = "AaZz09ÀÂÆÇÉÈÊËÎÏÔÙÛÜàâæçéèêëîïôùûüÿŒœ€«»‘’“”…–—\u00A0";

/** The characters of `chars` the font's cmap (Windows Unicode BMP, format 4) maps to no glyph. */
export function cmapCovers(sfnt, chars) {
  const cmap = readSfnt(sfnt).tables.get("cmap");
  if (!cmap) throw new Error("font has no cmap table");
  const map = cmapOf(cmap);
  return [...chars].filter((c) => !map.has(c.codePointAt(0)));
}

function main() {
  mkdirSync(outDir, { recursive: true });
  let drawtextFace;
  for (const font of FONTS) {
    const pkgDir = path.dirname(require.resolve(`${font.pkg}/package.json`));
    const version = JSON.parse(readFileSync(path.join(pkgDir, "package.json"), "utf8")).version;
    const woffName = `${font.id}-${SUBSET}-${font.weight}-normal.woff`;
    const sfnt = woffToSfnt(readFileSync(path.join(pkgDir, "files", woffName)));
    const missing = cmapCovers(sfnt, REQUIRED);
    if (missing.length > 0) throw new Error(`${woffName} lacks ${missing.join(" ")}`);
    const names = sfntNames(sfnt);
    const file = `${font.name}-Regular.ttf`;
    writeFileSync(path.join(outDir, file), sfnt);
    writeFileSync(path.join(outDir, `OFL-${font.name}.txt`), readFileSync(path.join(pkgDir, "LICENSE")));
    console.log(
      `${file}: ${sfnt.byteLength} bytes from ${font.pkg}@${version}/files/${woffName}; family "${names[1]}", full name "${names[4]}", PostScript "${names[6]}"${names[16] ? `, typographic family "${names[16]}"` : ""}`,
    );
    const faces = [];
    for (const subset of SCRIPT_SUBSETS) {
      const subsetWoff = path.join(pkgDir, "files", `${font.id}-${subset}-${font.weight}-normal.woff`);
      if (!existsSync(subsetWoff)) continue;
      const face = woffToSfnt(readFileSync(subsetWoff));
      if (sfntNames(face)[1] !== names[1])
        throw new Error(`${subsetWoff}: family "${sfntNames(face)[1]}", not "${names[1]}"`);
      writeFileSync(path.join(outDir, `${font.name}-Regular.${subset}.ttf`), face);
      faces.push(face);
    }
    if (font.id === DRAWTEXT_FAMILY) {
      const merged = mergeFaces(sfnt, faces);
      drawtextFace = { name: font.name, merged };
      writeFileSync(path.join(outDir, `${font.name}-Regular.merged.ttf`), merged);
      console.log(
        `${font.name}-Regular.merged.ttf: ${merged.byteLength} bytes, the latin face and its ${faces.length} script subsets in one face (drawtext)`,
      );
    }
  }
  for (const face of SCRIPT_FACES) {
    const pkgDir = path.dirname(require.resolve(`${face.pkg}/package.json`));
    const woff = (subset) => `${path.basename(face.pkg)}-${subset}-400-normal.woff`;
    const sfnt = woffToSfnt(readFileSync(path.join(pkgDir, "files", woff(face.subset))));
    const family = sfntNames(sfnt)[1];
    if (family !== face.family) throw new Error(`${woff(face.subset)}: family "${family}", not "${face.family}"`);
    const latin =
      face.drawtext === "none"
        ? []
        : DRAWTEXT_LATIN_SUBSETS.map((subset) => woffToSfnt(readFileSync(path.join(pkgDir, "files", woff(subset)))));
    const file = `${face.name}-Regular.ttf`;
    const captionFace = face.drawtext === "same" ? mergeFaces(sfnt, latin) : sfnt;
    writeFileSync(path.join(outDir, file), captionFace);
    writeFileSync(path.join(outDir, `OFL-${face.name}.txt`), readFileSync(path.join(pkgDir, "LICENSE")));
    const withLatin =
      face.drawtext === "same" ? ` with ${DRAWTEXT_LATIN_SUBSETS.join(" and ")} (captions and drawtext)` : "";
    console.log(
      `${file}: ${captionFace.byteLength} bytes from ${face.pkg}/files/${woff(face.subset)}${withLatin}; family "${family}"`,
    );
    if (face.drawtext !== "merged") continue;
    const merged = mergeFaces(sfnt, latin);
    writeFileSync(path.join(outDir, `${face.name}-Regular.merged.ttf`), merged);
    console.log(
      `${face.name}-Regular.merged.ttf: ${merged.byteLength} bytes, the ${face.subset} face with ${DRAWTEXT_LATIN_SUBSETS.join(" and ")} (drawtext)`,
    );
  }
  const emoji = buildEmojiFace();
  // A text mark with emoji: drawtext takes one file, so the emoji are appended to the merged face.
  const withEmoji = mergeFaces(drawtextFace.merged, [emoji]);
  writeFileSync(path.join(outDir, `${drawtextFace.name}-Regular.emoji.ttf`), withEmoji);
  console.log(
    `${drawtextFace.name}-Regular.emoji.ttf: ${withEmoji.byteLength} bytes, the merged face with Noto Emoji's glyphs appended (drawtext)`,
  );
}

function buildEmojiFace() {
  const pkgDir = path.dirname(require.resolve(`${EMOJI_FACE.pkg}/package.json`));
  const face = fullUnicodeCmapFirst(readFileSync(path.join(pkgDir, EMOJI_FACE.file)));
  const family = sfntNames(face)[1];
  if (family !== EMOJI_FACE.family)
    throw new Error(`${EMOJI_FACE.file}: family "${family}", not "${EMOJI_FACE.family}"`);
  const file = `${EMOJI_FACE.name}-Regular.ttf`;
  writeFileSync(path.join(outDir, file), face);
  writeFileSync(path.join(outDir, `OFL-${EMOJI_FACE.name}.txt`), readFileSync(path.join(pkgDir, EMOJI_FACE.license)));
  console.log(
    `${file}: ${face.byteLength} bytes, ${EMOJI_FACE.pkg}/${EMOJI_FACE.file} with its (3,1) cmap record on the full-Unicode subtable; family "${family}"`,
  );
  return face;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
