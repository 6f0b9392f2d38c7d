/**
 * Names people give (API keys, brands, reviewers) are shown to others and in lists. The Unicode
 * embedding, override and isolate controls (U+202A-U+202E, U+2066-U+2069) can make one read as
 * something else ("gpj.exe" shown as "exe.jpg"), and a name needs none of them: removed, and the
 * rest trimmed. Right-to-left text itself, and the LRM/RLM marks, are kept.
 */
const DIRECTION_CONTROLS = /[\u202A-\u202E\u2066-\u2069]/g;

export const displayName = (raw: string): string => raw.replace(DIRECTION_CONTROLS, "").trim();
