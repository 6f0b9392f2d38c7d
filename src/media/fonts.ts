/**
 * The subtitle fonts the API offers (`fontId`), shipped with the Worker as TrueType files
 * generated from the @fontsource packages by scripts/build-fonts.mjs (assets/fonts/README.md):
 * the `latin` subset as `<Name>-Regular.ttf`, and each further script subset the family has as
 * `<Name>-Regular.<subset>.ttf`, a face of the same family. libass (ffmpeg's `subtitles` filter)
 * finds a font by the family name in its `name` table, so `family` is exactly what those tables
 * say (name ID 1, Windows/English record), checked by test/media/subtitles.test.ts; a glyph the
 * first face lacks (Ł, Ж, Ω, ạ) it takes from another face of that family in the fonts folder,
 * which ffmpeg.wasm (no fontconfig, no system fonts) could not do with the latin file alone.
 */
export const fontIds = ["inter", "montserrat", "poppins", "fredoka", "archivo-black", "anton"] as const;
export type FontId = (typeof fontIds)[number];

/** The @fontsource subsets shipped beyond `latin`, where a family has them (scripts/build-fonts.mjs). */
export type ScriptSubset = "latin-ext" | "cyrillic" | "cyrillic-ext" | "greek" | "greek-ext" | "vietnamese";

export interface SubtitleFont {
  /** Family name libass must match (the ASS style's Fontname). */
  family: string;
  /** The `latin` face in assets/fonts, placed in ffmpeg's fonts folder (drawtext's one file). */
  file: string;
  /** Further faces of the family, one per script subset. */
  subsets: readonly ScriptSubset[];
  /**
   * (usWinAscent + usWinDescent) / unitsPerEm of the face: libass sizes a font so that this
   * height is the ASS font size, so two faces drawn at the same em need sizes in this ratio.
   */
  lineHeightEm: number;
}

export const subtitleFonts: Record<FontId, SubtitleFont> = {
  inter: { family: "Inter", file: "Inter-Regular.ttf", subsets: ["latin-ext", "cyrillic", "cyrillic-ext", "greek", "greek-ext", "vietnamese"], lineHeightEm: 1.43 },
  montserrat: { family: "Montserrat", file: "Montserrat-Regular.ttf", subsets: ["latin-ext", "cyrillic", "cyrillic-ext", "vietnamese"], lineHeightEm: 1.562 },
  poppins: { family: "Poppins", file: "Poppins-Regular.ttf", subsets: ["latin-ext"], lineHeightEm: 1.762 },
  fredoka: { family: "Fredoka", file: "Fredoka-Regular.ttf", subsets: ["latin-ext"], lineHeightEm: 1.251 },
  "archivo-black": { family: "Archivo Black", file: "ArchivoBlack-Regular.ttf", subsets: ["latin-ext"], lineHeightEm: 1.347 },
  anton: { family: "Anton", file: "Anton-Regular.ttf", subsets: ["latin-ext", "vietnamese"], lineHeightEm: 1.733 },
};

/**
 * Scripts none of the caption families draws, each with a Noto Sans face of its own (the
 * script's @fontsource subset, scripts/build-fonts.mjs). The ASS script switches a run of
 * such letters to this face (`\fn`, ass.ts), since libass here has no fallback beyond the
 * faces of the style's family; libass shapes the run with HarfBuzz (Arabic joining, Devanagari
 * conjuncts) and orders it with FriBidi.
 */
export interface ScriptFace {
  family: string;
  file: string;
  /** A letter of the script (Script_Extensions, so the Arabic comma and digits count). */
  letter: RegExp;
  lineHeightEm: number;
  /**
   * The face drawtext takes for a text mark in this script: the script's glyphs with the
   * package's Latin subsets merged in (scripts/build-fonts.mjs). Absent for Devanagari, which
   * drawtext cannot shape (it has FriBidi, not HarfBuzz).
   */
  drawtextFile?: string;
}

