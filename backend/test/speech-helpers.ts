/** Speech test helpers: word error rate, engine availability, real engines (no mocks). */
import { existsSync } from "node:fs";
import { spawnSync } from "node:child_process";

/** Skips on a missing engine, fails on CI instead (one rule for the whole repository). */
export { skipUnlessEngine } from "../../test/helpers/engines.ts";

/** Lower-case words without punctuation. */
export function words(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}' ]+/gu, " ")
    .split(/\s+/)
    .filter(Boolean);
}

/** Word error rate: Levenshtein distance over words / reference length. */
export function wer(reference: string, hypothesis: string): number {
  const ref = words(reference);
  const hyp = words(hypothesis);
  const row = Array.from({ length: hyp.length + 1 }, (_, j) => j);
  for (let i = 1; i <= ref.length; i++) {
    let diagonal = row[0]!;
    row[0] = i;
    for (let j = 1; j <= hyp.length; j++) {
      const above = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, diagonal + (ref[i - 1] === hyp[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[hyp.length]! / Math.max(1, ref.length);
}

function onPath(program: string): boolean {
  return spawnSync("sh", ["-c", `command -v ${program}`]).status === 0;
}

export const HAS_POCKETSPHINX =
  onPath("pocketsphinx_continuous") && existsSync("/usr/share/pocketsphinx/model/en-us/en-us");
export const HAS_PICO = onPath("pico2wave") && onPath("rubberband");
export const TESTDATA = "/usr/share/pocketsphinx/test/data";
export const HAS_TESTDATA = existsSync(`${TESTDATA}/goforward.raw`);

/** 3-6 s English sentences. */
export const SENTENCE_EN = "The quick brown fox jumps over the lazy dog near the river bank.";
export const SENTENCE_EN_2 = "Please call me tomorrow morning after the meeting.";
export const SENTENCE_FR = "Bonjour, je vous lis ce texte à voix haute pour le tester.";
