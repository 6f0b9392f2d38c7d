/**
 * The encoder policy every media tool shares (convert, trim, merge, watermark, clean-audio):
 * encoder settings, stream mapping and the wasm heap each needs, so that both engines run the
 * same settings within the memory FACTS measured for ffmpeg.wasm.
 */
import type { ProbeResult } from "../types";

const MiB = 1024 * 1024;

/** What an audio-only or copy job needs: the heap ffmpeg.wasm starts with (FACTS: 32 MiB). */
export const BASE_WASM_HEAP_BYTES = 32 * MiB;

export type VideoEncoder = "x264" | "vp8" | "mpeg4";
export type AudioEncoder = "aac" | "opus" | "mp3" | "vorbis" | "flac" | "pcm";

/**
 * Video encoder settings.
 *
 * - x264: `veryfast` with `-tune zerolatency`, which turns off the lookahead, MB-tree and
 *   B-frames. The stock `veryfast` buffers 10+ frames of lookahead: 115 MiB of wasm heap at
 *   720p (FACTS), which does not fit a 128 MB isolate; without them it needs 46 MiB at 720p
 *   (measured here: 32 MiB at 320x240, 80 MiB at 1080p) for a file ~40 % smaller than
 *   `ultrafast`. `yuv420p` (8-bit 4:2:0) is the only pixel format every H.264 player decodes.
 * - VP8 (libvpx): VP9 encoding crashes ffmpeg.wasm (FACTS), so WebM is VP8 on both engines.
 *   Realtime deadline at cpu-used 6 runs ~2.3x faster than `good` for the same size and
 *   PSNR within 0.05 dB on test content; constant quality capped by a bit rate that scales
 *   with the frame size, as libvpx requires a target rate in CRF mode.
 * - MPEG-4 Part 2 with the XVID tag: what AVI players have decoded for twenty years (H.264 in
 *   AVI is a non-standard mapping that several players and editors refuse); q 3 is visually
 *   close to the source at 3-5x the size of H.264.
 */
/**
 * AVI stores no start times. ffmpeg's default shift of negative timestamps (the MP3 encoder's
 * priming begins before 0) moved every video frame after the first one frame later: a 1 fps
 * source played 1 s behind its sound and lasted 7 s instead of 6. Unshifted, the pictures keep
 * their times and the sound plays the encoder's 25 ms of priming first.
 */
export const AVI_TIMING = ["-avoid_negative_ts", "disabled"] as const;

/**
 * Every frame at its own time. MP4 and MOV otherwise default to a constant rate, the stream's
 * guessed one: phone video, whose rate varies, lost or repeated frames (24 + 25 + 30 fps parts
 * came out at 24 fps, 74 frames of 79; 24 + 60 fps at its 120 fps guess, 363 of 126). `vfr`
 * alone still ticks the encoder's clock at that guess and drops frames sharing a tick (an MKV of
 * 24 then 60 fps guessed at 42.2 fps: 101 of 126; an MP4 of timescale 600: 77 of 79), so the
 * encoder takes the source's own time base. A constant-rate source keeps its rate. Not for AVI,
 * which has no timestamps to carry it. Video only: on an audio encoder the source's time base
 * (1/1000 in Matroska and WebM) cannot carry a frame of 1024 or 960 samples, and half the audio
 * of a trimmed MKV, nearly all of a WebM's, was lost to rounding and discard padding.
 */
export const KEEP_FRAME_TIMES = ["-fps_mode:v", "vfr", "-enc_time_base:v", "-1"] as const;

export function videoEncoderArgs(encoder: VideoEncoder, width?: number, height?: number): string[] {
  switch (encoder) {
    case "x264":
      return [
        "-c:v",
        "libx264",
        "-preset",
        "veryfast",
        "-tune",
        "zerolatency",
        "-crf",
        "23",
        "-pix_fmt",
        "yuv420p",
        ...KEEP_FRAME_TIMES,
      ];
    case "vp8": {
      const pixels = (width ?? 1280) * (height ?? 720);
      const maxRate = Math.max(500_000, Math.round(pixels * 2.5));
      return [
        "-c:v",
        "libvpx",
        "-deadline",
        "realtime",
        "-cpu-used",
        "6",
        "-crf",
        "10",
        "-b:v",
        String(maxRate),
        "-auto-alt-ref",
        "0",
        "-lag-in-frames",
        "0",
        "-pix_fmt",
        "yuv420p",
        ...KEEP_FRAME_TIMES,
        // Native libvpx with its default threads ran 5.7x slower than one thread on 2 cores (bench/README.md).
        "-threads",
        "1",
      ];
    }
    case "mpeg4":
      return ["-c:v", "mpeg4", "-vtag", "XVID", "-q:v", "3", "-pix_fmt", "yuv420p"];
  }
}

