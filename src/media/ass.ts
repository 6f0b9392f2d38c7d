/**
 * The ASS script libass burns: one style per contract style (classique, impact, contour),
 * colours, position, size and font, karaoke tags timed per word, sized to the video.
 */
import type { SubtitlesInput } from "../tools/subtitles";
import { proportionalWords, type Cue } from "./captions";
import { scriptFaces, scriptSegments, subtitleFonts, type SubtitleFont } from "./fonts";
import { cjkLineBreaks, insertLineBreaks } from "./wrap";

/** The options of the contract that shape the rendering (defaults applied by the schema). */
export type SubtitleStyleParams = Pick<
  SubtitlesInput,
  | "style"
  | "color"
  | "effectColor"
  | "position"
  | "size"
  | "fontId"
  | "karaokeMode"
  | "highlightColor"
  | "shadowIntensity"
  | "contourThickness"
  | "boxOpacity"
>;

/** Font size as a share of the video's shorter side (its height in landscape). */
export const FONT_SIZE_RATIO = { petite: 0.045, normale: 0.06, grande: 0.08 } as const;
/** Outline width at contourThickness 100, as a share of the font size. */
const MAX_OUTLINE_RATIO = 0.1;
/** Drop shadow offset (classique), as a share of the font size. */
const SHADOW_RATIO = 0.08;
/** Padding of the box around the text (impact), as a share of the font size. */
const BOX_PADDING_RATIO = 0.25;
/** Scale of the spoken word in karaoke `taille`, percent. */
export const KARAOKE_SCALE = 125;
/** Glow width around the spoken word in karaoke `halo`, as a share of the font size. */
const HALO_RATIO = 0.12;
/** Distance kept between captions and the frame's edges, as shares of the frame. */
const EDGE_MARGIN_V = 0.03;
const EDGE_MARGIN_H = 0.05;

/** `#RRGGBB` + opacity 0-1 -> ASS `&HAABBGGRR` (ASS alpha is transparency: 00 opaque, FF invisible). */
export function assColor(hex: string, opacity = 1): string {
  const match = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex);
  if (!match) throw new TypeError(`not a #RRGGBB colour: ${JSON.stringify(hex)}`);
  const [, r, g, b] = match;
  return `&H${assAlpha(opacity)}${b}${g}${r}`.toUpperCase();
}

/** Opacity 0-1 -> ASS alpha byte, two hex digits. */
function assAlpha(opacity: number): string {
  const alpha = Math.round(255 * (1 - Math.min(1, Math.max(0, opacity))));
  return alpha.toString(16).padStart(2, "0").toUpperCase();
}

/** The colour part of an override tag (`\1c&HBBGGRR&`). */
function tagColor(hex: string): string {
  return `&H${assColor(hex).slice(4)}&`;
}

/** Seconds -> ASS time `H:MM:SS.cc`. */
export function assTime(seconds: number): string {
  return assTimeFromCentiseconds(Math.max(0, Math.round(seconds * 100)));
}

function assTimeFromCentiseconds(cs: number): string {
  const h = Math.floor(cs / 360000);
  const m = Math.floor((cs % 360000) / 6000);
  const s = Math.floor((cs % 6000) / 100);
  const c = cs % 100;
  return `${h}:${String(m).padStart(2, "0")}:${String(s).padStart(2, "0")}.${String(c).padStart(2, "0")}`;
}

/**
 * Characters French text uses that the shipped `latin` subsets lack, mapped to ones they have
 * (libass has no fallback font here and would draw a missing glyph as a box or nothing).
 */
const SUBSTITUTES: Record<string, string> = {
  "\u202F": "\u00A0", // narrow no-break space (before ; : ! ? and inside « »)
  "\u2007": "\u00A0", // figure space
  "\u2000": " ",
  "\u2001": " ",
  "\u2002": " ",
  "\u2003": " ",
  "\u2004": " ",
  "\u2005": " ",
  "\u2006": " ",
  "\u2008": " ",
  "\u2009": " ",
  "\u200A": " ",
  "\u205F": " ",
  "\u2010": "-",
  "\u2011": "-",
  "\u2012": "-",
  "\u2015": "\u2014",
  "\u0178": "Y", // Ÿ is in the latin-ext subset only
  "\u2028": "\n",
  "\u2029": "\n",
};
/**
 * Invisible characters (soft hyphen, zero-width and direction marks) the fonts lack: dropped.
 * Zero-width (non-)joiners and variation selectors are kept for the script faces, where they
 * change the shaping (Persian, Devanagari, emoji sequences), and dropped elsewhere (withScriptFaces).
 */
const INVISIBLE = /[\u00AD\u200B\u200E\u200F\u202A-\u202E\u2060-\u206F\uFEFF]/g;
const JOINERS = /[\u200C\u200D\uFE00-\uFE0F]/g;
const CONTROL = /[\u0000-\u0009\u000B-\u001F\u007F-\u009F]/g;

/**
 * User text -> ASS dialogue text that libass shows literally: `{` and `}` (which would open
 * override tags) become the escapes `\{` and `\}`, a backslash that would form `\N`, `\n` or
 * `\h` is separated from the letter by a zero-width space, and line breaks become `\N`.
 */
