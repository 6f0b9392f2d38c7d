/**
 * subtitles: burns styled captions into a video with libass (ffmpeg's `subtitles` filter).
 *
 * Captions come from an SRT the user sends (`srtContent`, shown as is: its cues, text and
 * timing) or from a transcript's timed words (grouped `captionWords` at a time). Both become
 * {@link Cue}s, which {@link buildAss} turns into an ASS script sized to the video; the
 * command then burns it with the font placed next to it (no fontconfig in ffmpeg.wasm).
 */
import { parseText } from "media-captions";
import type { SubtitlesInput } from "../../tools/subtitles";
import { subtitleFonts } from "../fonts";
import { FONTS_DIR, resultName, type MediaCommand, type MediaInput } from "./command";

/** A word with its own time span, in seconds. */
export interface TimedWord {
  text: string;
  start: number;
  end: number;
}

/** One caption, in seconds; `words` time the karaoke highlight inside it. */
export interface Cue {
  start: number;
  end: number;
  /** Shown as is; `\n` separates lines. */
  text: string;
  words?: TimedWord[];
}

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

/** `srtContent` is not usable SRT; the message is meant for the caller (HTTP 400). */
export class SrtError extends Error {
  constructor(message: string) {
    super(`srtContent is not valid SRT: ${message}`);
    this.name = "SrtError";
  }
}

// ---------------------------------------------------------------------------------------
// Cues

/** Formatting tags SRT files commonly carry (`<i>`, `<b>`, `<u>`, `<s>`, `<font color=...>`). */
const SRT_FORMATTING_TAG = /<\/?(?:b|i|u|s|font)(?:\s[^<>]*)?>/gi;
const INDEX_LINE = /^\s*\d+\s*$/;
/** A timing line; anything after the end time (SRT's `X1:... Y2:...` coordinates) is dropped. */
const TIMING_LINE = /^\s*(\S+)\s*-->\s*(\S+)/;

/**
 * Parses SRT with media-captions (strict), block by block so that every cue's problem is
 * reported with its line. A block is a run of non-blank lines: an optional index line, a
 * timing line, then the text. Text is kept as is (line breaks included) except for SRT's
 * HTML-like formatting tags, which are removed; words are timed inside each cue in
 * proportion to their length in characters. Throws {@link SrtError}.
 */
export async function cuesFromSrt(srt: string): Promise<Cue[]> {
  const lines = srt.replace(/^\uFEFF/, "").split(/\r\n|\r|\n/);
  const blocks: { firstLine: number; lines: string[] }[] = [];
  lines.forEach((line, index) => {
    if (line.trim() === "") return;
    const previousBlank = index === 0 || lines[index - 1]!.trim() === "";
    if (previousBlank) blocks.push({ firstLine: index + 1, lines: [] });
    blocks.at(-1)!.lines.push(line);
  });
  if (blocks.length === 0) throw new SrtError("it contains no cue");

  const cues: Cue[] = [];
  for (const block of blocks) {
    const timingIndex = INDEX_LINE.test(block.lines[0]!) && block.lines.length > 1 ? 1 : 0;
    const lineNumber = block.firstLine + timingIndex;
    const timing = TIMING_LINE.exec(block.lines[timingIndex]!);
    if (!timing) throw new SrtError(`line ${lineNumber}: expected a timing line "00:00:01,000 --> 00:00:02,500"`);
    const text = block.lines.slice(timingIndex + 1).join("\n");
    let parsed;
    try {
      parsed = await parseText(`${timing[1]} --> ${timing[2]}\n${text}\n`, { type: "srt", strict: true });
    } catch (error) {
      const reason = error instanceof Error ? error.message.replace(/ on line \d+$/, "") : String(error);
      throw new SrtError(`line ${lineNumber}: ${reason}`);
    }
    const [cue] = parsed.cues;
    // The parser drops, without an error, a cue that ends before it starts.
    if (parsed.cues.length !== 1 || cue === undefined || !(cue.endTime >= cue.startTime)) {
      throw new SrtError(`line ${lineNumber}: the cue ends before it starts`);
    }
    const cleaned = cue.text
      .replace(SRT_FORMATTING_TAG, "")
      .split("\n")
      .map((line) => line.trimEnd())
      .join("\n")
      .trim();
    if (cleaned === "" || cue.endTime === cue.startTime) continue;
    cues.push({ start: cue.startTime, end: cue.endTime, text: cleaned, words: proportionalWords(cleaned, cue.startTime, cue.endTime) });
  }
  return cues;
}

