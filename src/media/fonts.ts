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
  inter: {
    family: "Inter",
    file: "Inter-Regular.ttf",
    subsets: ["latin-ext", "cyrillic", "cyrillic-ext", "greek", "greek-ext", "vietnamese"],
    lineHeightEm: 1.43,
  },
  montserrat: {
    family: "Montserrat",
    file: "Montserrat-Regular.ttf",
    subsets: ["latin-ext", "cyrillic", "cyrillic-ext", "vietnamese"],
    lineHeightEm: 1.562,
  },
  poppins: { family: "Poppins", file: "Poppins-Regular.ttf", subsets: ["latin-ext"], lineHeightEm: 1.762 },
  fredoka: { family: "Fredoka", file: "Fredoka-Regular.ttf", subsets: ["latin-ext"], lineHeightEm: 1.251 },
  "archivo-black": {
    family: "Archivo Black",
    file: "ArchivoBlack-Regular.ttf",
    subsets: ["latin-ext"],
    lineHeightEm: 1.347,
  },
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
    lineHeightEm: 2.169,
    drawtextFile: "NotoSansArabic-Regular.merged.ttf",
  },
  hebrew: {
    family: "Noto Sans Hebrew",
    file: "NotoSansHebrew-Regular.ttf",
    lineHeightEm: 1.36,
    drawtextFile: "NotoSansHebrew-Regular.merged.ttf",
  },
  devanagari: { family: "Noto Sans Devanagari", file: "NotoSansDevanagari-Regular.ttf", lineHeightEm: 1.906 },
  thai: {
    family: "Noto Sans Thai",
    file: "NotoSansThai-Regular.ttf",
    lineHeightEm: 1.511,
    drawtextFile: "NotoSansThai-Regular.merged.ttf",
  },
  // The CJK faces (2.4-2.6 MB each) already hold their package's Latin: one file for both uses.
  // Their name tables say "Thin" although they are weight-400 faces (scripts/build-fonts.mjs).
  japanese: {
    family: "Noto Sans JP Thin",
    file: "NotoSansJP-Regular.ttf",
    lineHeightEm: 1.448,
    drawtextFile: "NotoSansJP-Regular.ttf",
  },
  chinese: {
    family: "Noto Sans SC Thin",
    file: "NotoSansSC-Regular.ttf",
    lineHeightEm: 1.448,
    drawtextFile: "NotoSansSC-Regular.ttf",
  },
  korean: {
    family: "Noto Sans KR Thin",
    file: "NotoSansKR-Regular.ttf",
    lineHeightEm: 1.448,
    drawtextFile: "NotoSansKR-Regular.ttf",
  },
  // Monochrome outlines in the caption's colour (libass draws no colour glyphs). libass does not
  // form the face's sequence ligatures: a ZWJ family shows its people, a flag its two letters.
  // drawtext: Inter's merged face with the emoji appended (scripts/build-fonts.mjs).
  emoji: {
    family: "Noto Emoji",
    file: "NotoEmoji-Regular.ttf",
    lineHeightEm: 1.172,
    drawtextFile: "Inter-Regular.emoji.ttf",
  },
} as const satisfies Record<string, ScriptFace>;
export type Script = keyof typeof scriptFaces;
export const scripts = Object.keys(scriptFaces) as Script[];

/**
 * Letters of each kind of run (Script_Extensions, so the Arabic comma and the CJK punctuation
 * count). Han, kana, CJK punctuation and full-width forms make one kind: its face depends on the
 * text around it (scriptOfRun). Hangul letters are a kind of their own: the Korean face has no Han.
 */
/** A kind of letters: one of them starts a run; marks and (non-)joiners continue it. */
const letters = (classBody: string) => ({ unit: `[${classBody}]`, inside: "\\p{M}\\u200C\\u200D" });
/**
 * What starts or continues a run: one letter of the kind (or one emoji), and what may follow one
 * inside the run. Emoji are the pictographs from U+2300 on (the © ® ™ ‼ and arrows before it are
 * the caption family's own), flags' regional indicators and keycaps (1️⃣); a sequence keeps its
 * joiners, variation selectors, skin tones and tag characters.
 */