export function escapeAssText(text: string): string {
  const mapped = text
    .replace(/\r\n?/g, "\n")
    .replace(/[\u202F\u2000-\u200A\u205F\u2010-\u2012\u2015\u0178\u2028\u2029]/g, (c) => SUBSTITUTES[c] ?? c)
    .replace(INVISIBLE, "")
    .replace(CONTROL, "");
  return mapped.replace(/\\(?=[Nnh])|[{}\n]/g, (c) => {
    if (c === "\n") return "\\N";
    if (c === "{" || c === "}") return `\\${c}`;
    return "\\\u200B";
  });
}

/**
 * Escaped dialogue text with each run of a script the caption family lacks (Arabic, Hebrew,
 * Devanagari, Thai, Japanese, Chinese, Korean, emoji: fonts.ts `scriptSegments`) switched to that
 * script's face, at the size that gives it the family's em (libass sizes faces by their line
 * height), then back to the style. `context`, the whole caption text, decides Han's forms.
 */
export function withScriptFaces(escaped: string, font: SubtitleFont, fontSize: number, context = escaped): string {
  return scriptSegments(escaped, context)
    .map(({ text, script }) => {
      // Joiners outside a run have nothing to join.
      if (script === undefined) return text.replace(JOINERS, "");
      const face = scriptFaces[script];
      const size = round2((fontSize * face.lineHeightEm) / font.lineHeightEm);
      return `{\\fn${face.family}\\fs${size}}${text}{\\fn${font.family}\\fs${fontSize}}`;
    })
    .join("");
}

interface Layout {
  fontSize: number;
  font: SubtitleFont;
  fontName: string;
  styleLine: string;
  /** Override tags put on the spoken word, empty when karaoke is off. */
  activeTags: string;
  /** Widest line, in the family's ems, that fits between the side margins (wrap.ts). */
  maxLineEm: number;
}

function layout(params: SubtitleStyleParams, video: { width: number; height: number }): Layout {
  const width = Math.max(1, Math.round(video.width));
  const height = Math.max(1, Math.round(video.height));
  const fontSize = round2(Math.max(8, FONT_SIZE_RATIO[params.size] * Math.min(width, height)));
  const font = subtitleFonts[params.fontId];

  let borderStyle = 1;
  let outline = 0;
  let shadow = 0;
  let outlineColour = assColor(params.effectColor);
  let backColour = assColor(params.effectColor);
  let padding = 0;
  switch (params.style) {
    case "classique":
      // A hard drop shadow, down and right, whose opacity is the intensity.
      shadow = params.shadowIntensity > 0 ? round2(Math.max(1, SHADOW_RATIO * fontSize)) : 0;
      backColour = assColor(params.effectColor, params.shadowIntensity / 100);
      break;
    case "impact":
      // BorderStyle 4 (libass): one box behind the whole caption, in BackColour, padded by
      // the Shadow value; glyphs keep a normal (here zero) outline, so karaoke halo works.
      borderStyle = 4;
      padding = round2(Math.max(2, BOX_PADDING_RATIO * fontSize));
      shadow = padding;
      backColour = assColor(params.effectColor, params.boxOpacity / 100);
      break;
    case "contour":
      outline = round2((params.contourThickness / 100) * MAX_OUTLINE_RATIO * fontSize);
      outlineColour = assColor(params.effectColor);
      break;
  }

  // Vertical placement: `position` is where the middle of a one-line caption sits (0 = top,
  // 100 = bottom), kept `edge` away from the frame's edges. Captions in the lower half are
  // anchored at their bottom (extra lines grow upwards), the others at their top.
  const edge = Math.round(EDGE_MARGIN_V * height + padding);
  const lineHeight = fontSize;
  const centre = (params.position / 100) * height;
  const bottomAnchored = params.position >= 50;
  const wanted = bottomAnchored ? height - centre - lineHeight / 2 : centre - lineHeight / 2;
  const marginV = Math.round(Math.min(Math.max(wanted, edge), Math.max(edge, height - edge - lineHeight)));
  const alignment = bottomAnchored ? 2 : 8;
  const marginH = Math.round(EDGE_MARGIN_H * width + padding);

  const highlight = tagColor(params.highlightColor);
  const halo = round2(Math.max(1, HALO_RATIO * fontSize));
  const activeTags = {
    none: "",
    couleur: `\\1c${highlight}`,
    taille: `\\fscx${KARAOKE_SCALE}\\fscy${KARAOKE_SCALE}`,
    halo: `\\3c${highlight}\\3a&H00&\\bord${halo}\\blur${round2(halo / 2)}`,
  }[params.karaokeMode];

  const styleLine = [
    "Style: Caption",
    font.family,
    fontSize,
    assColor(params.color), // PrimaryColour: the text
    assColor(params.color), // SecondaryColour: unused (no \k)
    outlineColour,
    backColour,
    0,
    0,
    0,
    0, // Bold, Italic, Underline, StrikeOut: the font's own Regular face
    100,
    100,
    0,
    0, // ScaleX, ScaleY, Spacing, Angle
    borderStyle,
    outline,
    shadow,
    alignment,
    marginH,
    marginH,
    marginV,
    -1, // Encoding: libass takes each line's direction from its first strong letter (Arabic, Hebrew: right to left)
  ].join(",");
  // 10 % kept for the estimate's error and the spoken word's 125 % in karaoke taille.
  const maxLineEm = (0.9 * Math.max(1, width - 2 * marginH)) / (fontSize / font.lineHeightEm);
  return { fontSize, font, fontName: font.family, styleLine, activeTags, maxLineEm };
}

