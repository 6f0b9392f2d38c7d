/**
 * Line breaks for captions in Chinese, Japanese and Korean without spaces, which libass does not
 * wrap: breaks between full-width characters or words, by an estimate of the width in ems, with
 * the basic kinsoku rules, into lines of about equal width.
 * Why, and how widths are estimated: docs/decisions/0015-cjk-line-breaks.md.
 */
import { wordSegmenter } from "./words";

const FULL_WIDTH = /[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}\p{sc=Hangul}\u3000-\u303F\uFF01-\uFF60\uFFE0-\uFFE6]/u;
/** Never at the start of a line: closing punctuation, prolonged sound mark, small kana, iteration marks. */
const NO_LINE_START = new Set(
  "、。，．・：；？！ー―…‥」』）〕］｝〉》】〙〗〟’”｠»,.!?:;)]}ぁぃぅぇぉっゃゅょゎゕゖァィゥェォッャュョヮヵヶ々ゝゞヽヾ〻",
);
/** Never at the end of a line: opening brackets. */
const NO_LINE_END = new Set("「『（〔［｛〈《【〘〖〝‘“｟«([{");
const MARK = /\p{M}/u;

function widthEm(char: string): number {
  if (FULL_WIDTH.test(char)) return 1;
  if (char === " " || char === "\u00A0") return 0.3;
  if (MARK.test(char) || /[\u200B-\u200D\uFE00-\uFE0F]/.test(char)) return 0;
  return 0.55;
}

/** Offsets (UTF-16 indexes into `text`) where a line break goes so that no line of it is wider than `maxEm`. */
export function cjkLineBreaks(text: string, maxEm: number): number[] {
  const breaks: number[] = [];
  let lineStart = 0;
  for (const line of text.split("\n")) {
    for (const offset of lineBreaks(line, maxEm)) breaks.push(offset + lineStart);
    lineStart += line.length + 1;
  }
  return breaks;
}

function lineBreaks(line: string, maxEm: number): number[] {
  const chars = [...line];
  if (!chars.some((c) => FULL_WIDTH.test(c))) return [];
  const widths = chars.map(widthEm);
  const total = widths.reduce((sum, w) => sum + w, 0);
  if (total <= maxEm) return [];

  // Where a break may go: before chars[i].
  const allowed = (i: number): boolean => {
    const before = chars[i - 1]!;
    const after = chars[i]!;
    if (NO_LINE_START.has(after) || NO_LINE_END.has(before) || widths[i] === 0) return false;
    if (before === " ") return true;
    return after !== " " && (FULL_WIDTH.test(before) || FULL_WIDTH.test(after));
  };
  const wordStarts = new Set<number>();
  for (const { index } of wordSegmenter.segment(line)) wordStarts.add(index);
  const candidates: Candidate[] = [];
  let offset = 0;
  let width = 0;
  for (let i = 0; i < chars.length; i++) {
    if (i > 0 && allowed(i)) candidates.push({ offset, width, betweenWords: wordStarts.has(offset) });
    offset += chars[i]!.length;
    width += widths[i]!;
  }
  // Between words when that fits (是否 stays whole, and so does a karaoke word's highlight);
  // between any two characters only when a word is too long for a line.
  const betweenWords = chooseBreaks(
    candidates.filter((c) => c.betweenWords),
    total,
    maxEm,
  );
  return betweenWords.fits ? betweenWords.offsets : chooseBreaks(candidates, total, maxEm).offsets;
}

interface Candidate {
  offset: number;
  /** Width in ems of the text before this break. */
  width: number;
  betweenWords: boolean;
}

/**
 * About equal lines: for n lines, the k-th break is the candidate nearest k/n of the width (one
 * pass, both in width order); up to three more lines while one would still be wider than maxEm
 * (a long stretch without a place to break).
 */
function chooseBreaks(candidates: Candidate[], total: number, maxEm: number): { offsets: number[]; fits: boolean } {
  const fewest = Math.ceil(total / maxEm);
  let best: { offsets: number[]; fits: boolean } = { offsets: [], fits: false };
  for (let lines = fewest; lines <= fewest + 3; lines++) {
    const chosen: Candidate[] = [];
    let next = 0;
    for (let k = 1; k < lines; k++) {
      const goal = (k * total) / lines;
      while (
        next + 1 < candidates.length &&
        Math.abs(candidates[next + 1]!.width - goal) <= Math.abs(candidates[next]!.width - goal)
      )
        next++;
      const nearest = candidates[next];
      if (nearest === undefined || (chosen.length > 0 && nearest.width <= chosen.at(-1)!.width)) break;
      chosen.push(nearest);
      next++;
    }
    const edges = [0, ...chosen.map((c) => c.width), total];
    best = {
      offsets: chosen.map((c) => c.offset),
      fits: edges.every((edge, i) => i === 0 || edge - edges[i - 1]! <= maxEm),
    };
    if (chosen.length < lines - 1 || best.fits) break;
  }
  return best;
}

/**
 * `text`, which starts at offset `from` of the text the offsets (ascending) were found in, with a
 * line break at each offset inside it (after its first character, up to its end); a space before
 * a break goes.
 */
export function insertLineBreaks(text: string, offsets: readonly number[], from = 0): string {
  let low = 0;
  let high = offsets.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (offsets[middle]! <= from) low = middle + 1;
    else high = middle;
  }
  let out = "";
  let at = 0;
  for (let i = low; i < offsets.length && offsets[i]! - from <= text.length; i++) {
    const local = offsets[i]! - from;
    out += text.slice(at, local).replace(/ $/, "") + "\n";
    at = local;
  }
  return out + text.slice(at);
}