const RUN_UNITS = {
  arabic: letters("\\p{scx=Arabic}"),
  hebrew: letters("\\p{scx=Hebrew}"),
  devanagari: letters("\\p{scx=Devanagari}"),
  thai: letters("\\p{scx=Thai}"),
  hangul: letters("\\p{sc=Hangul}"),
  han: letters("\\p{scx=Han}\\p{scx=Hiragana}\\p{scx=Katakana}\\u3000-\\u303F\\uFF00-\\uFFEF"),
  emoji: {
    unit: "(?:[0-9#*]\\uFE0F?\\u20E3|(?![\\u0000-\\u22FF])[\\p{Extended_Pictographic}\\p{Regional_Indicator}])",
    inside: "\\p{M}\\u200D\\p{Emoji_Modifier}\\u{E0020}-\\u{E007F}",
  },
};
type RunKind = keyof typeof RUN_UNITS;
const runKinds = Object.keys(RUN_UNITS) as RunKind[];
const firstLetterOf = Object.fromEntries(
  runKinds.map((kind) => [kind, new RegExp(`^${RUN_UNITS[kind].unit}`, "u")]),
) as Record<RunKind, RegExp>;

/** One run: units of one kind, their marks and joiners, the spaces between its words (one capturing group, for split). */
const SCRIPT_RUN = new RegExp(
  `(${runKinds
    .map((kind) => {
      const { unit, inside } = RUN_UNITS[kind];
      return `${unit}(?:${unit}|[${inside}]|[ \\u00A0]+(?=${unit}))*`;
    })
    .join("|")})`,
  "u",
);
/**
 * Kana by Script, not Script_Extensions: the ideographic full stop and comma (。、), the corner
 * brackets and the wave dash list Hiragana and Katakana among their scripts too, and a Chinese
 * line ending in 。 took the Japanese face (and its boxes for simplified characters).
 */
const KANA = /[\p{sc=Hiragana}\p{sc=Katakana}\u30FC]/u;

/** Han takes Japanese forms in a text that holds kana, Chinese (simplified) ones elsewhere. */
function scriptOfRun(run: string, japanese: boolean): Script {
  const kind = runKinds.find((k) => firstLetterOf[k].test(run))!;
  if (kind === "hangul") return "korean";
  if (kind === "han") return japanese ? "japanese" : "chinese";
  return kind;
}

export interface TextSegment {
  text: string;
  /** The face the segment is drawn with, when the caption family lacks its letters. */
  script?: Script;
}

/** `text` cut into runs needing a script face and the rest; `context` (the whole caption text) decides Han's forms. */
export function scriptSegments(text: string, context = text): TextSegment[] {
  const japanese = KANA.test(context);
  return text
    .split(SCRIPT_RUN)
    .map((part, i): TextSegment => (i % 2 === 1 ? { text: part, script: scriptOfRun(part, japanese) } : { text: part }))
    .filter((segment) => segment.text !== "");
}

/** The script faces `text` needs, in the order of `scripts`. */
export function scriptsIn(text: string): Script[] {
  const used = new Set(scriptSegments(text).flatMap((segment) => (segment.script ? [segment.script] : [])));
  return scripts.filter((script) => used.has(script));
}

/**
 * The one file drawtext draws with (text watermark, test-mode mark): Inter's `latin` face with
 * the glyphs of its script subsets appended (scripts/font-merge.mjs), since drawtext, unlike
 * libass, takes no glyph from another file.
 */
export const DRAWTEXT_FONT = "Inter-Regular.merged.ttf";

/**
 * The face drawtext draws `text` with: the first script face the text needs that has a drawtext
 * face (Arabic, Hebrew, Thai, Japanese, Chinese, Korean, each with Latin; emoji with Inter's
 * scripts), else Inter's merged face.
 */
export function drawtextFontFor(text: string): string {
  for (const { script } of scriptSegments(text)) {
    const face: ScriptFace | undefined = script && scriptFaces[script];
    if (face?.drawtextFile) return face.drawtextFile;
  }
  return DRAWTEXT_FONT;
}

/** Every file drawtext may be given. */
export const drawtextFonts: string[] = [
  DRAWTEXT_FONT,
  ...new Set(Object.values(scriptFaces).flatMap((face: ScriptFace) => (face.drawtextFile ? [face.drawtextFile] : []))),
];

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
    const [platform, encoding, language, nameId, length, offset] = [0, 2, 4, 6, 8, 10].map((d) =>
      view.getUint16(r + d),
    );
    if (platform === 3 && encoding === 1 && language === 0x409 && nameId === 1) {
      let text = "";
      for (let c = 0; c < length; c += 2) text += String.fromCharCode(view.getUint16(strings + offset + c));
      return text;
    }
  }
  return undefined;
}
