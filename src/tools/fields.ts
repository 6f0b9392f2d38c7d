/** Request fields several tools share (strict types: "4" is not 4). */
import * as z from "zod";
import "../lib/zod-openapi";
import ISO6391 from "iso-639-1";
import { CATALOGUE_VOICES } from "@media-credits/wire/protocol";
import type { MediaKind } from "../media/probe";
import type { StoredUpload } from "../services/media-jobs/uploads";
import type { InputRef, ProducedMedia } from "./definition";

/** Ids are at most 64 characters: a longer one is refused before any lookup. */
export const uploadId = z.string().min(1).max(64).openapi({
  description: "uploadId returned by POST /api/v1/uploads (at most 64 characters)",
  example: "upl_01JD3Y0QZ8W1T0X7M4R2N6C9PB",
});

export const hexColor = (fallback: string, description: string) =>
  z
    .string()
    .regex(/^#[0-9A-Fa-f]{6}$/, "must be a colour #RRGGBB")
    .default(fallback)
    .openapi({ description, example: fallback });

export const percent = (fallback: number, description: string) =>
  z.number().min(0).max(100).default(fallback).openapi({ description });

export const voice = z
  .enum([...CATALOGUE_VOICES, "clone"])
  .default("lea")
  .openapi({
    description: "Catalogue voice, or `clone` for the account's cloned voice (400 when none is registered)",
  });

/**
 * A language as an ISO 639-1 code (`fr`; any case, the engines read `FR` as `fr`), optionally with a
 * region or script subtag (`fr-CA`) when `subtags` is set. Only codes of the standard's list pass:
 * `xx` or `french` are 400 naming the field. Whether this server's engines speak the language is
 * the job's business (a job in a language they lack fails and is refunded), so a client written
 * against the contract never meets a 400 for a valid code.
 */
export const languageCode = (options: { auto?: boolean; subtags?: boolean; fallback: string }) =>
  z
    .string()
    .refine(
      (value) => {
        if (options.auto && value === "auto") return true;
        const [base, ...rest] = value.toLowerCase().split(/[-_]/);
        return (
          ISO6391.validate(base ?? "") &&
          (rest.length === 0 || (options.subtags === true && rest.every((part) => /^[a-z0-9]{2,8}$/.test(part))))
        );
      },
      {
        message: `must be an ISO 639-1 code${options.subtags ? " (optionally with a region, fr-CA)" : ""}${options.auto ? " or auto" : ""}`,
      },
    )
    .default(options.fallback);

export const mediaKinds: MediaKind[] = ["video", "audio"];
export const videoOnly: MediaKind[] = ["video"];

export const totalMs = (uploads: StoredUpload[]) => uploads.reduce((sum, u) => sum + u.durationMs, 0);

export const singleInput = (id: string, accepts: MediaKind[], needsAudio = false): InputRef[] => [
  { field: "uploadId", uploadId: id, accepts, needsAudio },
];

/** The first input's media as a result keeps it, with what the tool changes (a pipeline's next input). */
export function sameMedia(
  upload: StoredUpload,
  changes: Partial<Extract<ProducedMedia, { kind: "video" | "audio" }>> = {},
) {
  const { probe } = upload;
  return {
    kind: upload.kind === "audio" ? ("audio" as const) : ("video" as const),
    durationMs: upload.durationMs,
    hasAudio: probe.hasAudio,
    hasVideo: probe.hasVideo,
    container: upload.container,
    width: probe.width,
    height: probe.height,
    frameRate: probe.frameRate,
    audioChannels: probe.audioChannels,
    ...changes,
  };
}
