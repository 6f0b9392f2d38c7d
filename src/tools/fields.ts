/** Request fields several tools share (strict types: "4" is not 4). */
import { z } from "@hono/zod-openapi";
import type { MediaKind } from "../media/probe";
import type { StoredUpload } from "../services/uploads";
import type { InputRef } from "./definition";

/** Ids are at most 64 characters: a longer one is refused before any lookup. */
export const uploadId = z.string().min(1).max(64).openapi({ description: "uploadId returned by POST /api/v1/uploads (at most 64 characters)", example: "upl_01JD3Y0QZ8W1T0X7M4R2N6C9PB" });

export const hexColor = (fallback: string, description: string) =>
  z
    .string()
    .regex(/^#[0-9A-Fa-f]{6}$/, "must be a colour #RRGGBB")
    .default(fallback)
    .openapi({ description, example: fallback });

export const percent = (fallback: number, description: string) => z.number().min(0).max(100).default(fallback).openapi({ description });

export const voice = z.enum(["lea", "camille", "thomas", "gilles", "clone"]).default("lea").openapi({
  description: "Catalogue voice, or `clone` for the account's cloned voice (400 when none is registered)",
});

export const mediaKinds: MediaKind[] = ["video", "audio"];
export const videoOnly: MediaKind[] = ["video"];

export const totalMs = (uploads: StoredUpload[]) => uploads.reduce((sum, u) => sum + u.durationMs, 0);

export const singleInput = (id: string, accepts: MediaKind[], needsAudio = false): InputRef[] => [{ field: "uploadId", uploadId: id, accepts, needsAudio }];
