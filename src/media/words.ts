/**
 * Timed words back into text. Chinese, Japanese and Thai write words without spaces between
 * them, so a speech engine's word list joined with spaces would read "日本 語 です"; a space goes
 * only where one of the two neighbours is written with spaces (Latin, Cyrillic, Korean...).
 */
const UNSPACED = /[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}\p{scx=Thai}\u3000-\u303F\uFF00-\uFFEF]/u;

export function joinWords(words: readonly string[]): string {
  let text = "";
  for (const word of words) {
    if (text !== "" && word !== "" && !(UNSPACED.test(text.at(-1)!) || UNSPACED.test(word[0]!))) text += " ";
    text += word;
  }
  return text;
}

/** The runtime's word segmenter (ICU dictionaries for Chinese and Japanese): karaoke's words, and where long CJK lines break (wrap.ts). */
export const wordSegmenter = new Intl.Segmenter(undefined, { granularity: "word" });

/**
 * The words of a caption's text: split at white space, and a piece holding Chinese, Japanese or
 * Thai cut into its words by the runtime's word segmenter (ICU dictionaries), punctuation kept
 * with the word before it, so karaoke can time and highlight them one by one.
 */
export function splitWords(text: string): string[] {
  return text
    .split(/\s+/)
    .filter((piece) => piece !== "")
    .flatMap((piece) => {
      if (!UNSPACED.test(piece)) return [piece];
      const words: string[] = [];
      for (const { segment, isWordLike } of wordSegmenter.segment(piece)) {
        if (isWordLike || words.length === 0) words.push(segment);
        else words[words.length - 1] += segment;
      }
      return words;
    });
}

/** A word that ends a sentence (closing quotes and brackets after the mark allowed). */
export const SENTENCE_END = /[.!?…。！？]["»”')\]」』]*$/;
