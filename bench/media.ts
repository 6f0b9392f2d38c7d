/** Native ffmpeg/ffprobe helpers: generating the inputs, probing, timing a command. */
import { spawn } from "node:child_process";
import { stat } from "node:fs/promises";
import path from "node:path";
import type { ProbeResult } from "../src/media/types";

export const FFMPEG = process.env.FFMPEG ?? "/usr/bin/ffmpeg";
export const FFPROBE = process.env.FFPROBE ?? "/usr/bin/ffprobe";

interface Exec {
  code: number;
  stdout: string;
  stderr: string;
}

export function run(program: string, args: string[], cwd?: string): Promise<Exec> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
      if (stderr.length > 256 * 1024) stderr = stderr.slice(-128 * 1024);
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

async function must(program: string, args: string[], cwd?: string): Promise<Exec> {
  const result = await run(program, args, cwd);
  if (result.code !== 0)
    throw new Error(`${program} ${args.join(" ")} failed (${result.code}):\n${result.stderr.slice(-2000)}`);
  return result;
}

export interface Sources {
  clip: string;
  logo: string;
  speech: string;
}

/** The three inputs: 10 s 720p25 H.264/AAC test clip, a 64x64 RGBA png, 10 s noisy "speech". */
export async function generateSources(dir: string): Promise<Sources> {
  const clip = path.join(dir, "clip.mp4");
  const logo = path.join(dir, "logo.png");
  const speech = path.join(dir, "speech.wav");
  await must(FFMPEG, [
    "-hide_banner",
    "-nostdin",
    "-y",
    "-f",
    "lavfi",
    "-i",
    "testsrc2=size=1280x720:rate=25:duration=10",
    "-f",
    "lavfi",
    "-i",
    "sine=frequency=440:sample_rate=48000:duration=10",
    "-map",
    "0:v",
    "-map",
    "1:a",
    "-c:v",
    "libx264",
    "-preset",
    "medium",
    "-crf",
    "23",
    "-g",
    "50",
    "-pix_fmt",
    "yuv420p",
    "-c:a",
    "aac",
    "-b:a",
    "128k",
    "-ac",
    "2",
    "-movflags",
    "+faststart",
    "-shortest",
    clip,
  ]);
  await must(FFMPEG, [
    "-hide_banner",
    "-nostdin",
    "-y",
    "-f",
    "lavfi",
    "-i",
    "testsrc=size=64x64:rate=1,format=rgba,geq=r='r(X,Y)':g='g(X,Y)':b='b(X,Y)':a='if(lt(hypot(X-32,Y-32),30),255,0)'",
    "-frames:v",
    "1",
    logo,
  ]);
  // A voice-like signal (140 Hz fundamental and harmonics, ~4 syllables per second, pauses)
  // under white noise about 20 dB down, mono 44.1 kHz (clean-audio resamples to 48 kHz).
  const voice =
    "aevalsrc=exprs='0.5*(0.6*sin(2*PI*(140+15*sin(2*PI*0.7*t))*t)+0.3*sin(2*PI*280*t)+0.2*sin(2*PI*420*t)+0.12*sin(2*PI*700*t)+0.08*sin(2*PI*1100*t))" +
    "*(0.55+0.45*sin(2*PI*4*t))*gt(sin(2*PI*0.35*t),-0.6)':sample_rate=44100:duration=10";
  await must(FFMPEG, [
    "-hide_banner",
    "-nostdin",
    "-y",
    "-f",
    "lavfi",
    "-i",
    voice,
    "-f",
    "lavfi",
    "-i",
    "anoisesrc=color=white:amplitude=0.04:sample_rate=44100:duration=10",
    "-filter_complex",
    "[0:a][1:a]amix=inputs=2:normalize=0,aformat=channel_layouts=mono[a]",
    "-map",
    "[a]",
    "-c:a",
    "pcm_s16le",
    speech,
  ]);
  return { clip, logo, speech };
}

interface FfprobeJson {
  format?: { format_name?: string; duration?: string };
  streams?: {
    codec_type?: string;
    codec_name?: string;
    width?: number;
    height?: number;
    avg_frame_rate?: string;
    disposition?: { attached_pic?: number };
  }[];
}

