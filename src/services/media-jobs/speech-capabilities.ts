/**
 * What the speech engines of the configured backend can do (languages, voices), read from its
 * capabilities endpoint (the document is packages/wire/src/protocol.ts: CapabilitiesSchema) and cached
 * briefly per isolate. Tool calls use it to refuse, before any debit, a language no engine handles.
 */
import { CapabilitiesSchema } from "@media-credits/wire/protocol";
import type { Env } from "../../env";

export interface SpeechCapabilities {
  transcription: { languages: string[]; engine?: string };
  tts: { voices: string[]; languages: string[]; clone?: string };
  voiceChange?: { resynthesisLanguages: string[] };
}

const TTL_MS = 60_000;
let cached: { at: number; url: string; value: SpeechCapabilities } | undefined;

export type CapabilityLookup =
  | { state: "none" }
  | { state: "unreachable" }
  | { state: "known"; value: SpeechCapabilities };

export async function speechCapabilities(env: Env, now = Date.now()): Promise<CapabilityLookup> {
  if (!env.BACKEND_URL || !env.BACKEND_SECRET) return { state: "none" };
  if (cached && cached.url === env.BACKEND_URL && now - cached.at < TTL_MS)
    return { state: "known", value: cached.value };
  try {
    const response = await fetch(`${env.BACKEND_URL.replace(/\/$/, "")}/v1/capabilities`, {
      headers: { authorization: `Bearer ${env.BACKEND_SECRET}` },
    });
    if (!response.ok) return { state: "unreachable" };
    // A document that does not follow the protocol is treated as no answer (jobs fail and are refunded).
    const parsed = CapabilitiesSchema.safeParse(await response.json());
    if (!parsed.success) return { state: "unreachable" };
    const body = parsed.data;
    const value: SpeechCapabilities = {
      transcription: { languages: body.transcription.languages, engine: body.transcription.engine },
      tts: { voices: body.tts.voices, languages: body.tts.languages ?? [], clone: body.tts.clone },
      voiceChange: body.voiceChange,
    };
    cached = { at: now, url: env.BACKEND_URL, value };
    return { state: "known", value };
  } catch {
    return { state: "unreachable" };
  }
}
