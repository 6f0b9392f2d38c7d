/**
 * Tests that need a program or a model the machine may lack skip without it on a developer's
 * machine, saying which. On CI (`CI=true`) a missing engine fails the file instead:
 * scripts/setup-system.sh installs every one of them, so a skip there would hide a broken install
 * behind a green run. The exceptions are the engines of CI_MAY_LACK, each with its reason.
 * No imports: the e2e tests (Node) and the backend's tests (its own vitest) both use it.
 */

/** Every engine a test may skip on, and how a machine gets it. */
const ENGINES = {
  pocketsphinx: "Debian pocketsphinx + pocketsphinx-en-us (scripts/setup-system.sh)",
  "pocketsphinx-testdata": "Debian pocketsphinx-testdata (scripts/setup-system.sh)",
  pico: "pico2wave (Debian non-free libttspico-utils) and rubberband-cli (scripts/setup-system.sh)",
  flite: "Debian flite (scripts/setup-system.sh)",
  "whisper-model": "a whisper.cpp ggml model at WHISPER_MODEL_PATH",
} as const;

export type Engine = keyof typeof ENGINES;

/**
 * Engines CI may lack, with why: their tests skip there too. Keep this list short; every entry
 * is a part of the product CI does not check.
 */
export const CI_MAY_LACK: Partial<Record<Engine, string>> = {
  "whisper-model":
    "no npm or Debian package ships whisper.cpp ggml weights and CI downloads none; the binding and start-up checks still run without one",
};

/**
 * Whether to skip the tests that need `engine`: false when it is available; true when it is
 * missing on a developer's machine or is one CI may lack. Throws when CI=true and it is missing
 * otherwise, which fails the file. Use as `describe.skipIf(skipUnlessEngine("flite", hasFlite))`.
 */
export function skipUnlessEngine(engine: Engine, available: boolean): boolean {
  if (available) return false;
  const ci = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.CI === "true";
  const allowance = CI_MAY_LACK[engine];
  if (ci && allowance === undefined) {
    throw new Error(`${engine} is missing and CI=true: CI must run these tests. Install ${ENGINES[engine]}.`);
  }
  console.warn(
    `skipping the tests that need ${engine} (missing: ${ENGINES[engine]})${allowance ? `; CI may lack it: ${allowance}` : ""}`,
  );
  return true;
}
