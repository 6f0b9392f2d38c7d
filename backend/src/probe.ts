/**
 * Full-read probe for media whose headers do not state their duration (browser MediaRecorder
 * WebM, fragmented MP4, long VBR MP3): ffprobe for the streams, then a demux of every packet
 * (`-c copy -f null`, no decoding) for the exact end time. Reads the object through its signed
 * URL; only http(s) is allowed as input protocol.
 */
import { spawn } from "node:child_process";
import { type FullProbe, UPLOAD_INPUT_OPTIONS } from "@media-credits/wire/protocol";
import { decodeInputOptions } from "@media-credits/wire/decode-limits";
import { LIMITED_ENV, limitedCommand } from "./ffmpeg.ts";

export type { FullProbe } from "@media-credits/wire/protocol";

/** Only what a signed URL needs, and only an upload container's demuxer (no playlist naming other URLs). */
const PROTOCOLS = ["-protocol_whitelist", "http,https,tcp,tls,crypto", ...UPLOAD_INPUT_OPTIONS];

function run(
  program: string,
  args: string[],
  timeoutMs: number,
  memoryLimitBytes?: number,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    // Under the same address-space limit as the jobs' ffmpeg (ffmpeg.ts), and frames decoded within the pixel cap.
    const [limited, argv] = limitedCommand(program, args, memoryLimitBytes);
    const child = spawn(limited, argv, {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ...(memoryLimitBytes ? LIMITED_ENV : {}) },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString("utf8")).slice(-8000)));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export async function fullProbe(
  url: string,
  ffmpegPath: string,
  timeoutMs = 10 * 60 * 1000,
  memoryLimitBytes?: number,
): Promise<FullProbe> {
  const ffprobePath = ffmpegPath.replace(/ffmpeg$/, "ffprobe");
  const streams = await run(
    ffprobePath,
    ["-v", "error", ...PROTOCOLS, ...decodeInputOptions("video"), "-show_format", "-show_streams", "-of", "json", url],
    timeoutMs,
    memoryLimitBytes,
  );
  if (streams.code !== 0)
    throw new Error(`the file cannot be read (${streams.stderr.trim().split("\n").pop() ?? "ffprobe failed"})`);
  const parsed = JSON.parse(streams.stdout) as { format?: { duration?: string }; streams?: FfprobeStream[] };
  const list = parsed.streams ?? [];
  const video = list.find((s) => s.codec_type === "video");
  const audio = list.find((s) => s.codec_type === "audio");
  // ffprobe scans fragmented MP4 for its length; only containers with no length at all need the demux.
  const stated = Number(parsed.format?.duration);
  const durationMs =
    Number.isFinite(stated) && stated > 0
      ? Math.round(stated * 1000)
      : await demuxedDurationMs(url, ffmpegPath, timeoutMs, memoryLimitBytes);
  const frameRate = video && frameRateOf(video);
  const rotation = video && rotationOf(video);
  const quarterTurned = rotation === 90 || rotation === 270;
  return {
    durationMs,
    hasAudio: audio !== undefined,
    hasVideo: video !== undefined,
    videoCodec: video?.codec_name,
    audioCodec: audio?.codec_name,
    // As players show the picture (ffmpeg's autorotate applies the turn when it decodes).
    width: quarterTurned ? video?.height : video?.width,
    height: quarterTurned ? video?.width : video?.height,
    ...(rotation !== undefined ? { rotation } : {}),
    ...(frameRate !== undefined ? { frameRate } : {}),
    ...(audio?.channels && audio.channels <= 64 ? { audioChannels: audio.channels } : {}),
  };
}

interface FfprobeStream {
  codec_type?: string;
  codec_name?: string;
  width?: number;
  height?: number;
  channels?: number;
  /** The display matrix's rotation, counter-clockwise degrees (-90 for a phone's quarter turn). */
  side_data_list?: { side_data_type?: string; rotation?: number }[];
  /** Fractions such as "30000/1001"; "0/0" when unknown. */
  avg_frame_rate?: string;
  r_frame_rate?: string;
}

/** The clockwise quarter turn players apply, as the Worker's header probe reports it; undefined for none. */
export function rotationOf(stream: FfprobeStream): 90 | 180 | 270 | undefined {
  const degrees = stream.side_data_list?.find((data) => data.side_data_type === "Display Matrix")?.rotation;
  if (degrees === undefined || !Number.isFinite(degrees)) return undefined;
  const clockwise = ((-Math.round(degrees) % 360) + 360) % 360;
  return clockwise === 90 || clockwise === 180 || clockwise === 270 ? clockwise : undefined;
}

/** Frames per second above this are a time base mistaken for a rate (cover art reports 90000/1), not video. */
const MAX_FRAME_RATE = 1000;

/**
 * The average frame rate (frames / duration, what a variable-rate recording plays at), else the
 * base rate; rounded to 3 decimals like the Worker's header probe (29.97 for 30000/1001).
 */
function frameRateOf(stream: FfprobeStream): number | undefined {
  for (const fraction of [stream.avg_frame_rate, stream.r_frame_rate]) {
    const match = /^(\d+)\/(\d+)$/.exec(fraction ?? "");
    const rate = match ? Number(match[1]) / Number(match[2]) : Number.NaN;
    if (Number.isFinite(rate) && rate > 0 && rate <= MAX_FRAME_RATE) return Math.round(rate * 1000) / 1000;
  }
  return undefined;
}

/** End time of the last packet, by demuxing everything without decoding. */
async function demuxedDurationMs(
  url: string,
  ffmpegPath: string,
  timeoutMs: number,
  memoryLimitBytes?: number,
): Promise<number> {
  const demux = await run(
    ffmpegPath,
    [
      "-nostdin",
      "-v",
      "error",
      ...PROTOCOLS,
      "-i",
      url,
      "-map",
      "0",
      "-c",
      "copy",
      "-f",
      "null",
      "-progress",
      "pipe:1",
      "-",
    ],
    timeoutMs,
    memoryLimitBytes,
  );
  if (demux.code !== 0)
    throw new Error(`the file cannot be read to its end (${demux.stderr.trim().split("\n").pop() ?? "ffmpeg failed"})`);
  const times = [...demux.stdout.matchAll(/^out_time_us=(\d+)$/gm)].map((m) => Number(m[1]));
  return Math.round((times.at(-1) ?? 0) / 1000);
}
