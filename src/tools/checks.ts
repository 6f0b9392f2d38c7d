/** Checks of tool calls that need more than the schema: the account's voice, the engines' languages, SRT syntax. */
import { invalidRequest } from "../errors";
import { cuesFromSrt, SrtError } from "../media/captions";
import type { ToolContext } from "./definition";

export async function requireClone(voice: string, context: ToolContext) {
  if (voice === "clone" && !(await context.hasClonedVoice())) {
    throw invalidRequest(
      "voice: clone needs a cloned voice registered on the account (POST /api/v1/voices/clone, or the Voice page of the developer area).",
    );
  }
}

/**
 * Automatic transcription needs an engine: with none configured, the call is refused before any
 * debit. A backend that is configured but does not answer right now is not a reason to refuse,
 * nor is a language its engines lack (the schema accepts every ISO 639-1 code): the job then
 * fails with the engine's own message and is refunded.
 */
export async function checkTranscriptionAvailable(context: ToolContext, field = "language") {
  const lookup = await context.speech();
  if (lookup.state === "unreachable") return;
  const languages = lookup.state === "known" ? lookup.value.transcription.languages : [];
  if (languages.length === 0) {
    throw invalidRequest(
      field === "srtContent"
        ? "srtContent: Required, automatic transcription is not available on this server."
        : `${field}: transcription is not available on this server.`,
    );
  }
}

/**
 * Karaoke shows a cue once per word, the whole cue each time, so its script grows with words x
 * length per cue; past this many characters (a 4-hour video's SRT with eight words per cue makes
 * about 2 million) the burn-in would not fit a Worker's memory, and the call is refused instead.
 */
export const MAX_KARAOKE_CHARACTERS = 8_000_000;

/** The same parser the burn-in uses, so what is accepted here renders later. */
export async function checkSrt(srt: string | undefined, karaoke = false) {
  if (srt === undefined) return;
  let cues;
  try {
    cues = await cuesFromSrt(srt);
  } catch (error) {
    if (error instanceof SrtError)
      throw invalidRequest(error.message.startsWith("srtContent") ? error.message : `srtContent: ${error.message}`);
    throw error;
  }
  if (!karaoke) return;
  const shown = cues.reduce((sum, cue) => sum + Math.max(1, cue.words?.length ?? 1) * cue.text.length, 0);
  if (shown > MAX_KARAOKE_CHARACTERS) {
    throw invalidRequest(
      `srtContent: too long for karaoke, which shows each cue once per word (${shown} characters in all, at most ${MAX_KARAOKE_CHARACTERS}); use shorter cues or karaokeMode none.`,
    );
  }
}
