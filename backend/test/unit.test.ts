/** Pure parts, in process: argument checks, stderr summaries, signatures, the stderr tail. */
import { describe, expect, it } from "vitest";
import { describeFfmpegFailure, TailBuffer } from "../src/ffmpeg.ts";
import { describeFfmpegLog, summarizeFfmpegLog } from "@media-credits/wire/ffmpeg-log";
import { hardenArgs, withoutWorkDir } from "../src/job-runner.ts";
import { rotationOf } from "../src/probe.ts";
import {
  checkFfmpegArgs,
  parseJobRequest,
  signCallback,
  UPLOAD_DEMUXERS,
  verifyCallbackSignature,
} from "@media-credits/wire/protocol";
import { hmac, SECRET } from "./helpers.ts";

const declared = new Set(["in0.mp4", "in1.wav", "subs.ass", "list.txt"]);

describe("checkFfmpegArgs", () => {
  it("accepts the commands the Worker builds", () => {
    const ok: string[][] = [
      ["-hide_banner", "-y", "-i", "in0.mp4", "-vn", "-c:a", "libmp3lame", "-q:a", "2", "out.mp3"],
      ["-hide_banner", "-y", "-ss", "00:00:01.5", "-i", "in0.mp4", "-t", "3", "-c", "copy", "out.mp4"],
      ["-i", "in0.mp4", "-vf", "subtitles=subs.ass:fontsdir=.,scale=-2:720", "-c:v", "libx264", "out.mp4"],
      [
        "-i",
        "in0.mp4",
        "-vf",
        "drawtext=fontfile=Inter-Regular.ttf:textfile=caption.txt:x=(w-text_w)/2:y=h-th-20",
        "out.mp4",
      ],
      [
        "-i",
        "in0.mp4",
        "-i",
        "in1.wav",
        "-filter_complex",
        "[0:a][1:a]amix=inputs=2:duration=longest[a]",
        "-map",
        "0:v",
        "-map",
        "[a]",
        "out.mp4",
      ],
      ["-f", "lavfi", "-i", "color=c=black:s=1280x720:d=5", "-i", "in1.wav", "-shortest", "out.mp4"],
      ["-f", "concat", "-i", "list.txt", "-c", "copy", "out.mp4"],
      ["-i", "in0.mp4", "-af", "loudnorm=I=-16:TP=-1.5:LRA=11,afftdn", "-metadata", "title=Wait... what", "out.mp4"],
      ["-i", "in0.mp4", "-vf", "select='not(mod(n\\,10))',setpts=N/FRAME_RATE/TB", "out.mp4"],
    ];
    for (const args of ok) expect(checkFfmpegArgs(args, declared, args.at(-1)!), args.join(" ")).toBeNull();
  });

  it("refuses paths outside the work directory and protocols", () => {
    const bad: string[][] = [
      ["-i", "/etc/passwd", "out.mp4"],
      ["-i", "in0.mp4", "-attach", "\\\\server\\share", "out.mp4"],
      ["-i", "in0.mp4", "-vf", "movie=../../x.mp4", "out.mp4"],
      ["-i", "in0.mp4", "-vf", "subtitles=subs.ass:fontsdir=/usr/share/fonts", "out.mp4"],
      ["-i", "in0.mp4", "-vf", 'drawtext=textfile="/etc/hostname"', "out.mp4"],
      ["-i", "in0.mp4", "-passlogfile", "..", "out.mp4"],
      ["-i", "in0.mp4", "-f", "tee", "out.mp4|file:leak.mp4"],
      ["-i", "subfile,,start,0,end,100,,:in0.mp4", "out.mp4"],
      ["-i", "data:text/plain,abc", "out.mp4"],
      ["-i", "in0.mp4", "tcp://127.0.0.1:9/out.mp4", "out.mp4"],
      ["-i", "in0.mp4", "-vf", "amovie=HTTPS\\://x/y", "out.mp4"],
      ["-i", "in0.mp4", "out\0.mp4", "out.mp4"],
      ["-i"],
    ];
    for (const args of bad) expect(checkFfmpegArgs(args, declared, "out.mp4"), args.join(" ")).not.toBeNull();
  });

  it("puts -protocol_whitelist file before every input", () => {
    expect(hardenArgs(["-y", "-ss", "1", "-i", "in0.mp4", "-i", "in1.wav", "out.mp4"])).toEqual([
      "-y",
      "-ss",
      "1",
      "-protocol_whitelist",
      "file",
      "-i",
      "in0.mp4",
      "-protocol_whitelist",
      "file",
      "-i",
      "in1.wav",
      "out.mp4",
    ]);
  });

  it("takes the job's work directory out of error messages", () => {
    expect(
      withoutWorkDir("ffmpeg exited with code 1: [hls] x | /tmp/media-job-job_1-Ab12Cd/in0.mp3: Invalid argument"),
    ).toBe("ffmpeg exited with code 1: [hls] x | in0.mp3: Invalid argument");
    expect(withoutWorkDir("open '/var/tmp/media-job-job_2-XYZ/fonts/Inter.ttf' failed")).toBe(
      "open 'fonts/Inter.ttf' failed",
    );
    expect(withoutWorkDir("in0.mp4: Invalid data")).toBe("in0.mp4: Invalid data");
  });

  it("reads an uploaded input with an upload container's demuxer only", () => {
    expect(
      hardenArgs(["-i", "in0.mp4", "-i", "cleaned-audio.nut", "out.mp4"], new Map(), new Set(["in0.mp4"])),
    ).toEqual([
      "-protocol_whitelist",
      "file",
      "-format_whitelist",
      UPLOAD_DEMUXERS,
      "-i",
      "in0.mp4",
      "-protocol_whitelist",
      "file",
      "-i",
      "cleaned-audio.nut",
      "out.mp4",
    ]);
  });

  it("reads a streamed input from its URL, behind its demuxer and only the network protocols it needs", () => {
    const streamed = new Map([
      ["in0.mp4", { url: "https://r2.example.com/in?X-Amz-Signature=abc", demuxer: "mov" as const }],
    ]);
    const args = hardenArgs(["-y", "-ss", "40", "-i", "in0.mp4", "-i", "logo.png", "out.mp4"], streamed);
    const at = args.indexOf("https://r2.example.com/in?X-Amz-Signature=abc");
    expect(args[at - 1]).toBe("-i");
    expect(args[at - 2]).toBe("mov");
    expect(args[at - 3]).toBe("-f");
    const whitelist = args.indexOf("-protocol_whitelist");
    expect(whitelist).toBeLessThan(at);
    expect(args[whitelist + 1]).toBe("http,https,tcp,tls");
    expect(args.slice(0, 3)).toEqual(["-y", "-ss", "40"]);
    expect(args.slice(-5)).toEqual(["-protocol_whitelist", "file", "-i", "logo.png", "out.mp4"]);
    expect(args).not.toContain("in0.mp4");
  });

  it("accepts streamed inputs only for declared inputs and known demuxers", () => {
    const base = {
      jobId: "job_s",
      kind: "ffmpeg",
      args: ["-ss", "2", "-i", "in0.mp4", "out.mp4"],
      inputs: [{ name: "in0.mp4", url: "https://example.com/m?t=1" }],
      output: { name: "out.mp4", url: "https://example.com/put", contentType: "video/mp4" },
      callbackUrl: "https://example.com/cb",
    };
    const ok = parseJobRequest({ ...base, streamedInputs: { "in0.mp4": "mov" } });
    expect(ok.ok && ok.job.kind === "ffmpeg" && ok.job.streamedInputs).toEqual({ "in0.mp4": "mov" });
    expect(parseJobRequest({ ...base, streamedInputs: { "other.mp4": "mov" } })).toMatchObject({
      ok: false,
      message: expect.stringMatching(/streamedInputs\.other\.mp4: 'other\.mp4' is not one of the inputs/),
    });
    expect(parseJobRequest({ ...base, streamedInputs: { "in0.mp4": "hls" } })).toMatchObject({
      ok: false,
      message: expect.stringMatching(/^streamedInputs/),
    });
    expect(parseJobRequest({ ...base, streamedInputs: { "in0.mp4": "concat" } })).toMatchObject({ ok: false });
  });

  it("parses a full request with defaults", () => {
    const result = parseJobRequest({
      jobId: "job_1",
      kind: "ffmpeg",
      args: ["-i", "in0.mp4", "out.mp4"],
      inputs: [{ name: "in0.mp4", url: "https://example.com/m?t=1" }],
      output: { name: "out.mp4", url: "https://example.com/put", contentType: "video/mp4" },
      callbackUrl: "https://example.com/cb",
    });
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.job).toMatchObject({ files: {}, fonts: [], deadlineMs: 900_000, streamedInputs: {} });
  });
});

