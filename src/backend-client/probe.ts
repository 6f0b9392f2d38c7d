/**
 * When the headers of an accepted container do not give its duration within the ranged-read
 * budget, the backend measures it by reading the whole object with native ffmpeg (through a
 * signed URL). Without a backend, the probe's own 400 stands.
 */
import type { Env } from "../env";
import { backendConfigured } from "./client";
import { FullProbeSchema } from "@media-credits/wire/protocol";
import { mediaUrl } from "./transfer-urls";
import { UnsupportedMediaError, type DurationUnknownError, type ProbeResult } from "../media/types";

export function canProbeOnBackend(env: Env): boolean {
  return backendConfigured(env) && Boolean(env.PUBLIC_BASE_URL || env.R2_ACCESS_KEY_ID);
}

export async function probeOnBackend(env: Env, key: string, unknown: DurationUnknownError): Promise<ProbeResult> {
  const url = await mediaUrl(env, key, "GET", 15 * 60 * 1000);
  let response: Response;
  try {
    response = await fetch(`${env.BACKEND_URL!.replace(/\/$/, "")}/v1/probe`, {
      method: "POST",
      headers: { authorization: `Bearer ${env.BACKEND_SECRET}`, "content-type": "application/json" },
      body: JSON.stringify({ url }),
    });
  } catch {
    throw unknown;
  }
  if (response.status === 422) {
    const body = (await response.json()) as { message?: string };
    throw new UnsupportedMediaError(`The file cannot be read: ${body.message ?? "unreadable"}.`);
  }
  if (!response.ok) throw unknown;
  const parsed = FullProbeSchema.safeParse(await response.json().catch(() => null));
  if (!parsed.success) throw unknown;
  const probe = parsed.data;
  if (!probe.hasAudio && !probe.hasVideo)
    throw new UnsupportedMediaError("The file contains neither an audio nor a video stream.");
  if (!(probe.durationMs > 0)) throw unknown;
  const kind = probe.hasVideo ? "video" : "audio";
  return {
    kind,
    container: unknown.container,
    mimeType: unknown.mimeTypes[kind] ?? unknown.mimeTypes.audio ?? "application/octet-stream",
    durationMs: probe.durationMs,
    hasAudio: probe.hasAudio,
    hasVideo: probe.hasVideo,
    ...(probe.videoCodec ? { videoCodec: probe.videoCodec } : {}),
    ...(probe.audioCodec ? { audioCodec: probe.audioCodec } : {}),
    ...(probe.width ? { width: probe.width, height: probe.height } : {}),
    ...(probe.hasVideo && probe.rotation ? { rotation: probe.rotation } : {}),
    ...(probe.hasVideo && probe.frameRate ? { frameRate: probe.frameRate } : {}),
    ...(probe.hasAudio && probe.audioChannels ? { audioChannels: probe.audioChannels } : {}),
  };
}
