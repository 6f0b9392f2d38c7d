/**
 * Names people give (API keys, brands, reviewers) are shown to others and in lists. The Unicode
 * embedding, override and isolate controls (U+202A-U+202E, U+2066-U+2069) can make one read as
 * something else ("gpj.exe" shown as "exe.jpg"), and a name needs none of them: removed, as are
 * control characters and broken surrogates, and the rest trimmed. Right-to-left text itself, and the LRM/RLM marks, are kept.
 */
const DIRECTION_CONTROLS = /[\u202A-\u202E\u2066-\u2069]/g;
/** C0 and C1 controls (NUL, tab, newline...): a name is one line, so each run reads as one space. */
const CONTROLS = /[\u0000-\u001F\u007F-\u009F]+/g;
/** Half of a surrogate pair alone is no character (stored, it came back as U+FFFD). */
const LONE_SURROGATES = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

export const displayName = (raw: string): string =>
  raw.replace(DIRECTION_CONTROLS, "").replace(LONE_SURROGATES, "").replace(CONTROLS, " ").trim();

/**
 * Length in Unicode code points: a letter or a single emoji is one, not two UTF-16 units (emoji
 * joined into one picture, such as a family or a flag, still count each of their code points).
 */
export const characterCount = (text: string): number => Array.from(text).length;