/**
 * Audio encoder settings. MP3 is constant bit rate because players of AVI (its main use here)
 * mis-seek and drift on VBR MP3; sample rates and channel layouts an encoder does not take
 * (Opus at 44.1 kHz, LAME with 5.1) are converted by ffmpeg's automatic negotiation.
 */
export function audioEncoderArgs(encoder: AudioEncoder): string[] {
  switch (encoder) {
    case "aac":
      return ["-c:a", "aac", "-b:a", "160k"];
    case "opus":
      return ["-c:a", "libopus", "-b:a", "128k"];
    case "mp3":
      return ["-c:a", "libmp3lame", "-b:a", "192k"];
    case "vorbis":
      return ["-c:a", "libvorbis", "-q:a", "5"];
    case "flac":
      return ["-c:a", "flac"];
    case "pcm":
      return ["-c:a", "pcm_s16le"];
  }
}

/** Makes odd frame sizes even (4:2:0 chroma needs it); a no-op for even sizes. */
export const EVEN_SIZE_FILTER = "scale=trunc(iw/2)*2:trunc(ih/2)*2";

/** Extra heap per frame pixel, measured on ffmpeg.wasm at 320x240, 720p and 1080p. */
const HEAP_BYTES_PER_PIXEL: Record<VideoEncoder, number> = { x264: 24, vp8: 34, mpeg4: 8 };
/**
 * Floors per encoder, the FACTS figures at 720p (x264 without lookahead 55 MiB, VP8 66.5 MiB,
 * MPEG-4 like x264 ultrafast 46 MiB): small frames need less, but routing reads a heap above
 * 40 MiB as "re-encodes video" when it estimates CPU time, so a re-encode never reports less.
 */
const HEAP_FLOOR_BYTES: Record<VideoEncoder, number> = { x264: 55 * MiB, vp8: 67 * MiB, mpeg4: 46 * MiB };

/**
 * Wasm heap a job needs: the 32 MiB ffmpeg.wasm starts with plus the encoder's frame buffers
 * (measured: x264 zerolatency 46 MiB at 720p and 80 MiB at 1080p, VP8 realtime 55 and 99 MiB,
 * MPEG-4 32 and 46 MiB), never below the encoder's floor; 720p when the size is unknown.
 * `extraBytes` covers what else the graph holds (decoders of merged inputs, overlay layers).
 */
export function wasmHeapEstimate(
  encoder: VideoEncoder | undefined,
  width?: number,
  height?: number,
  extraBytes = 0,
): number {
  if (encoder === undefined) return BASE_WASM_HEAP_BYTES + extraBytes;
  const pixels = (width ?? 1280) * (height ?? 720);
  const measured = BASE_WASM_HEAP_BYTES + Math.ceil(pixels * HEAP_BYTES_PER_PIXEL[encoder]) + extraBytes;
  return Math.max(HEAP_FLOOR_BYTES[encoder], measured);
}

/** `0.5` -> "0.5", `1/3` -> "0.333333": seconds for ffmpeg, never in exponent notation. */
export function seconds(value: number): string {
  const fixed = value.toFixed(6).replace(/0+$/, "").replace(/\.$/, "");
  return fixed === "-0" ? "0" : fixed;
}

/**
 * Maps the first real video stream (`V`: not cover art) and the first audio stream; an
 * audio-only input maps its audio alone, so cover art never turns it into a video.
 */
export function streamMaps(probe: ProbeResult, inputIndex = 0): string[] {
  if (isAudioOnly(probe)) return ["-map", `${inputIndex}:a:0`];
  return ["-map", `${inputIndex}:V:0`, "-map", `${inputIndex}:a:0?`];
}

export function isAudioOnly(probe: ProbeResult): boolean {
  return probe.kind === "audio" || !probe.hasVideo;
}
