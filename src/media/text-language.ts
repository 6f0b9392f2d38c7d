/**
 * The language of a text to speak, French first: the contract's text-to-speech takes no
 * language, so it is guessed from accents and common words; English when the text reads as English.
 */
export function guessTextLanguage(text: string): "fr" | "en" {
  const sample = text.slice(0, 2000).toLowerCase();
  if (/[àâçéèêëîïôûùüÿœæ]/.test(sample)) return "fr";
  const words = sample.split(/[^a-z']+/);
  const count = (list: string[]) => words.filter((w) => list.includes(w)).length;
  const french = count(["le", "la", "les", "des", "une", "un", "est", "et", "pour", "dans", "que", "qui", "pas", "vous", "nous", "je", "avec", "sur", "ce", "bonjour"]);
  const english = count(["the", "and", "is", "are", "to", "of", "you", "we", "with", "this", "that", "for", "in", "it", "hello", "on", "be", "was"]);
  return english > french ? "en" : "fr";
}