/** The words of `text` (split on white space), sharing [start, end] in proportion to their length. */
export function proportionalWords(text: string, start: number, end: number): TimedWord[] {
  const words = text.split(/\s+/).filter((word) => word !== "");
  const lengths = words.map((word) => [...word].length);
  const total = lengths.reduce((sum, length) => sum + length, 0);
  let done = 0;
  return words.map((word, i) => {
    const wordStart = start + ((end - start) * done) / total;
    done += lengths[i]!;
    return { text: word, start: wordStart, end: start + ((end - start) * done) / total };
  });
}

/** A silence longer than this between two words starts a new caption. */
export const CAPTION_PAUSE_SECONDS = 0.7;

/**
 * Groups a transcript's timed words into captions of up to `captionWords` words. A caption
 * also ends at a pause longer than {@link CAPTION_PAUSE_SECONDS} and after a word that ends a
 * sentence. A caption stays on screen until the next one when the gap between them is short,
 * so captions do not flicker between words.
 */
export function cuesFromWords(words: TimedWord[], captionWords: 1 | 2 | 4): Cue[] {
  const clean = words
    .map((word) => ({ ...word, text: word.text.trim() }))
    .filter((word) => word.text !== "" && Number.isFinite(word.start) && Number.isFinite(word.end))
    .map((word) => ({ ...word, end: Math.max(word.start, word.end) }));
  const groups: TimedWord[][] = [];
  for (const word of clean) {
    const group = groups.at(-1);
    const last = group?.at(-1);
    const startsNew =
      group === undefined ||
      last === undefined ||
      group.length >= captionWords ||
      word.start - last.end > CAPTION_PAUSE_SECONDS ||
      /[.!?…]["»”')\]]*$/.test(last.text);
    if (startsNew) groups.push([word]);
    else group.push(word);
  }
  const cues = groups.map((group) => ({
    start: group[0]!.start,
    end: group.at(-1)!.end,
    text: group.map((word) => word.text).join(" "),
    words: group,
  }));
  cues.forEach((cue, i) => {
    const next = cues[i + 1];
    if (next !== undefined && next.start >= cue.end && next.start - cue.end <= CAPTION_PAUSE_SECONDS) cue.end = next.start;
  });
  return cues;
}

// ---------------------------------------------------------------------------------------
// ASS

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
  "\u2000": " ", "\u2001": " ", "\u2002": " ", "\u2003": " ", "\u2004": " ", "\u2005": " ",
  "\u2006": " ", "\u2008": " ", "\u2009": " ", "\u200A": " ", "\u205F": " ",
  "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2015": "\u2014",
  "\u0178": "Y", // Ÿ is in the latin-ext subset only
  "\u2028": "\n", "\u2029": "\n",
};
/** Invisible characters (soft hyphen, zero-width and direction marks) the fonts lack: dropped. */
const INVISIBLE = /[\u00AD\u200B-\u200F\u202A-\u202E\u2060-\u206F\uFEFF]/g;
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

interface Layout {
  fontSize: number;
  fontName: string;
  styleLine: string;
  /** Override tags put on the spoken word, empty when karaoke is off. */
  activeTags: string;
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
    0, 0, 0, 0, // Bold, Italic, Underline, StrikeOut: the font's own Regular face
    100, 100, 0, 0, // ScaleX, ScaleY, Spacing, Angle
    borderStyle,
    outline,
    shadow,
    alignment,
    marginH,
    marginH,
    marginV,
    1, // Encoding
  ].join(",");
  return { fontSize, fontName: font.family, styleLine, activeTags };
}

const round2 = (n: number) => Math.round(n * 100) / 100;

/**
 * The ASS script of `cues` for a video of this size (PlayResX/PlayResY = the video, so every
 * length below is in video pixels). Without karaoke each cue is one event; with karaoke a
 * cue becomes one event per word, from the word's start to the next word's start, showing
 * the whole cue with that word highlighted (robust on libass, unlike \k, which cannot
 * un-highlight a word once spoken).
 */
