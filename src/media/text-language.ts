/**
 * The language of a text to speak, French first: the contract's text-to-speech takes no
 * language, so it is guessed from the text, among the languages the speech engines speak
 * (backend/src/speech/local-tts.ts: French, English, German, Spanish, Italian).
 *
 * Each language scores its common short words, which any sentence of it holds, and the letters
 * only it writes (ß and ä in German, ñ and ¿ in Spanish, ç and œ in French...). A shared accent
 * decides nothing alone: "the café downtown" is English, where any accent used to mean French.
 * No evidence at all (digits, names) keeps French, the catalogue voices' own language.
 */
export type TextLanguage = "fr" | "en" | "de" | "es" | "it";

const COMMON_WORDS: Record<TextLanguage, readonly string[]> = {
  fr: [
    "le",
    "la",
    "les",
    "des",
    "une",
    "est",
    "et",
    "pour",
    "dans",
    "que",
    "qui",
    "pas",
    "vous",
    "nous",
    "je",
    "avec",
    "sur",
    "ce",
    "bonjour",
    "au",
    "aux",
    "du",
    "mais",
    "sont",
    "ne",
    "il",
    "elle",
    "très",
    "où",
    "à",
    "de",
    "un",
    "ceci",
    "cette",
    "c'est",
    "tout",
    "s'il",
    "plaît",
  ],
  en: [
    "the",
    "and",
    "is",
    "are",
    "to",
    "of",
    "you",
    "we",
    "with",
    "this",
    "that",
    "for",
    "it",
    "hello",
    "be",
    "was",
    "have",
    "will",
    "your",
    "my",
    "our",
    "they",
    "what",
    "please",
    "from",
    "at",
    "by",
    "all",
    "so",
    "can",
  ],
  de: [
    "der",
    "die",
    "das",
    "und",
    "ist",
    "ich",
    "nicht",
    "sie",
    "wir",
    "ein",
    "eine",
    "einen",
    "mit",
    "auf",
    "für",
    "zu",
    "den",
    "dem",
    "es",
    "sind",
    "wie",
    "auch",
    "guten",
    "möchte",
    "gerne",
    "bitte",
    "heute",
    "haben",
    "aber",
    "noch",
  ],
  es: [
    "el",
    "los",
    "las",
    "y",
    "es",
    "que",
    "de",
    "en",
    "un",
    "una",
    "por",
    "para",
    "con",
    "no",
    "está",
    "usted",
    "cómo",
    "qué",
    "buenos",
    "días",
    "hola",
    "pero",
    "muy",
    "del",
    "al",
    "gracias",
    "yo",
    "su",
    "hoy",
    "quiero",
  ],
  it: [
    "il",
    "lo",
    "gli",
    "e",
    "è",
    "che",
    "di",
    "un",
    "una",
    "per",
    "con",
    "non",
    "sono",
    "come",
    "sta",
    "buongiorno",
    "ciao",
    "grazie",
    "della",
    "del",
    "anche",
    "questo",
    "molto",
    "oggi",
    "vorrei",
    "mi",
    "ti",
    "ho",
    "ha",
    "ma",
  ],
};

/** Letters one language writes and the others (of these five) do not, or hardly; English has none. */
const OWN_LETTERS: Partial<Record<TextLanguage, RegExp>> = {
  fr: /[çœæêâîôûëïÿ]/g,
  de: /[ßäö]/g,
  es: /[ñ¿¡áíóú]/g,
  it: /[ìò]/g,
};
const LETTER_WEIGHT = 2;

export function guessTextLanguage(text: string): TextLanguage {
  const sample = text.slice(0, 2000).toLowerCase();
  const words = sample.split(/[^\p{L}']+/u).filter(Boolean);
  let best: TextLanguage = "fr";
  let bestScore = 0;
  for (const language of Object.keys(COMMON_WORDS) as TextLanguage[]) {
    const common = new Set(COMMON_WORDS[language]);
    const own = OWN_LETTERS[language];
    const letters = own ? (sample.match(own)?.length ?? 0) : 0;
    const score = words.filter((word) => common.has(word)).length + LETTER_WEIGHT * letters;
    // Ties keep the earlier language: French first.
    if (score > bestScore) {
      best = language;
      bestScore = score;
    }
  }
  return best;
}
