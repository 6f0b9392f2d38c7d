/**
 * Captions as timed cues: parsed from an SRT the user sends (`srtContent`, shown as is: its
 * cues, text and timing) or grouped from a transcript's timed words (`captionWords` at a time).
 * Karaoke modes time the words inside a cue in proportion to their length.
 */
import { parseText } from "media-captions";
import { joinWords, SENTENCE_END, splitWords } from "./words";

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
    cues.push({
      start: cue.startTime,
      end: cue.endTime,
      text: cleaned,
      words: proportionalWords(cleaned, cue.startTime, cue.endTime),
    });
  }
  // Cues without text are skipped; an SRT made only of them has nothing to show.
  if (cues.length === 0) throw new SrtError("no cue has text to show");
  return cues;
}

/** The words of `text` (split on white space), sharing [start, end] in proportion to their length. */
export function proportionalWords(text: string, start: number, end: number): TimedWord[] {
  const words = splitWords(text);
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
      SENTENCE_END.test(last.text);
    if (startsNew) groups.push([word]);
    else group.push(word);
  }
  const cues = groups.map((group) => ({
    start: group[0]!.start,
    end: group.at(-1)!.end,
    text: joinWords(group.map((word) => word.text)),
    words: group,
  }));
  cues.forEach((cue, i) => {
    const next = cues[i + 1];
    if (next !== undefined && next.start >= cue.end && next.start - cue.end <= CAPTION_PAUSE_SECONDS)
      cue.end = next.start;
  });
  return cues;
}