export function buildAss(params: SubtitleStyleParams, cues: Cue[], video: { width: number; height: number }): string {
  const { styleLine, activeTags } = layout(params, video);
  const events: string[] = [];
  const dialogue = (startCs: number, endCs: number, text: string) => {
    if (endCs > startCs && text !== "") {
      events.push(`Dialogue: 0,${assTimeFromCentiseconds(startCs)},${assTimeFromCentiseconds(endCs)},Caption,,0,0,0,,${text}`);
    }
  };
  const cs = (seconds: number) => Math.max(0, Math.round(seconds * 100));

  for (const cue of cues) {
    if (!(cue.end > cue.start)) continue;
    if (activeTags === "") {
      dialogue(cs(cue.start), cs(cue.end), escapeAssText(cue.text));
      continue;
    }
    // Tokens alternate between words and the white space around them, which keeps the cue's
    // own spacing and line breaks in every event.
    const tokens = cue.text.split(/(\s+)/);
    const wordIndexes = tokens.flatMap((token, i) => (token !== "" && !/^\s+$/.test(token) ? [i] : []));
    const words =
      cue.words !== undefined && cue.words.length === wordIndexes.length ? cue.words : proportionalWords(cue.text, cue.start, cue.end);
    // Boundaries: the cue's start, then each later word's start (clamped inside the cue and
    // never going back), then the cue's end; rounded once so the events tile exactly.
    const bounds = [cs(cue.start)];
    for (let w = 1; w < words.length; w++) {
      const t = Math.min(Math.max(words[w]!.start, cue.start), cue.end);
      bounds.push(Math.max(bounds.at(-1)!, cs(t)));
    }
    bounds.push(Math.max(bounds.at(-1)!, cs(cue.end)));
    wordIndexes.forEach((tokenIndex, w) => {
      const text = tokens
        .map((token, i) => (i === tokenIndex ? `{${activeTags}}${escapeAssText(token)}{\\r}` : escapeAssText(token)))
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

// ---------------------------------------------------------------------------------------
// Command

/** Audio codecs an MP4 carries as a stream copy; others (Opus, Vorbis, PCM, FLAC) become AAC. */
const MP4_AUDIO_COPY = new Set(["aac", "mp3", "ac3", "eac3", "alac"]);

export const SUBTITLES_ASS_NAME = "subs.ass";

const MiB = 1024 * 1024;

/**
 * Wasm heap of a burn-in, measured on ffmpeg.wasm 0.12.10 (x264 veryfast without lookahead
 * or B-frames): 32 MiB at 320x240, 55 MiB at 1280x720, 96.5 MiB at 1920x1080. The font is
 * alone in `fonts/`, so libass (which loads its whole fontsdir) reads only the font.
 */
export function subtitlesWasmHeapBytes(input: MediaInput): number {
  const pixels = (input.probe.width ?? 1280) * (input.probe.height ?? 720);
  return pixels <= 1280 * 720 ? 55 * MiB : 100 * MiB;
}

/**
 * Burns `ass` into the first input (a video) with libass. The font file is placed in the
 * `fonts/` subdirectory (`fontsdir=fonts`: ffmpeg.wasm has no fontconfig, and an
 * ASS [Fonts] section is not an option: ffmpeg 5.1 does not enable libass's font extraction,
 * and libass 0.15 aborts on embedded fonts whose encoded size is a multiple of 4). x264 runs
 * without lookahead and B-frames, the setting that fits ffmpeg.wasm's memory (55 MiB instead
 * of 115 at 720p). Audio is copied when MP4 can carry it.
 */
export function buildSubtitlesCommand(params: Pick<SubtitleStyleParams, "fontId">, inputs: MediaInput[], ass: string): MediaCommand {
  const [input] = inputs;
  if (input === undefined) throw new TypeError("subtitles needs one video input");
  const audioCodec = input.probe.audioCodec?.toLowerCase();
  const audio = !input.probe.hasAudio
    ? []
    : audioCodec !== undefined && MP4_AUDIO_COPY.has(audioCodec)
      ? ["-c:a", "copy"]
      : ["-c:a", "aac", "-b:a", "192k"];
  const outputName = "out.mp4";
  return {
    args: [
      "-hide_banner",
      "-y",
      "-i", input.name,
      "-map", "0:v:0",
      "-map", "0:a:0?",
      "-vf", `subtitles=filename=${SUBTITLES_ASS_NAME}:fontsdir=${FONTS_DIR}`,
      "-c:v", "libx264",
      "-preset", "veryfast",
      "-x264-params", "rc-lookahead=0:bframes=0",
      "-crf", "23",
      "-pix_fmt", "yuv420p",
      ...audio,
      "-movflags", "+faststart",
      "-f", "mp4",
      outputName,
    ],
    files: { [SUBTITLES_ASS_NAME]: new TextEncoder().encode(ass) },
    fonts: [subtitleFonts[params.fontId].file],
    outputName,
    resultFilename: resultName(input.filename, "mp4", "-subtitles", "video"),
    contentType: "video/mp4",
    wasmCapable: true,
    wasmHeapBytes: subtitlesWasmHeapBytes(input),
  };
}
