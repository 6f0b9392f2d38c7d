/**
 * The subtitle fonts the API offers (`fontId`), shipped with the Worker as TrueType files
 * generated from the `latin` subset of the @fontsource packages by scripts/build-fonts.mjs
 * (assets/fonts/README.md). libass (ffmpeg's `subtitles` filter) finds a font by the family
 * name in its `name` table, so `family` is exactly what those tables say (name ID 1,
 * Windows/English record), checked by test/media/subtitles.test.ts.
 */
export const fontIds = ["inter", "montserrat", "poppins", "fredoka", "archivo-black", "anton"] as const;
export type FontId = (typeof fontIds)[number];

export interface SubtitleFont {
  /** Family name libass must match (the ASS style's Fontname). */
  family: string;
  /** File in assets/fonts, placed flat in ffmpeg's working directory. */
  file: string;
}

export const subtitleFonts: Record<FontId, SubtitleFont> = {
  inter: { family: "Inter", file: "Inter-Regular.ttf" },
  montserrat: { family: "Montserrat", file: "Montserrat-Regular.ttf" },
  poppins: { family: "Poppins", file: "Poppins-Regular.ttf" },
  fredoka: { family: "Fredoka", file: "Fredoka-Regular.ttf" },
  "archivo-black": { family: "Archivo Black", file: "ArchivoBlack-Regular.ttf" },
  anton: { family: "Anton", file: "Anton-Regular.ttf" },
};

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