const round2 = (n: number) => Math.round(n * 100) / 100;

/** `text` cut at each word of `words`, in order: [before, word, between, word, ..., after]; undefined when one is missing. */
function piecesAround(text: string, words: readonly { text: string }[]): string[] | undefined {
  const pieces: string[] = [];
  let at = 0;
  for (const word of words) {
    const found = word.text === "" ? -1 : text.indexOf(word.text, at);
    if (found < 0) return undefined;
    pieces.push(text.slice(at, found), word.text);
    at = found + word.text.length;
  }
  pieces.push(text.slice(at));
  return pieces;
}

/**
 * The ASS script of `cues` for a video of this size (PlayResX/PlayResY = the video, so every
 * length below is in video pixels). Without karaoke each cue is one event; with karaoke a
 * cue becomes one event per word, from the word's start to the next word's start, showing
 * the whole cue with that word highlighted (robust on libass, unlike \k, which cannot
 * un-highlight a word once spoken).
 */
export function buildAss(params: SubtitleStyleParams, cues: Cue[], video: { width: number; height: number }): string {
  const { styleLine, activeTags, font, fontSize, maxLineEm } = layout(params, video);
  // Han takes Japanese forms in captions that hold kana anywhere.
  const context = cues.map((cue) => cue.text).join("\n");
  const caption = (text: string) => withScriptFaces(escapeAssText(text), font, fontSize, context);
  const events: string[] = [];
  const dialogue = (startCs: number, endCs: number, text: string) => {
    if (endCs > startCs && text !== "") {
      events.push(
        `Dialogue: 0,${assTimeFromCentiseconds(startCs)},${assTimeFromCentiseconds(endCs)},Caption,,0,0,0,,${text}`,
      );
    }
  };
  const cs = (seconds: number) => Math.max(0, Math.round(seconds * 100));

  for (const cue of cues) {
    if (!(cue.end > cue.start)) continue;
    // Long lines without spaces (Chinese, Japanese) get their breaks here: libass wraps at spaces only.
    const breaks = cjkLineBreaks(cue.text, maxLineEm);
    if (activeTags === "") {
      dialogue(cs(cue.start), cs(cue.end), caption(insertLineBreaks(cue.text, breaks)));
      continue;
    }
    // The cue's text cut around its words, found in order, so that every event keeps the cue's
    // own spacing and line breaks (none between Chinese or Japanese words); when the text does
    // not hold the given words in order, its own words timed in proportion stand in.
    let words = cue.words ?? [];
    let pieces = piecesAround(cue.text, words);
    if (pieces === undefined || words.length === 0) {
      words = proportionalWords(cue.text, cue.start, cue.end);
      pieces = piecesAround(cue.text, words) ?? [cue.text];
    }
    // Boundaries: the cue's start, then each later word's start (clamped inside the cue and
    // never going back), then the cue's end; rounded once so the events tile exactly.
    const bounds = [cs(cue.start)];
    for (let w = 1; w < words.length; w++) {
      const t = Math.min(Math.max(words[w]!.start, cue.start), cue.end);
      bounds.push(Math.max(bounds.at(-1)!, cs(t)));
    }
    bounds.push(Math.max(bounds.at(-1)!, cs(cue.end)));
    // Each piece takes the breaks that fall inside it (offsets are into the whole cue text).
    let offset = 0;
    const wrapped = pieces.map((piece) => {
      const text = insertLineBreaks(piece, breaks, offset);
      offset += piece.length;
      return text;
    });
    words.forEach((_, w) => {
      // pieces alternate: text before the first word, the word, text before the next... the rest.
      const text = wrapped
        .map((piece, i) => (i === 2 * w + 1 ? `{${activeTags}}${caption(piece)}{\\r}` : caption(piece)))
        .join("");
      dialogue(bounds[w]!, bounds[w + 1]!, text);
    });
  }

  return [
    "[Script Info]",
    "; Generated by the subtitles tool",
    "ScriptType: v4.00+",
    `PlayResX: ${Math.max(1, Math.round(video.width))}`,
    `PlayResY: ${Math.max(1, Math.round(video.height))}`,
    "WrapStyle: 0",
    "ScaledBorderAndShadow: yes",
    "YCbCr Matrix: None",
    "",
    "[V4+ Styles]",
    "Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, Bold, Italic, Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, MarginV, Encoding",
    styleLine,
    "",
    "[Events]",
    "Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text",
    ...events,
    "",
  ].join("\n");
}