export const scriptFaces = {
  arabic: {
    family: "Noto Sans Arabic",
    file: "NotoSansArabic-Regular.ttf",
    letter: /\p{Script_Extensions=Arabic}/u,
    lineHeightEm: 2.169,
    drawtextFile: "NotoSansArabic-Regular.merged.ttf",
  },
  hebrew: {
    family: "Noto Sans Hebrew",
    file: "NotoSansHebrew-Regular.ttf",
    letter: /\p{Script_Extensions=Hebrew}/u,
    lineHeightEm: 1.36,
    drawtextFile: "NotoSansHebrew-Regular.merged.ttf",
  },
  devanagari: { family: "Noto Sans Devanagari", file: "NotoSansDevanagari-Regular.ttf", letter: /\p{Script_Extensions=Devanagari}/u, lineHeightEm: 1.906 },
  thai: {
    family: "Noto Sans Thai",
    file: "NotoSansThai-Regular.ttf",
    letter: /\p{Script_Extensions=Thai}/u,
    lineHeightEm: 1.511,
    drawtextFile: "NotoSansThai-Regular.merged.ttf",
  },
} as const satisfies Record<string, ScriptFace>;
export type Script = keyof typeof scriptFaces;
export const scripts = Object.keys(scriptFaces) as Script[];

/** The script faces `text` needs. */
export function scriptsIn(text: string): Script[] {
  return scripts.filter((script) => scriptFaces[script].letter.test(text));
}

/**
 * The one file drawtext draws with (text watermark, test-mode mark): Inter's `latin` face with
 * the glyphs of its script subsets appended (scripts/font-merge.mjs), since drawtext, unlike
 * libass, takes no glyph from another file.
 */
export const DRAWTEXT_FONT = "Inter-Regular.merged.ttf";

/**
 * The face drawtext draws `text` with: the first script face the text needs that has a drawtext
 * face (Arabic, Hebrew, Thai, with Latin), else Inter's merged face.
 */
export function drawtextFontFor(text: string): string {
  for (const script of scriptsIn(text)) {
    const face: ScriptFace = scriptFaces[script];
    if (face.drawtextFile) return face.drawtextFile;
  }
  return DRAWTEXT_FONT;
}

/** Every file drawtext may be given. */
export const drawtextFonts: string[] = [DRAWTEXT_FONT, ...Object.values(scriptFaces).flatMap((face: ScriptFace) => (face.drawtextFile ? [face.drawtextFile] : []))];

/** Every file of a family, the `latin` face first: what a subtitles job puts in its fonts folder. */
export function fontFiles(font: SubtitleFont): string[] {
  return [font.file, ...font.subsets.map((subset) => font.file.replace(/\.ttf$/, `.${subset}.ttf`))];
}

/**
 * The family name (name ID 1) of a TrueType/OpenType font, from its Windows Unicode English
 * record: the name FreeType reports and libass matches against a style's Fontname.
 */
export function fontFamilyName(font: Uint8Array): string | undefined {
  const view = new DataView(font.buffer, font.byteOffset, font.byteLength);
  const numTables = view.getUint16(4);
  let name = -1;
  for (let i = 0; i < numTables; i++) {
    const record = 12 + i * 16;
    if (String.fromCharCode(...font.subarray(record, record + 4)) === "name") name = view.getUint32(record + 8);
  }
  if (name < 0) return undefined;
  const count = view.getUint16(name + 2);
  const strings = name + view.getUint16(name + 4);
  for (let i = 0; i < count; i++) {
    const r = name + 6 + i * 12;
    const [platform, encoding, language, nameId, length, offset] = [0, 2, 4, 6, 8, 10].map((d) => view.getUint16(r + d));
    if (platform === 3 && encoding === 1 && language === 0x409 && nameId === 1) {
      let text = "";
      for (let c = 0; c < length; c += 2) text += String.fromCharCode(view.getUint16(strings + offset + c));
      return text;
    }
  }
  return undefined;
}
