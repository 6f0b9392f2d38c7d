/**
 * Turns a transcript (timed words from a speech engine) into the files `transcribe` sells:
 * plain text, or SRT with one cue per sentence (`phrase`) or per word (`mot`). Text is kept as
 * recognised. Engines without punctuation (pocketsphinx) give no sentence marks, so their
 * sentences are cut at pauses, and such a cue never grows past a readable length.
 */
import type { TimedWord } from "./captions";
import { joinWords, SENTENCE_END } from "./words";

export interface Transcript {
  language: string;
  text: string;
  words: TimedWord[];
}

/** A pause this long ends a sentence when the engine gives no punctuation. */
export const SENTENCE_PAUSE_SECONDS = 0.6;
/** Readable maximum of one phrase cue, when the engine gives no punctuation. */
export const MAX_CUE_WORDS = 14;
export const MAX_CUE_SECONDS = 7;

function cleanWords(words: TimedWord[]): TimedWord[] {
  return words
    .map((w) => ({ text: w.text.trim(), start: Math.max(0, w.start), end: Math.max(w.start, w.end) }))
    .filter((w) => w.text !== "" && Number.isFinite(w.start) && Number.isFinite(w.end))
    .sort((a, b) => a.start - b.start);
}

/**
 * Sentences, one group each. When the engine punctuates, a sentence ends at its punctuation and
 * only there (the contract: complete sentences, one entry each); without any punctuation,
 * pauses and a readable length stand in for the sentence ends it cannot give.
 */
export function phrases(words: TimedWord[]): TimedWord[][] {
  const cleaned = cleanWords(words);
  const punctuated = cleaned.some((word) => SENTENCE_END.test(word.text));
  const groups: TimedWord[][] = [];
  for (const word of cleaned) {
    const group = groups.at(-1);
    const last = group?.at(-1);
    const startsNew =
      !group ||
      !last ||
      SENTENCE_END.test(last.text) ||
      (!punctuated &&
        (word.start - last.end >= SENTENCE_PAUSE_SECONDS ||
          group.length >= MAX_CUE_WORDS ||
          word.end - group[0].start > MAX_CUE_SECONDS));
    if (startsNew) groups.push([word]);
    else group.push(word);
  }
  return groups;
}

function srtTime(seconds: number): string {
  const ms = Math.max(0, Math.round(seconds * 1000));
  const pad = (n: number, width = 2) => String(n).padStart(width, "0");
  return `${pad(Math.floor(ms / 3_600_000))}:${pad(Math.floor(ms / 60_000) % 60)}:${pad(Math.floor(ms / 1000) % 60)},${pad(ms % 1000, 3)}`;
}

function srt(cues: { start: number; end: number; text: string }[]): string {
  return cues
    .map(
      (cue, i) => `${i + 1}\n${srtTime(cue.start)} --> ${srtTime(Math.max(cue.end, cue.start + 0.001))}\n${cue.text}\n`,
    )
    .join("\n");
}

/**
 * `mark` (a test key's TEST) stands in front of every cue as `[TEST] `, so no part of a test
 * key's transcript is usable as delivered, while its timing shows the integration works.
 */
export function transcriptToSrt(transcript: Transcript, mode: "phrase" | "mot", mark?: string): string {
  const cues =
    mode === "mot"
      ? cleanWords(transcript.words)
      : phrases(transcript.words).map((group) => ({
          start: group[0].start,
          end: group.at(-1)!.end,
          text: joinWords(group.map((w) => w.text)),
        }));
  return srt(mark === undefined ? cues : cues.map((cue) => ({ ...cue, text: `[${mark}] ${cue.text}` })));
}

/** `mark` (a test key's TEST): the text one sentence a line, each line starting with `[TEST] `. */
export function transcriptToText(transcript: Transcript, mark?: string): string {
  const sentences = () => phrases(transcript.words).map((g) => joinWords(g.map((w) => w.text)));
  if (mark !== undefined) {
    const lines = transcript.words.length > 0 ? sentences() : transcript.text.split(/\n+/);
    return `${lines
      .filter((line) => line.trim() !== "")
      .map((line) => `[${mark}] ${line.trim()}`)
      .join("\n")}\n`;
  }
  const text = transcript.text.trim() || sentences().join("\n");
  return `${text}\n`;
}
