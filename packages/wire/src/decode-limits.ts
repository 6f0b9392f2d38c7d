/**
 * What one file may make ffmpeg allocate. A container header can say 64x64 while the stream's
 * own parameter sets, or a frame halfway through, say 8K: the size that matters is the one the
 * decoder sees. So every decoder of an upload runs with `-max_pixels` (frames past it are never
 * allocated) and one allocation is capped by `-max_alloc`. Every refusal of a frame is found in
 * the log (OVERSIZED_FRAME) and fails the run, rather than delivering a result without its
 * picture; an output stream left empty is not the sign (a trim past the end of a shorter sound
 * track rightly leaves one), so `-abort_on empty_output_stream` is not used. On the backend
 * each ffmpeg process also runs under an address-space limit (prlimit), so one file cannot take
 * the container down.
 *
 * Shared by the Worker (src/) and the backend, runtime-neutral like protocol.ts.
 */

/** Frames of uploaded video: 8K (8192x4320, the coded size of any frame up to that). */
export const MAX_VIDEO_PIXELS = 8192 * 4320;
/** Uploaded images (watermarks): as the upload's header check allows (src/media/containers/image.ts). */
export const MAX_IMAGE_PIXELS = 50_000_000;
/** The largest single allocation: an 8K plane is 32 MiB; a long file's index tens of MiB. */
export const MAX_ALLOC_BYTES = 256 * 1024 * 1024;

/** Global options of every run over uploads. */
export const DECODE_GLOBAL_OPTIONS = ["-max_alloc", String(MAX_ALLOC_BYTES)] as const;

/** Options in front of the `-i` of an upload of this kind. */
export function decodeInputOptions(kind: "video" | "audio" | "image"): string[] {
  return ["-max_pixels", String(kind === "image" ? MAX_IMAGE_PIXELS : MAX_VIDEO_PIXELS)];
}

/**
 * `args` with the decode limits: the global options in front, and `-max_pixels` in front of the
 * `-i` of each upload (name -> its kind).
 */
export function withDecodeLimits(
  args: string[],
  uploads: Readonly<Record<string, "video" | "audio" | "image">>,
): string[] {
  const out: string[] = [...DECODE_GLOBAL_OPTIONS];
  for (let i = 0; i < args.length; i++) {
    const kind = args[i] === "-i" ? uploads[args[i + 1] ?? ""] : undefined;
    if (kind) out.push(...decodeInputOptions(kind));
    out.push(args[i]!);
  }
  return out;
}

/** ffmpeg's line when a decoder refuses a frame over `-max_pixels`. */
export const OVERSIZED_FRAME = /exceeds specified max pixel count/;

const megapixels = (pixels: number) => `${Math.round(pixels / 1e5) / 10} megapixels`;

/** Why a run that met oversized frames fails (the job's error). */
export const OVERSIZED_MESSAGE =
  `a frame of the video is larger than 8192x4320 (${megapixels(MAX_VIDEO_PIXELS)}), whatever its header says: such frames are not decoded. ` +
  "Scale the video down and upload it again";

/** A run whose decoder refused frames over the pixel cap; the job fails with this message, refunded. */
export class DecodeLimitError extends Error {
  override name = "DecodeLimitError";
  constructor() {
    super(OVERSIZED_MESSAGE);
  }
}

/** Whether a video's stated size is beyond what is decoded (refused at the call, before any debit). */
export const isOversizedVideo = (width: number | undefined, height: number | undefined) =>
  width !== undefined && height !== undefined && (width * height > MAX_VIDEO_PIXELS || Math.max(width, height) > 8192);
