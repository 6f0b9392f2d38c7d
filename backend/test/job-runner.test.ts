/** Jobs end to end: real ffmpeg, real HTTP transfers, signed callbacks. */
import { readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  Backend,
  ffmpeg,
  ffprobe,
  Fixture,
  hmac,
  jobBody,
  makeClip,
  scratchDir,
  until,
  writeScratch,
} from "./helpers.ts";

let backend: Backend;
let fixture: Fixture;
let scratch: string;
let clip: Buffer;

beforeAll(async () => {
  scratch = scratchDir();
  clip = readFileSync(await makeClip(scratch));
  fixture = await new Fixture().start();
  backend = await Backend.start({ MAX_CONCURRENT_JOBS: "2" });
});

afterAll(async () => {
  await backend?.stop();
  await fixture?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

function callbackJson(record: { body: Buffer }): Record<string, any> {
  return JSON.parse(record.body.toString("utf8")) as Record<string, any>;
}

function expectSigned(record: { headers: Record<string, unknown>; body: Buffer }): void {
  const timestamp = String(record.headers["x-backend-timestamp"]);
  expect(timestamp).toMatch(/^\d{13}$/);
  expect(Math.abs(Date.now() - Number(timestamp))).toBeLessThan(60_000);
  expect(record.headers["x-backend-signature"]).toBe(hmac(timestamp, record.body.toString("utf8")));
  expect(record.headers["content-type"]).toMatch(/application\/json/);
}

describe("ffmpeg jobs", () => {
  it("runs a job: streams the input, uses files and fonts, uploads the output, signs the callback", async () => {
    fixture.media.set("happy", clip);
    const ass = [
      "[Script Info]",
      "ScriptType: v4.00+",
      "PlayResX: 160",
      "PlayResY: 120",
      "",
      "[V4+ Styles]",
      "Format: Name, Fontname, Fontsize, PrimaryColour, OutlineColour, BorderStyle, Outline, Shadow, Alignment, MarginV",
      "Style: Default,DejaVu Sans,14,&H00FFFFFF,&H00000000,1,1,0,2,8",
      "",
      "[Events]",
      "Format: Layer, Start, End, Style, Text",
      "Dialogue: 0,0:00:00.00,0:00:01.00,Default,Été à Noël : œuvre 5 €",
    ].join("\n");
    const body = jobBody(fixture, "happy", {
      args: [
        "-hide_banner",
        "-y",
        "-i",
        "in0.mp4",
        "-vf",
        "subtitles=subs.ass:fontsdir=fonts,drawtext=fontfile=TestSans-Regular.ttf:textfile=caption.txt:x=4:y=4:fontsize=12:fontcolor=white,drawtext=fontfile=fonts/TestSans-Regular.ttf:textfile=caption.txt:x=4:y=40:fontsize=12:fontcolor=white",
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        "-c:a",
        "aac",
        "-b:a",
        "48k",
        "-movflags",
        "+faststart",
        "out.mp4",
      ],
      files: {
        "subs.ass": Buffer.from(ass).toString("base64"),
        "caption.txt": Buffer.from("Ça marche").toString("base64"),
      },
      fonts: ["TestSans-Regular.ttf"],
    });
    const started = Date.now();
    const res = await backend.postJob(body);
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ accepted: true });
    expect(Date.now() - started).toBeLessThan(1000); // answered before the work

    const [callback] = await fixture.waitForCallback("happy");
    expectSigned(callback!);
    const payload = callbackJson(callback!);
    expect(payload).toMatchObject({ jobId: "job_happy", status: "completed" });
    expect(payload.error).toBeUndefined();
    expect(payload.durationMs).toBeGreaterThan(0);

    const [get] = fixture.of("GET", "/media/happy");
    expect(get).toBeDefined();
    const [put] = fixture.of("PUT", "/upload/happy");
    expect(put!.headers["content-type"]).toBe("video/mp4");
    expect(put!.headers["transfer-encoding"]).toBeUndefined();
    expect(Number(put!.headers["content-length"])).toBe(put!.body.length);
    expect(payload.outputBytes).toBe(put!.body.length);
    expect(put!.at).toBeLessThanOrEqual(callback!.at);

    const out = writeScratch(scratch, "happy-out.mp4", put!.body);
    const probe = await ffprobe(out);
    const video = probe.streams.find((s) => s.codec_type === "video");
    const audio = probe.streams.find((s) => s.codec_type === "audio");
    expect(video).toMatchObject({ codec_name: "h264", width: 160, height: 120 });
    expect(audio).toMatchObject({ codec_name: "aac" });
    expect(Number(probe.format.duration)).toBeGreaterThan(0.8);
    expect(Number(probe.format.duration)).toBeLessThan(1.3);

    const status = await backend.fetch("/v1/jobs/job_happy");
    expect(await status.json()).toEqual({ jobId: "job_happy", status: "completed" });
    expect(backend.leftovers()).toEqual([]);
  });

  it("is idempotent per jobId: a re-POST while running or after the end does nothing", async () => {
    fixture.media.set("idem", clip);
    const body = jobBody(fixture, "idem");
    const [first, second] = await Promise.all([backend.postJob(body), backend.postJob(body)]);
    expect(first.status).toBe(202);
    expect(second.status).toBe(202);
    await fixture.waitForCallback("idem");
    const again = await backend.postJob(body);
    expect(again.status).toBe(202);
    expect(await again.json()).toEqual({ accepted: true });
    await until(() => backend.jobLogs().some((line) => line.jobId === "job_idem"), 10_000, "job_idem logged");
    expect(fixture.of("GET", "/media/idem")).toHaveLength(1);
    expect(fixture.of("PUT", "/upload/idem")).toHaveLength(1);
    expect(fixture.callbacks("idem")).toHaveLength(1);
  });

  it("reports ffmpeg's failure on a corrupt input", async () => {
    fixture.media.set("corrupt", Buffer.from("this is not a video at all".repeat(100)));
    await backend.postJob(jobBody(fixture, "corrupt"));
    const [callback] = await fixture.waitForCallback("corrupt");
    expectSigned(callback!);
    const payload = callbackJson(callback!);
    expect(payload).toMatchObject({ jobId: "job_corrupt", status: "failed" });
    expect(payload.error).toMatch(/^ffmpeg exited with code \d+: .*in0\.mp4: Invalid data found when processing input/);
    expect(payload.outputBytes).toBeUndefined();
    expect(fixture.of("PUT", "/upload/corrupt")).toHaveLength(0);
    const status = (await (await backend.fetch("/v1/jobs/job_corrupt")).json()) as { status: string; error: string };
    expect(status.status).toBe("failed");
    expect(status.error).toBe(payload.error);
  });

  it("fails the job when an input cannot be downloaded (404), without leaking its URL", async () => {
    await backend.postJob(jobBody(fixture, "missing"));
    const [callback] = await fixture.waitForCallback("missing");
    const payload = callbackJson(callback!);
    expect(payload.status).toBe("failed");
    expect(payload.error).toBe("input 'in0.mp4' could not be downloaded: HTTP 404");
    expect(fixture.of("PUT", "/upload/missing")).toHaveLength(0);
    expect(backend.stdout).not.toContain("secret-token");
    expect(backend.stdout).not.toContain("X-Amz-Signature");
  });

  it("stops the other downloads when one input fails", async () => {
    fixture.media.set("twoinputs", clip);
    await backend.postJob(
      jobBody(fixture, "twoinputs", {
        args: [
          "-hide_banner",
          "-y",
          "-i",
          "in0.mp4",
          "-i",
          "in1.mp4",
          "-map",
          "0",
          "-map",
          "1",
          "-c",
          "copy",
          "out.mp4",
        ],
        inputs: [
          { name: "in0.mp4", url: `${fixture.baseUrl}/media/twoinputs` },
          { name: "in1.mp4", url: `${fixture.baseUrl}/media/absent` },
        ],
      }),
    );
    const [callback] = await fixture.waitForCallback("twoinputs");
    expect(callbackJson(callback!)).toMatchObject({
      status: "failed",
      error: "input 'in1.mp4' could not be downloaded: HTTP 404",
    });
    await until(() => backend.leftovers().length === 0, 5_000, "work directory removed");
    expect(backend.leftovers()).toEqual([]);
  });

  it("fails the job when the upload is refused, and retries uploads after a 5xx", async () => {
    fixture.media.set("putdenied", clip);
    fixture.media.set("putretry", clip);
    fixture.uploadStatus = (key, attempt) =>
      key === "putdenied" ? 403 : key === "putretry" && attempt === 1 ? 503 : 200;
    await backend.postJob(jobBody(fixture, "putdenied"));
    await backend.postJob(jobBody(fixture, "putretry"));
    const [denied] = await fixture.waitForCallback("putdenied");
    expect(callbackJson(denied!)).toMatchObject({
      status: "failed",
      error: "the output could not be uploaded: HTTP 403",
    });
    expect(fixture.of("PUT", "/upload/putdenied")).toHaveLength(1);
    const [retried] = await fixture.waitForCallback("putretry");
    expect(callbackJson(retried!)).toMatchObject({ status: "completed" });
    const puts = fixture.of("PUT", "/upload/putretry");
    expect(puts).toHaveLength(2);
    expect(puts[1]!.body.length).toBe(callbackJson(retried!).outputBytes);
  });

  it("kills ffmpeg at the deadline", async () => {
    fixture.media.set("slow", clip);
    const started = Date.now();
    await backend.postJob(
      jobBody(fixture, "slow", {
        // -re: read at native speed, forever: only the deadline ends it.
        args: [
          "-hide_banner",
          "-y",
          "-re",
          "-stream_loop",
          "-1",
          "-i",
          "in0.mp4",
          "-c:v",
          "libx264",
          "-preset",
          "ultrafast",
          "-c:a",
          "aac",
          "out.mp4",
        ],
        deadlineMs: 1500,
      }),
    );
    const [callback] = await fixture.waitForCallback("slow");
    const elapsed = Date.now() - started;
    const payload = callbackJson(callback!);
    expect(payload.status).toBe("failed");
    expect(payload.error).toMatch(/^job deadline of 1\.5 s exceeded while running ffmpeg/);
    expect(elapsed).toBeGreaterThanOrEqual(1400);
    expect(elapsed).toBeLessThan(5000);
    expect(fixture.of("PUT", "/upload/slow")).toHaveLength(0);
    await until(() => backend.leftovers().length === 0, 5_000, "work directory removed");
    expect(backend.leftovers()).toEqual([]);
  });

  it("retries the callback after a 500, with a fresh valid signature, until accepted", async () => {
    fixture.media.set("cb500", clip);
    fixture.callbackStatus = (key, attempt) => (key === "cb500" && attempt === 1 ? 500 : 200);
    await backend.postJob(jobBody(fixture, "cb500"));
    const callbacks = await fixture.waitForCallback("cb500", 2);
    expect(callbacks).toHaveLength(2);
    for (const record of callbacks) expectSigned(record);
    expect(callbacks[1]!.at - callbacks[0]!.at).toBeGreaterThanOrEqual(450);
    expect(callbackJson(callbacks[1]!)).toMatchObject({ jobId: "job_cb500", status: "completed" });
    await until(() => backend.jobLogs().some((line) => line.jobId === "job_cb500"), 10_000, "job_cb500 logged");
    expect(fixture.callbacks("cb500")).toHaveLength(2);
    const log = backend.jobLogs().find((line) => line.jobId === "job_cb500");
    expect(log).toMatchObject({ status: "completed", callback: "delivered", callbackAttempts: 2 });
  });

  it("takes a 4xx answer to the callback as final", async () => {
    fixture.callbackStatus = (key) => (key === "cb400" ? 400 : 200);
    await backend.postJob(jobBody(fixture, "cb400")); // no media: fails fast
    await fixture.waitForCallback("cb400");
    await until(() => backend.jobLogs().some((line) => line.jobId === "job_cb400"), 10_000, "job_cb400 logged");
    expect(fixture.callbacks("cb400")).toHaveLength(1);
    const log = backend.jobLogs().find((line) => line.jobId === "job_cb400");
    expect(log).toMatchObject({ status: "failed", callback: "failed: HTTP 400", callbackAttempts: 1 });
  });

  it("reads a streamed input over HTTP: a trim of a long file fetches about the part it keeps", async () => {
    // 60 s of a busy picture, moov at the end (ffmpeg's default) and at the front (faststart).
    const long = path.join(scratch, "long.mp4");
    await ffmpeg([
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=640x360:rate=25:duration=60",
      "-f",
      "lavfi",
      "-i",
      "sine=frequency=440:duration=60",
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-g",
      "50",
      "-pix_fmt",
      "yuv420p",
      "-c:a",
      "aac",
      "-b:a",
      "64k",
      long,
    ]);
    const faststart = path.join(scratch, "long-faststart.mp4");
    await ffmpeg(["-i", long, "-c", "copy", "-movflags", "+faststart", faststart]);
    for (const [key, file] of [
      ["stream-moov-end", long],
      ["stream-faststart", faststart],
    ] as const) {
      const body = readFileSync(file);
      fixture.media.set(key, body);
      fixture.ranged.add(key);
      fixture.rangeCapBytes = 512 * 1024;
      await backend.postJob(
        jobBody(fixture, key, {
          args: [
            "-hide_banner",
            "-y",
            "-ss",
            "40",
            "-i",
            "in0.mp4",
            "-t",
            "1.5",
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-c:a",
            "aac",
            "out.mp4",
          ],
          streamedInputs: { "in0.mp4": "mov" },
        }),
      );
      const [callback] = await fixture.waitForCallback(key, 1, 60_000);
      expect(callbackJson(callback!), key).toMatchObject({ status: "completed" });
      const probe = await ffprobe(
        writeScratch(scratch, `${key}-out.mp4`, fixture.of("PUT", `/upload/${key}`)[0]!.body),
      );
      expect(Math.abs(Number(probe.format.duration) - 1.5), key).toBeLessThan(0.1);
      expect(probe.streams.map((s) => s.codec_type).sort(), key).toEqual(["audio", "video"]);
      // The header, the second before 40 s (the keyframe) and the 1.5 s kept, plus socket buffers:
      // a small share of the file, which a download would have fetched whole.
      const sent = fixture.mediaBytesSent.get(key)!;
      const gets = fixture.of("GET", `/media/${key}`).length;
      expect(sent, `${key}: ${sent} of ${body.length} bytes in ${gets} requests`).toBeLessThan(body.length * 0.2);
      await until(() => backend.jobLogs().some((line) => line.jobId === `job_${key}`), 10_000, `job_${key} logged`);
      expect(
        backend.jobLogs().find((line) => line.jobId === `job_${key}`),
        key,
      ).toMatchObject({ inputBytes: 0, streamedInputs: 1 });
    }
    fixture.rangeCapBytes = undefined;
    expect(backend.leftovers()).toEqual([]);
  });

  it("extracts the audio of a streamed input as it arrives, in a few requests", async () => {
    // Interleaved as cameras and ffmpeg write: the unmapped video lies between audio packets.
    const clip = path.join(scratch, "interleaved.mp4");
    await ffmpeg([
      "-f",
      "lavfi",
      "-i",
      "testsrc2=size=640x360:rate=25:duration=30",
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
      "64k",
      clip,
    ]);
    const key = "stream-audio";
    const body = readFileSync(clip);
    fixture.media.set(key, body);
    fixture.ranged.add(key);
    await backend.postJob(
      jobBody(fixture, key, {
        args: [
          "-hide_banner",
          "-y",
          "-i",
          "in0.mp4",
          "-map",
          "0:a:0",
          "-vn",
          "-c:a",
          "libmp3lame",
          "-q:a",
          "2",
          "-f",
          "mp3",
          "out.mp3",
        ],
        streamedInputs: { "in0.mp4": "mov" },
        output: {
          name: "out.mp3",
          url: `${fixture.baseUrl}/upload/${key}?X-Amz-Signature=deadbeef`,
          contentType: "audio/mpeg",
        },
      }),
    );
    const [callback] = await fixture.waitForCallback(key, 1, 60_000);
    expect(callbackJson(callback!)).toMatchObject({ status: "completed" });
    const probe = await ffprobe(writeScratch(scratch, `${key}-out.mp3`, fixture.of("PUT", `/upload/${key}`)[0]!.body));
    expect(probe.streams.map((s) => `${s.codec_type}/${s.codec_name}`)).toEqual(["audio/mp3"]);
    expect(Math.abs(Number(probe.format.duration) - 30)).toBeLessThan(0.1);
    // Read through, not one range request per video gap.
    expect(fixture.of("GET", `/media/${key}`).length).toBeLessThanOrEqual(5);
    await until(() => backend.jobLogs().some((line) => line.jobId === `job_${key}`), 10_000, `job_${key} logged`);
    expect(backend.jobLogs().find((line) => line.jobId === `job_${key}`)).toMatchObject({
      inputBytes: 0,
      streamedInputs: 1,
    });
  });

  it("fails a job whose streamed input cannot be read, naming the input and never its URL", async () => {
    await backend.postJob(jobBody(fixture, "stream-missing", { streamedInputs: { "in0.mp4": "mov" } }));
    const [callback] = await fixture.waitForCallback("stream-missing", 1, 60_000);
    const payload = callbackJson(callback!);
    expect(payload.status).toBe("failed");
    expect(payload.error).toMatch(/in0\.mp4: Server returned 404 Not Found/);
    expect(payload.error).not.toMatch(/https?:|secret-token|127\.0\.0\.1/);
    expect(fixture.of("PUT", "/upload/stream-missing")).toHaveLength(0);
  });

  describe("progressive inputs (read while they download)", () => {
    let big: Buffer;
    const PART = 16 * 1024 * 1024;
    beforeAll(async () => {
      // Three 16 MiB parts and more (lossless noise), the index at the end as ffmpeg writes by default.
      const file = path.join(scratch, "big-moov-end.mp4");
      await ffmpeg([
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=640x360:rate=25:duration=4,noise=alls=60:allf=t",
        "-f",
        "lavfi",
        "-i",
        "sine=frequency=440:duration=4",
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        "-qp",
        "0",
        "-pix_fmt",
        "yuv420p",
        "-c:a",
        "aac",
        "-shortest",
        file,
      ]);
      big = readFileSync(file);
      expect(big.length).toBeGreaterThan(2 * PART);
    });

    it("remuxes a file whose index is at its end, fetching each byte once", async () => {
      const key = "progressive-whole";
      fixture.media.set(key, big);
      fixture.ranged.add(key);
      await backend.postJob(
        jobBody(fixture, key, {
          args: ["-hide_banner", "-y", "-i", "in0.mp4", "-map", "0", "-c", "copy", "-f", "matroska", "out.mkv"],
          progressiveInputs: { "in0.mp4": "mov" },
          output: {
            name: "out.mkv",
            url: `${fixture.baseUrl}/upload/${key}?X-Amz-Signature=deadbeef`,
            contentType: "video/x-matroska",
          },
        }),
      );
      const [callback] = await fixture.waitForCallback(key, 1, 60_000);
      expect(callbackJson(callback!)).toMatchObject({ status: "completed" });
      const probe = await ffprobe(
        writeScratch(scratch, `${key}-out.mkv`, fixture.of("PUT", `/upload/${key}`)[0]!.body),
      );
      expect(probe.streams.map((s) => `${s.codec_type}/${s.codec_name}`).sort()).toEqual(["audio/aac", "video/h264"]);
      expect(Math.abs(Number(probe.format.duration) - 4)).toBeLessThan(0.1);
      // Seeks (to the index at the end and back) were served from disk: the origin sent the file once.
      expect(fixture.mediaBytesSent.get(key)).toBe(big.length);
      await until(() => backend.jobLogs().some((line) => line.jobId === `job_${key}`), 10_000, `job_${key} logged`);
      expect(backend.jobLogs().find((line) => line.jobId === `job_${key}`)).toMatchObject({
        inputBytes: 0,
        progressiveInputs: 1,
        progressiveInputBytes: big.length,
      });
    });

    it("runs ffmpeg on the first bytes while the rest is held back, and stops the download it no longer needs", async () => {
      // The index first (faststart), so the first part holds the start of the picture.
      const faststart = path.join(scratch, "big-faststart.mp4");
      await ffmpeg(["-i", path.join(scratch, "big-moov-end.mp4"), "-c", "copy", "-movflags", "+faststart", faststart]);
      const key = "progressive-held";
      fixture.media.set(key, readFileSync(faststart));
      fixture.ranged.add(key);
      // Everything after the first part waits until the end of the test: a backend that downloads
      // first could not finish this job.
      let release!: () => void;
      fixture.heldFrom.set(key, { from: PART, released: new Promise<void>((resolve) => (release = resolve)) });
      await backend.postJob(
        jobBody(fixture, key, {
          args: [
            "-hide_banner",
            "-y",
            "-i",
            "in0.mp4",
            "-t",
            "0.5",
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-c:a",
            "aac",
            "out.mp4",
          ],
          progressiveInputs: { "in0.mp4": "mov" },
        }),
      );
      const [callback] = await fixture.waitForCallback(key, 1, 60_000);
      release();
      expect(callbackJson(callback!)).toMatchObject({ status: "completed" });
      const probe = await ffprobe(
        writeScratch(scratch, `${key}-out.mp4`, fixture.of("PUT", `/upload/${key}`)[0]!.body),
      );
      expect(Math.abs(Number(probe.format.duration) - 0.5)).toBeLessThan(0.1);
      await until(() => backend.jobLogs().some((line) => line.jobId === `job_${key}`), 10_000, `job_${key} logged`);
      const log = backend.jobLogs().find((line) => line.jobId === `job_${key}`)!;
      expect(log.progressiveInputs).toBe(1);
      expect(log.progressiveInputBytes).toBe(0); // stopped, not completed
      expect(backend.leftovers()).toEqual([]);
    });

    it("fails with the download's error when a later part cannot be fetched, never naming its URL", async () => {
      const key = "progressive-broken";
      fixture.media.set(key, big);
      fixture.ranged.add(key);
      fixture.heldFrom.set(key, { from: PART, status: 500 });
      await backend.postJob(
        jobBody(fixture, key, {
          args: ["-hide_banner", "-y", "-i", "in0.mp4", "-map", "0", "-c", "copy", "-f", "matroska", "out.mkv"],
          progressiveInputs: { "in0.mp4": "mov" },
          output: {
            name: "out.mkv",
            url: `${fixture.baseUrl}/upload/${key}?X-Amz-Signature=deadbeef`,
            contentType: "video/x-matroska",
          },
        }),
      );
      const [callback] = await fixture.waitForCallback(key, 1, 60_000);
      const payload = callbackJson(callback!);
      expect(payload.status).toBe("failed");
      expect(payload.error).toMatch(/input 'in0\.mp4' could not be downloaded: HTTP 500/);
      expect(payload.error).not.toMatch(/https?:|secret-token|127\.0\.0\.1/);
      expect(fixture.of("PUT", `/upload/${key}`)).toHaveLength(0);
      fixture.heldFrom.delete(key);
      expect(backend.leftovers()).toEqual([]);
    });
  });

  it("logs one line per job, without URLs", () => {
    const lines = backend.jobLogs();
    const ids = lines.map((line) => line.jobId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toContain("job_happy");
    for (const line of lines) expect(JSON.stringify(line)).not.toMatch(/https?:\/\//);
    expect(backend.leftovers()).toEqual([]);
  });
});

describe("concurrency", () => {
  let single: Backend;

  beforeAll(async () => {
    single = await Backend.start({ MAX_CONCURRENT_JOBS: "1" });
  });

  afterAll(async () => {
    await single?.stop();
  });

  it("queues jobs beyond MAX_CONCURRENT_JOBS", async () => {
    fixture.media.set("first", clip);
    fixture.media.set("second", clip);
    const first = jobBody(fixture, "first", {
      args: [
        "-hide_banner",
        "-y",
        "-re",
        "-i",
        "in0.mp4",
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        "-c:a",
        "aac",
        "out.mp4",
      ],
    });
    expect((await single.postJob(first)).status).toBe(202);
    expect((await single.postJob(jobBody(fixture, "second"))).status).toBe(202);
    expect(await (await single.fetch("/v1/jobs/job_second")).json()).toEqual({ jobId: "job_second", status: "queued" });
    await fixture.waitForCallback("second");
    const [firstPut] = fixture.of("PUT", "/upload/first");
    const [secondGet] = fixture.of("GET", "/media/second");
    expect(secondGet!.at).toBeGreaterThanOrEqual(firstPut!.at);
    const second = callbackJson(fixture.callbacks("second")[0]!);
    expect(second.status).toBe("completed");
    expect(second.queuedMs).toBeGreaterThan(500);
  });

  it("fails queued and running jobs with a callback on shutdown", async () => {
    fixture.media.set("longrun", clip);
    fixture.media.set("waiting", clip);
    const forever = ["-hide_banner", "-y", "-re", "-stream_loop", "-1", "-i", "in0.mp4", "-c", "copy", "out.mp4"];
    const shortLived = await Backend.start({ MAX_CONCURRENT_JOBS: "1", SHUTDOWN_GRACE_MS: "300" });
    try {
      await shortLived.postJob(jobBody(fixture, "longrun", { args: forever }));
      await shortLived.postJob(jobBody(fixture, "waiting"));
      await until(() => fixture.of("GET", "/media/longrun").length > 0, 10_000, "longrun started");
      shortLived.proc.kill("SIGTERM");
      expect(await shortLived.exited).toBe(0);
      const [running] = await fixture.waitForCallback("longrun", 1, 2000);
      const [queued] = await fixture.waitForCallback("waiting", 1, 2000);
      expect(callbackJson(running!).error).toMatch(/^the media backend is shutting down while running ffmpeg/);
      expect(callbackJson(queued!).error).toBe("the media backend is shutting down while waiting in the queue");
      expect(shortLived.leftovers()).toEqual([]);
    } finally {
      await shortLived.stop();
    }
  });

  it("stops a running job the caller cancelled: failed callback, no upload, nothing left", async () => {
    fixture.media.set("cancelme", clip);
    const forever = ["-hide_banner", "-y", "-re", "-stream_loop", "-1", "-i", "in0.mp4", "-c", "copy", "out.mp4"];
    await backend.postJob(jobBody(fixture, "cancelme", { args: forever }));
    await until(() => fixture.of("GET", "/media/cancelme").length > 0, 10_000, "cancelme started");
    const cancelled = await backend.fetch("/v1/jobs/job_cancelme", { method: "DELETE" });
    expect(await cancelled.json()).toEqual({ jobId: "job_cancelme", cancelled: true });
    const [callback] = await fixture.waitForCallback("cancelme", 1, 5000);
    expect(callbackJson(callback!)).toMatchObject({ status: "failed" });
    expect(callbackJson(callback!).error).toMatch(/^cancelled by the caller/);
    expect(fixture.of("PUT", "/upload/cancelme")).toHaveLength(0);
    await until(() => backend.leftovers().length === 0, 5_000, "work directory removed");
    // Cancelling again, or an unknown job, changes nothing.
    expect(await (await backend.fetch("/v1/jobs/job_cancelme", { method: "DELETE" })).json()).toEqual({
      jobId: "job_cancelme",
      cancelled: false,
    });
    expect(await (await backend.fetch("/v1/jobs/job_nope", { method: "DELETE" })).json()).toEqual({
      jobId: "job_nope",
      cancelled: false,
    });
  });
});
