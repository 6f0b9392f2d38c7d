/**
 * Runs in Node before the workerd test pool starts: generates the media fixtures with native
 * ffmpeg (so no binary fixture is committed) and serves them on a loopback HTTP server, which
 * is both the "public URL" of URL-upload tests and the way tests inside workerd read fixtures.
 */
import { execFileSync } from "node:child_process";
import { createReadStream, existsSync, mkdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { startLocalStripe } from "../scripts/local-stripe/server";
import { startLocalMastodon } from "../scripts/local-mastodon/server";
import { startLocalBluesky } from "../scripts/local-bluesky/server";

const fixturesDir = path.join(import.meta.dirname, ".fixtures");

/**
 * name -> ffmpeg arguments producing it (lavfi sources: deterministic, tiny), or a remux of an
 * earlier fixture (`from`) where a property can only be set on a copy.
 */
const fixtures: Record<string, string[] | { from: string; args: string[] }> = {
  // 2.5 s video with a 440 Hz tone, H.264/AAC in MP4.
  "clip.mp4": [
    "-f",
    "lavfi",
    "-i",
    "testsrc2=size=320x240:rate=25:duration=2.5",
    "-f",
    "lavfi",
    "-i",
    "sine=frequency=440:sample_rate=44100:duration=2.5",
    "-c:v",
    "libx264",
    "-preset",
    "ultrafast",
    "-pix_fmt",
    "yuv420p",
    "-c:a",
    "aac",
    "-shortest",
    "-movflags",
    "+faststart",
  ],
  // 1 s of 720p: the frame size the routing's heap estimates are calibrated on.
  "clip720.mp4": [
    "-f",
    "lavfi",
    "-i",
    "testsrc2=size=1280x720:rate=25:duration=1",
    "-f",
    "lavfi",
    "-i",
    "sine=frequency=440:sample_rate=44100:duration=1",
    "-c:v",
    "libx264",
    "-preset",
    "ultrafast",
    "-pix_fmt",
    "yuv420p",
    "-c:a",
    "aac",
    "-shortest",
    "-movflags",
    "+faststart",
  ],
  // clip.mp4 as a phone records it: frames stored 320x240 with a display matrix turning them a
  // quarter (ffmpeg 5.1 writes the matrix only when remuxing); players show 240x320.
  "clip-rotated.mp4": {
    from: "clip.mp4",
    args: ["-c", "copy", "-metadata:s:v:0", "rotate=90", "-movflags", "+faststart"],
  },
  // Its audio track starts 0.5 s after the picture, as phones and editors write them.
  "late-audio.mp4": [
    "-f",
    "lavfi",
    "-i",
    "testsrc2=size=160x120:rate=25:duration=2.5",
    "-itsoffset",
    "0.5",
    "-f",
    "lavfi",
    "-i",
    "sine=frequency=440:sample_rate=44100:duration=2",
    "-c:v",
    "libx264",
    "-preset",
    "ultrafast",
    "-pix_fmt",
    "yuv420p",
    "-c:a",
    "aac",
    "-movflags",
    "+faststart",
  ],
  // High 10 H.264 (10-bit), which an MP4 may hold but browsers do not play.
  "clip-10bit.mp4": [
    "-f",
    "lavfi",
    "-i",
    "testsrc2=size=160x120:rate=25:duration=1",
    "-c:v",
    "libx264",
    "-preset",
    "ultrafast",
    "-pix_fmt",
    "yuv420p10le",
    "-movflags",
    "+faststart",
  ],
  // Video without an audio track.
  "silent.mp4": [
    "-f",
    "lavfi",
    "-i",
    "testsrc2=size=320x240:rate=25:duration=1",
    "-c:v",
    "libx264",
    "-preset",
    "ultrafast",
    "-pix_fmt",
    "yuv420p",
    "-movflags",
    "+faststart",
  ],
  // Same, moov atom at the end (the common layout of camera files).
  "clip-moov-end.mov": [
    "-f",
    "lavfi",
    "-i",
    "testsrc2=size=320x240:rate=25:duration=3",
    "-f",
    "lavfi",
    "-i",
    "sine=frequency=660:duration=3",
    "-c:v",
    "libx264",
    "-preset",
    "ultrafast",
    "-pix_fmt",
    "yuv420p",
    "-c:a",
    "aac",
    "-shortest",
  ],
  "clip.webm": [
    "-f",
    "lavfi",
    "-i",
    "testsrc2=size=320x240:rate=25:duration=2",
    "-f",
    "lavfi",
    "-i",
    "sine=frequency=440:duration=2",
    "-c:v",
    "libvpx",
    "-b:v",
    "200k",
    "-c:a",
    "libopus",
    "-shortest",
  ],
  "clip.mkv": [
    "-f",
    "lavfi",
    "-i",
    "testsrc2=size=320x240:rate=25:duration=2",
    "-f",
    "lavfi",
    "-i",
    "sine=frequency=440:duration=2",
    "-c:v",
    "libx264",
    "-preset",
    "ultrafast",
    "-c:a",
    "aac",
    "-shortest",
  ],
  "clip.avi": [
    "-f",
    "lavfi",
    "-i",
    "testsrc2=size=320x240:rate=25:duration=2",
    "-f",
    "lavfi",
    "-i",
    "sine=frequency=440:duration=2",
    "-c:v",
    "mpeg4",
    "-c:a",
    "libmp3lame",
    "-shortest",
  ],
  "tone.mp3": [
    "-f",
    "lavfi",
    "-i",
    "sine=frequency=440:sample_rate=44100:duration=3",
    "-c:a",
    "libmp3lame",
    "-b:a",
    "128k",
  ],
  "tone.wav": ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=16000:duration=1.5", "-c:a", "pcm_s16le"],
  // WAVE_FORMAT_EXTENSIBLE, as ffmpeg writes 24-bit, float and multichannel WAV.
  "tone-s24.wav": ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=1", "-c:a", "pcm_s24le"],
  "tone-f32-6ch.wav": [
    "-f",
    "lavfi",
    "-i",
    "sine=frequency=440:sample_rate=48000:duration=1",
    "-af",
    "pan=5.1|c0=c0|c1=c0|c2=c0|c3=c0|c4=c0|c5=c0",
    "-c:a",
    "pcm_f32le",
  ],
  "tone.m4a": ["-f", "lavfi", "-i", "sine=frequency=440:duration=2", "-c:a", "aac"],
  "tone.ogg": ["-f", "lavfi", "-i", "sine=frequency=440:duration=2", "-c:a", "libopus"],
  "tone.flac": ["-f", "lavfi", "-i", "sine=frequency=440:duration=2", "-c:a", "flac"],
  // 5.1 AAC: clean-audio on ffmpeg.wasm needs more heap per channel.
  "surround.m4a": [
    "-f",
    "lavfi",
    "-i",
    "sine=frequency=440:duration=2",
    "-af",
    "pan=5.1|c0=c0|c1=c0|c2=c0|c3=c0|c4=c0|c5=c0",
    "-c:a",
    "aac",
  ],
  // 61 s of audio: one second over a minute, for the rounding edges of per-minute costs.
  "long-61s.mp3": ["-f", "lavfi", "-i", "sine=frequency=300:duration=61", "-c:a", "libmp3lame", "-b:a", "32k"],
  // Longer media whose headers the billing tests forge to claim less (test/helpers/forged-media.ts).
  "long-30s.mp4": [
    "-f",
    "lavfi",
    "-i",
    "testsrc2=size=160x120:rate=10:duration=30",
    "-f",
    "lavfi",
    "-i",
    "sine=frequency=440:duration=30",
    "-c:v",
    "libx264",
    "-preset",
    "ultrafast",
    "-pix_fmt",
    "yuv420p",
    "-c:a",
    "aac",
    "-b:a",
    "32k",
    "-shortest",
    "-movflags",
    "+faststart",
  ],
  "long-30s.mkv": [
    "-f",
    "lavfi",
    "-i",
    "testsrc2=size=160x120:rate=10:duration=30",
    "-f",
    "lavfi",
    "-i",
    "sine=frequency=440:duration=30",
    "-c:v",
    "libx264",
    "-preset",
    "ultrafast",
    "-pix_fmt",
    "yuv420p",
    "-c:a",
    "aac",
    "-b:a",
    "32k",
    "-shortest",
  ],
  "long-150s.mp3": [
    "-f",
    "lavfi",
    "-i",
    "sine=frequency=300:sample_rate=8000:duration=150",
    "-ac",
    "1",
    "-c:a",
    "libmp3lame",
    "-b:a",
    "8k",
  ],
  // Two frames a little over 8K (37.9 megapixels): the media-bomb tests state smaller sizes in its header.
  "frames-over-8k.mp4": [
    "-f",
    "lavfi",
    "-i",
    "color=c=gray:size=8704x4352:rate=25:duration=0.08",
    "-f",
    "lavfi",
    "-i",
    "sine=frequency=440:duration=0.08",
    "-c:v",
    "libx264",
    "-preset",
    "ultrafast",
    "-pix_fmt",
    "yuv420p",
    "-c:a",
    "aac",
    "-shortest",
    "-movflags",
    "+faststart",
  ],
  // 3 s of picture over 1 s of sound: a trim past the sound's end leaves the sound stream empty.
  "short-sound.mp4": [
    "-f",
    "lavfi",
    "-i",
    "testsrc2=size=160x120:rate=25:duration=3",
    "-f",
    "lavfi",
    "-i",
    "sine=frequency=440:duration=1",
    "-c:v",
    "libx264",
    "-preset",
    "ultrafast",
    "-pix_fmt",
    "yuv420p",
    "-c:a",
    "aac",
    "-movflags",
    "+faststart",
  ],
  // Audio-only files in video containers: probed as kind "audio".
  "tone-audio-only.mp4": ["-f", "lavfi", "-i", "sine=frequency=440:duration=2", "-c:a", "aac"],
  "tone-audio-only.webm": ["-f", "lavfi", "-i", "sine=frequency=440:duration=2", "-c:a", "libopus"],
  // Raw ADTS AAC: no header carries the duration.
  "tone.aac": ["-f", "lavfi", "-i", "sine=frequency=440:duration=2", "-c:a", "aac", "-f", "adts"],
  // VBR MP3 without a Xing/Info header: the duration needs a scan of the frames.
  "tone-vbr-noxing.mp3": [
    "-f",
    "lavfi",
    "-i",
    "sine=frequency=440:sample_rate=44100:duration=3",
    "-c:a",
    "libmp3lame",
    "-q:a",
    "4",
    "-write_xing",
    "0",
  ],
  "logo.png": ["-f", "lavfi", "-i", "color=c=red:size=64x64:duration=1", "-frames:v", "1"],
  "logo.jpg": ["-f", "lavfi", "-i", "color=c=blue:size=64x64:duration=1", "-frames:v", "1"],
  "logo.webp": ["-f", "lavfi", "-i", "color=c=green:size=64x64:duration=1", "-frames:v", "1"],
  // Wider than tall, in the other headers a size is read from: JPEG's frame header after JFIF,
  // lossless WebP (VP8L) and extended WebP with alpha (VP8X).
  "banner.jpg": ["-f", "lavfi", "-i", "color=c=blue:size=96x40:duration=1", "-frames:v", "1"],
  "banner-lossless.webp": [
    "-f",
    "lavfi",
    "-i",
    "color=c=blue:size=72x30:duration=1",
    "-frames:v",
    "1",
    "-c:v",
    "libwebp",
    "-lossless",
    "1",
  ],
  "banner-alpha.webp": [
    "-f",
    "lavfi",
    "-i",
    "color=c=blue@0.5:size=50x20:duration=1,format=yuva420p",
    "-frames:v",
    "1",
    "-c:v",
    "libwebp",
  ],
};

function generateFixtures(): void {
  mkdirSync(fixturesDir, { recursive: true });
  for (const [name, args] of Object.entries(fixtures)) {
    const out = path.join(fixturesDir, name);
    const probe = `${out}.ffprobe.json`;
    if (!existsSync(out) || statSync(out).size === 0) {
      const inputArgs = Array.isArray(args) ? args : ["-i", path.join(fixturesDir, args.from), ...args.args];
      execFileSync("ffmpeg", ["-hide_banner", "-loglevel", "error", "-y", ...inputArgs, out]);
      rmSync(probe, { force: true });
    }
    // ffprobe's view of each fixture (served as <name>.ffprobe.json): the reference of the media probe tests.
    if (!existsSync(probe)) {
      writeFileSync(
        probe,
        execFileSync("ffprobe", ["-v", "error", "-show_format", "-show_streams", "-of", "json", out]),
      );
    }
  }
}

/** Serves fixtures with Range support, plus routes that exercise redirects and errors. */
function serve(): Promise<Server> {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (url.pathname.startsWith("/redirect/")) {
      res.writeHead(302, { location: decodeURIComponent(url.pathname.slice("/redirect/".length)) });
      res.end();
      return;
    }
    if (url.pathname === "/dns-query") {
      // A DNS-over-HTTPS (JSON) fake: names that resolve to loopback or private addresses.
      const answers: Record<string, string> = { "rebind.test": "127.0.0.1", "intranet.test": "10.0.0.8" };
      const name = (url.searchParams.get("name") ?? "").replace(/\.$/, "");
      const type = url.searchParams.get("type");
      const address = type === "A" ? answers[name] : undefined;
      res.writeHead(200, { "content-type": "application/dns-json" });
      res.end(
        JSON.stringify({ Status: address ? 0 : 3, Answer: address ? [{ name, type: 1, TTL: 60, data: address }] : [] }),
      );
      return;
    }
    if (url.pathname === "/text.txt") {
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("this is not media\n".repeat(100));
      return;
    }
    if (url.pathname === "/announce-huge") {
      // Announces more than 5 GB: the server must refuse before reading.
      res.writeHead(200, { "content-length": String(5_000_000_001), "content-type": "video/mp4" });
      res.end();
      return;
    }
    // /any-name/<fixture>: the fixture under a path of the test's choosing (odd escapes included).
    const file = path.join(
      fixturesDir,
      url.pathname.startsWith("/any-name/") ? url.pathname.split("/")[2]! : path.basename(url.pathname),
    );
    if (!existsSync(file)) {
      res.writeHead(404);
      res.end("not found");
      return;
    }
    const size = statSync(file).size;
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? "");
    if (range) {
      const start = Number(range[1]);
      const end = range[2] ? Math.min(Number(range[2]), size - 1) : size - 1;
      res.writeHead(206, { "content-length": end - start + 1, "content-range": `bytes ${start}-${end}/${size}` });
      createReadStream(file, { start, end }).pipe(res);
      return;
    }
    res.writeHead(200, { "content-length": size, "content-type": "application/octet-stream" });
    createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

/**
 * A webhook receiver on loopback: POST /<name> records the headers and body and answers the
 * status set by `?status=` (to test retries), after `?delayMs=` when given (a slow receiver);
 * GET /<name>/log lists what arrived, with when it arrived and when it was answered.
 */
async function startWebhookSink() {
  const received = new Map<
    string,
    { headers: Record<string, string>; body: string; arrivedAt: number; answeredAt?: number }[]
  >();
  const sink = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://sink");
    const name = url.pathname.split("/")[1] ?? "";
    if (req.method === "GET" && url.pathname.endsWith("/log")) {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(received.get(name) ?? []));
      return;
    }
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      const list = received.get(name) ?? [];
      const entry: { headers: Record<string, string>; body: string; arrivedAt: number; answeredAt?: number } = {
        headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
        body,
        arrivedAt: Date.now(),
      };
      list.push(entry);
      received.set(name, list);
      const status = Number(url.searchParams.get("status") ?? 200);
      const failFirst = Number(url.searchParams.get("failFirst") ?? 0);
      const code = list.length <= failFirst ? 500 : status;
      const count = list.length;
      setTimeout(
        () => {
          entry.answeredAt = Date.now();
          res
            .writeHead(code, { "content-type": "application/json" })
            .end(JSON.stringify({ id: `ext-${name}-${count}`, url: `https://automation.example/${name}/${count}` }));
        },
        Number(url.searchParams.get("delayMs") ?? 0),
      );
    });
  });
  await new Promise<void>((resolve) => sink.listen(0, "127.0.0.1", resolve));
  const { port } = sink.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise<void>((resolve) => sink.close(() => resolve())) };
}

export default async function setup(project: TestProject) {
  generateFixtures();
  const server = await serve();
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("fixture server has no port");
  project.provide("fixtureBaseUrl", `http://127.0.0.1:${address.port}`);
  // Checkout and plan calls in workerd tests reach this local Stripe; webhooks are signed by the tests.
  const stripe = await startLocalStripe({ secretKey: "sk_test_workers", webhookSecret: "whsec_test_workers" });
  project.provide("stripeBaseUrl", stripe.url);
  // The social network the publisher posts to in tests (its wire format), on loopback.
  const mastodon = await startLocalMastodon({ token: "mastodon-test-token" });
  project.provide("mastodonBaseUrl", mastodon.url);
  // And the local Bluesky (a PDS's and AppView's XRPC calls), one account with an app password.
  const bluesky = await startLocalBluesky({ handle: "brand.test", appPassword: "test-bsky-app0-pass" });
  project.provide("blueskyBaseUrl", bluesky.url);
  const hooks = await startWebhookSink();
  project.provide("hookBaseUrl", hooks.url);
  return async () => {
    await stripe.close();
    await mastodon.close();
    await bluesky.close();
    await hooks.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
}