export async function ffprobe(file: string): Promise<FfprobeJson> {
  const result = await must(FFPROBE, ["-v", "error", "-show_format", "-show_streams", "-of", "json", file]);
  return JSON.parse(result.stdout) as FfprobeJson;
}

const MIME: Record<string, { video?: string; audio?: string; image?: string }> = {
  mp4: { video: "video/mp4", audio: "audio/mp4" },
  wav: { audio: "audio/wav" },
  png: { image: "image/png" },
};

/**
 * The ProbeResult production stores for an upload, filled from ffprobe. Container comes from
 * the extension (ffprobe's "mov,mp4,m4a,..." names a demuxer family, not the container);
 * images look like src/media/probe.ts makes them (no streams, no size).
 */
export async function probeResult(file: string): Promise<ProbeResult> {
  const container = path.extname(file).slice(1);
  const json = await ffprobe(file);
  if (container === "png") {
    return { kind: "image", container, mimeType: "image/png", durationMs: 0, hasAudio: false, hasVideo: false };
  }
  const streams = json.streams ?? [];
  const video = streams.find((s) => s.codec_type === "video" && !s.disposition?.attached_pic);
  const audio = streams.find((s) => s.codec_type === "audio");
  const kind = video ? "video" : "audio";
  const result: ProbeResult = {
    kind,
    container,
    mimeType: MIME[container]?.[kind] ?? "application/octet-stream",
    durationMs: Math.round(Number(json.format?.duration ?? 0) * 1000),
    hasAudio: audio !== undefined,
    hasVideo: video !== undefined,
  };
  if (video?.codec_name) result.videoCodec = video.codec_name;
  if (audio?.codec_name) result.audioCodec = audio.codec_name;
  if (video?.width && video.height) {
    result.width = video.width;
    result.height = video.height;
  }
  return result;
}

/** "10.00 s h264/aac" of an output file, or why it cannot be read. */
export async function describeOutput(file: string): Promise<{ seconds?: number; text: string }> {
  try {
    const json = await ffprobe(file);
    const seconds = Number(json.format?.duration);
    const codecs = (json.streams ?? []).map((s) => s.codec_name).join("/");
    const video = (json.streams ?? []).find((s) => s.codec_type === "video");
    const [num, den] = (video?.avg_frame_rate ?? "0/0").split("/").map(Number);
    const fps = video && num && den ? ` ${Math.round((num / den) * 100) / 100}fps` : "";
    const size = (await stat(file)).size;
    return {
      seconds,
      text: `${Number.isFinite(seconds) ? seconds.toFixed(2) : "?"} s ${codecs}${fps} ${(size / 1024).toFixed(0)} KiB`,
    };
  } catch (error) {
    return { text: `unreadable (${error instanceof Error ? error.message.split("\n")[0] : String(error)})` };
  }
}

export interface NativeRun {
  seconds: number;
  /** user + system CPU seconds, from ffmpeg's -benchmark line. */
  cpuSeconds?: number;
  code: number;
  stderrTail: string;
}

/**
 * `-threads 1` everywhere it applies: each decoder (before every -i), the encoders (before the
 * output), and the filter graphs (-filter_threads, -filter_complex_threads).
 */
export function singleThreadArgs(args: string[]): string[] {
  const out = ["-filter_threads", "1", "-filter_complex_threads", "1"];
  args.forEach((arg, i) => {
    if (arg === "-i") out.push("-threads", "1");
    if (i === args.length - 1) out.push("-threads", "1");
    out.push(arg);
  });
  return out;
}

export async function runNative(args: string[], cwd: string): Promise<NativeRun> {
  const start = performance.now();
  const result = await run(FFMPEG, ["-nostdin", "-benchmark", ...args], cwd);
  const seconds = (performance.now() - start) / 1000;
  const bench = /bench: utime=([\d.]+)s stime=([\d.]+)s/.exec(result.stderr);
  const cpuSeconds = bench ? Number(bench[1]) + Number(bench[2]) : undefined;
  const stderrTail = result.stderr
    .split(/\r?\n|\r/)
    .filter((line) => line.trim() !== "" && !/^\s*(size|frame)=/.test(line))
    .slice(-6)
    .join("\n");
  return { seconds, cpuSeconds, code: result.code, stderrTail };
}
