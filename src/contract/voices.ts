/**
 * Voices: the catalogue (one list, the backend protocol's), the account's cloned voice as REST
 * shows it, and the list the connector gives assistants.
 */
import { z } from "@hono/zod-openapi";
import { CATALOGUE_VOICES } from "@media-credits/wire/protocol";

export { CATALOGUE_VOICES };

export const ClonedVoiceSchema = z
  .object({
    voice: z.literal("clone"),
    status: z.string().openapi({ description: "ready: usable as voice clone" }),
    createdAt: z.string().openapi({ description: "ISO 8601" }),
  })
  .openapi("ClonedVoice");

export const ClonedVoiceDeleted = z.object({ voice: z.literal("clone"), status: z.literal("deleted") });

export const RegisterVoiceInput = z.object({ uploadId: z.string().min(1).max(64) });

export const VoiceListSchema = z.object({
  voices: z.array(z.object({ voice: z.string(), kind: z.enum(["catalogue", "clone"]), status: z.string() })),
});

/** The voices a speaking tool accepts: the catalogue, and clone when the account has one. */
export function voiceList(clone: { status: string } | null) {
  return [
    ...CATALOGUE_VOICES.map((voice) => ({ voice, kind: "catalogue" as const, status: "ready" })),
    ...(clone ? [{ voice: "clone", kind: "clone" as const, status: clone.status }] : []),
  ];
}

/** The catalogue in prose: "lea, camille, thomas, gilles". */
export const catalogueText = CATALOGUE_VOICES.join(", ");