describe("stderr", () => {
  it("keeps only the last bytes", () => {
    const tail = new TailBuffer(10);
    for (const part of ["0123456789", "abcdef", "XYZ"]) tail.push(Buffer.from(part));
    expect(tail.toString()).toBe("789abcdefXYZ".slice(-10));
  });

  it("summarizes the meaningful lines", () => {
    const stderr = [
      "Input #0, mov,mp4,m4a,3gp,3g2,mj2, from 'in0.mp4':",
      "  Duration: 00:00:01.00, start: 0.000000, bitrate: 80 kb/s",
      "  Stream #0:0[0x1](und): Video: h264",
      "Stream mapping:",
      "  Stream #0:0 -> #0:0 (h264 (native) -> h264 (libx264))",
      "frame=   10 fps=0.0 q=0.0 size=       0kB time=00:00:00.00 bitrate=N/A speed=   0x\rframe=   15 fps=0.0 q=0.0 size=0kB",
      "[libx264 @ 0x55] Error while opening encoder for output stream #0:0",
      "[libx264 @ 0x55] Error while opening encoder for output stream #0:0",
      "Conversion failed!",
    ].join("\n");
    expect(summarizeFfmpegLog(stderr)).toBe(
      "[libx264] Error while opening encoder for output stream #0:0 | Conversion failed!",
    );
    expect(describeFfmpegFailure({ exitCode: 1, signal: null, stderr, aborted: false, durationMs: 5 })).toMatch(
      /^ffmpeg exited with code 1: \[libx264/,
    );
    expect(
      describeFfmpegFailure({ exitCode: null, signal: "SIGSEGV", stderr: "", aborted: false, durationMs: 5 }),
    ).toBe("ffmpeg was killed by SIGSEGV");
  });

  it("drops x264's settings and statistics, and says the input is damaged when the decoders rejected its data", () => {
    // What a trim of an MP4 whose media data was overwritten printed (ffmpeg 5.1), shortened.
    const stderr = [
      "[h264 @ 0x55] Invalid NAL unit size (1267251597 > 2473).",
      "[h264 @ 0x55] Error splitting the input into NAL units.",
      "Error while decoding stream #0:0: Invalid data found when processing input",
      "[aac @ 0x56] Reserved bit set.",
      "Error while decoding stream #0:1: Invalid data found when processing input",
      "[libx264 @ 0x57] using cpu capabilities: MMX2 SSE2Fast SSSE3 SSE4.2 AVX FMA3 BMI2 AVX2",
      "[libx264 @ 0x57] 264 - core 164 r3095 baf4e2c - H.264/MPEG-4 AVC codec - Copyleft 2003-2022 - options: cabac=1 ref=1",
      "Output file is empty, nothing was encoded (check -ss / -t / -frames parameters if used)",
      "[aac @ 0x58] Qavg: nan",
      "Conversion failed!",
    ].join("\n");
    expect(summarizeFfmpegLog(stderr, 3)).toBe(
      "Error while decoding stream #0:1: Invalid data found when processing input | Output file is empty, nothing was encoded (check -ss / -t / -frames parameters if used) | Conversion failed!",
    );
    const message = describeFfmpegFailure({ exitCode: 69, signal: null, stderr, aborted: false, durationMs: 5 });
    expect(message).toBe(
      "the input file looks damaged: its audio or video data could not be decoded ([h264] Invalid NAL unit size (1267251597 > 2473). | [h264] Error splitting the input into NAL units.)",
    );
    expect(message).not.toMatch(/cabac|core 164/);
    // One complaint in a run that failed for another reason is not blamed on the file.
    expect(
      describeFfmpegLog(
        "ffmpeg exited with code 1",
        "[h264 @ 0x1] non-existing PPS 0 referenced\n[libx264 @ 0x2] height not divisible by 2 (320x241)\nConversion failed!",
      ),
    ).toBe(
      "ffmpeg exited with code 1: [h264] non-existing PPS 0 referenced | [libx264] height not divisible by 2 (320x241) | Conversion failed!",
    );
  });

  it("never shows a URL (a streamed input's carries its signature)", () => {
    const stderr =
      "[http @ 0x55] HTTP error 403 Forbidden\nhttps://r2.example.com/b/k?X-Amz-Signature=abc: Server returned 403 Forbidden (access denied)\n";
    const summary = summarizeFfmpegLog(stderr);
    expect(summary).toBe("[http] HTTP error 403 Forbidden | <url>: Server returned 403 Forbidden (access denied)");
  });
});

describe("callback signature", () => {
  it("is HMAC-SHA256 over timestamp.body, verifiable with a tolerance", async () => {
    const body = JSON.stringify({ jobId: "job_1", status: "completed", durationMs: 5 });
    const now = Date.now();
    const signature = await signCallback(SECRET, String(now), body);
    expect(signature).toBe(hmac(String(now), body));
    expect(await verifyCallbackSignature(SECRET, String(now), body, signature, now)).toBe(true);
    expect(await verifyCallbackSignature(SECRET, String(now), `${body} `, signature, now)).toBe(false);
    expect(await verifyCallbackSignature("other", String(now), body, signature, now)).toBe(false);
    expect(await verifyCallbackSignature(SECRET, String(now), body, signature, now + 10 * 60_000)).toBe(false);
  });
});

describe("rotationOf (ffprobe's display matrix, as the Worker's header probe reports it)", () => {
  const matrix = (rotation: number) => ({ side_data_list: [{ side_data_type: "Display Matrix", rotation }] });
  it("turns ffprobe's counter-clockwise degrees into the clockwise quarter turn", () => {
    // ffmpeg -metadata:s:v:0 rotate=90 on a remux: ffprobe says 90, the picture shows turned left (270 clockwise).
    expect(rotationOf(matrix(90))).toBe(270);
    expect(rotationOf(matrix(-90))).toBe(90);
    expect(rotationOf(matrix(180))).toBe(180);
    expect(rotationOf(matrix(-180))).toBe(180);
  });
  it("reports nothing for no turn, a stream without a matrix, or a turn that is not a quarter", () => {
    expect(rotationOf(matrix(0))).toBeUndefined();
    expect(rotationOf({})).toBeUndefined();
    expect(rotationOf(matrix(45))).toBeUndefined();
  });
});
