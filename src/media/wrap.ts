/**
 * Line breaks for captions in Chinese, Japanese and Korean without spaces. libass wraps a line
 * only at spaces (a zero-width space does not count either), so a long line of Han or kana ran
 * off both edges of the frame, cut. These functions choose where such a line breaks, from an
 * estimate of its width in ems: a full-width character (Han, kana, Hangul, CJK punctuation and
 * full-width forms) is one em in every CJK face, the rest is estimated (a Latin letter about
 * 0.55 em). Breaks go between two characters of which one is full-width, never before closing
 * punctuation or small kana nor after opening brackets (the basic kinsoku rules), or after a
 * space; the lines come out about equal, as libass's own smart wrapping makes them.
 */

const FULL_WIDTH = /[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}\p{sc=Hangul}\u3000-\u303F\uFF01-\uFF60\uFFE0-\uFFE6]/u;
/** Never at the start of a line: closing punctuation, prolonged sound mark, small kana, iteration marks. */
const NO_LINE_START = new Set("、。，．・：；？！ー―…‥」』）〕］｝〉》】〙〗〟’”｠»,.!?:;)]}ぁぃぅぇぉっゃゅょゎゕゖァィゥェォッャュョヮヵヶ々ゝゞヽヾ〻");
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
    breaks.push(...lineBreaks(line, maxEm).map((offset) => offset + lineStart));
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
  const candidates: { offset: number; width: number }[] = [];
  let offset = 0;
  let width = 0;
  for (let i = 0; i < chars.length; i++) {
    if (i > 0 && allowed(i)) candidates.push({ offset, width });
    offset += chars[i]!.length;
    width += widths[i]!;
  }

  // About equal lines: for n lines, the k-th break is the candidate nearest k/n of the width;
  // one more line while a line would still be wider than maxEm (a long run without candidates).
  let best: number[] = [];
  for (let lines = Math.ceil(total / maxEm); lines <= chars.length; lines++) {
    const chosen: { offset: number; width: number }[] = [];
    for (let k = 1; k < lines; k++) {
      const goal = (k * total) / lines;
      const after = chosen.at(-1)?.width ?? 0;
      let nearest: { offset: number; width: number } | undefined;
      for (const c of candidates) {
        if (c.width <= after) continue;
        if (nearest === undefined || Math.abs(c.width - goal) < Math.abs(nearest.width - goal)) nearest = c;
      }
      if (nearest) chosen.push(nearest);
    }
    best = chosen.map((c) => c.offset);
    const edges = [0, ...chosen.map((c) => c.width), total];
    if (edges.every((edge, i) => i === 0 || edge - edges[i - 1]! <= maxEm) || chosen.length < lines - 1) break;
  }
  return best;
}

/** `text` with a line break inserted at each offset (ascending); a space before a break goes. */
export function insertLineBreaks(text: string, offsets: readonly number[], from = 0): string {
  let out = "";
  let at = 0;
  for (const offset of offsets) {
    const local = offset - from;
    if (local <= 0 || local > text.length) continue;
    out += text.slice(at, local).replace(/ $/, "") + "\n";
    at = local;
  }
  return out + text.slice(at);
}
