/**
 * Speech job kinds end to end through the real backend process: transcribe, tts, voice-change,
 * voice-profile, with the CPU engines (pocketsphinx, Pico + rubberband), real HTTP transfers and
 * signed callbacks. Skipped when the Debian packages are missing.
 */
import { execFile } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseWav, pitchStats, readWav } from "../src/speech/audio.ts";
import { CapabilitiesSchema } from "@media-credits/wire/protocol";
import { LocalSynthesizer } from "../src/speech/local-tts.ts";
import { Backend, ffmpeg, ffprobe, Fixture, hmac, jobBody, scratchDir } from "./helpers.ts";
import { HAS_PICO, HAS_POCKETSPHINX, SENTENCE_EN, SENTENCE_FR, skipUnlessEngine, wer } from "./speech-helpers.ts";

const run = promisify(execFile);

let backend: Backend;
let fixture: Fixture;
let scratch: string;
/** H.264 + AAC mp4: lea saying SENTENCE_EN over a test pattern. */
let speechClip: Buffer;
let speechClipF0 = 0;
/** WAV: camille in French (the catalogue's nominal pitches are French ones), four sentences (> 10 s). */
let camilleSample: Buffer;
let camilleF0 = 0;

function payload(record: { body: Buffer }): Record<string, any> {
  return JSON.parse(record.body.toString("utf8")) as Record<string, any>;
}

function expectSigned(record: { headers: Record<string, unknown>; body: Buffer }): void {
  const timestamp = String(record.headers["x-backend-timestamp"]);
  expect(record.headers["x-backend-signature"]).toBe(hmac(timestamp, record.body.toString("utf8")));
}

async function videoMd5(file: string): Promise<string> {
  const { stdout } = await run("ffmpeg", ["-v", "error", "-i", file, "-map", "0:v", "-c", "copy", "-f", "md5", "-"]);
  return stdout.trim();
}

async function audioF0(file: string): Promise<number> {
  const wav = `${file}.f0.wav`;
  await ffmpeg(["-i", file, "-map", "0:a:0", "-ac", "1", "-ar", "16000", "-c:a", "pcm_s16le", wav]);
  return pitchStats(await readWav(wav)).median;
}

function speechBody(key: string, fields: Record<string, unknown>): Record<string, unknown> {
  const base = jobBody(fixture, key);
  return {
    jobId: base.jobId,
    inputs: base.inputs,
    callbackUrl: base.callbackUrl,
    deadlineMs: 120_000,
    ...fields,
    output: { ...(base.output as object), ...((fields.output as object) ?? {}) },
  };
}

describe.skipIf(skipUnlessEngine("pico", HAS_PICO) || skipUnlessEngine("pocketsphinx", HAS_POCKETSPHINX))(
  "speech jobs",
  () => {
    beforeAll(async () => {
      scratch = scratchDir();
      const tts = new LocalSynthesizer({ ffmpeg: "ffmpeg" });
      const voice = path.join(scratch, "lea.wav");
      await tts.synthesize(SENTENCE_EN, "lea", "en", voice);
      speechClipF0 = pitchStats(await readWav(voice)).median;
      const clip = path.join(scratch, "speech.mp4");
      // 0.5 s of silence before the voice, video slightly longer than the audio.
      await ffmpeg([
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=160x120:rate=15:duration=5",
        "-i",
        voice,
        "-filter_complex",
        "[1:a]adelay=500,apad[a]",
        "-map",
        "0:v",
        "-map",
        "[a]",
        "-t",
        "5",
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
      speechClip = readFileSync(clip);
      const sample = path.join(scratch, "camille.wav");
      await tts.synthesize(`${SENTENCE_FR} ${SENTENCE_FR} ${SENTENCE_FR} ${SENTENCE_FR}`, "camille", "fr", sample);
      camilleSample = readFileSync(sample);
      camilleF0 = pitchStats(parseWav(camilleSample)).median;
      fixture = await new Fixture().start();
      backend = await Backend.start({ MAX_CONCURRENT_JOBS: "2" });
    }, 60_000);

    afterAll(async () => {
      await backend?.stop();
      await fixture?.stop();
      if (scratch) rmSync(scratch, { recursive: true, force: true });
    });

    it("lists the speech capabilities of the configured engines", async () => {
      const body = (await (await backend.fetch("/v1/capabilities")).json()) as Record<string, any>;
      expect(CapabilitiesSchema.safeParse(body).error).toBeUndefined();
      expect(body.kinds).toEqual(["ffmpeg", "transcribe", "tts", "voice-change", "voice-profile"]);
      expect(body.transcription).toMatchObject({ languages: ["en"], engine: "pocketsphinx" });
      expect(body.tts).toMatchObject({ voices: ["lea", "camille", "thomas", "gilles"], clone: "cpu-match" });
      expect(body.tts.languages).toEqual(expect.arrayContaining(["fr", "en"]));
      expect(body.voiceChange).toMatchObject({ resynthesisLanguages: ["en"] });
      expect(body.engines.transcription).toMatch(/^pocketsphinx/);
      expect(body.engines.tts).toMatch(/^local/);
    });

    it("transcribes a video's speech to {language, text, words}", async () => {
      fixture.media.set("tr", speechClip);
      const res = await backend.postJob(
        speechBody("tr", {
          kind: "transcribe",
          language: "en",
          output: { name: "transcript.json", contentType: "application/json" },
        }),
      );
      expect(res.status).toBe(202);
      const [callback] = await fixture.waitForCallback("tr", 1, 60_000);
      expectSigned(callback!);
      expect(payload(callback!)).toMatchObject({ jobId: "job_tr", status: "completed" });
      const [put] = fixture.of("PUT", "/upload/tr");
      expect(put!.headers["content-type"]).toBe("application/json");
      const transcript = JSON.parse(put!.body.toString("utf8")) as {
        language: string;
        text: string;
        words: { text: string; start: number; end: number }[];
      };
      expect(transcript.language).toBe("en");
      expect(wer(SENTENCE_EN, transcript.text)).toBeLessThanOrEqual(0.35);
      expect(transcript.words[0]!.start).toBeGreaterThanOrEqual(0.4); // after the 0.5 s of silence (±)
      let last = 0;
      for (const w of transcript.words) {
        expect(w.start).toBeGreaterThanOrEqual(last);
        expect(w.end).toBeLessThanOrEqual(5.05);
        last = w.end;
      }
      expect(backend.leftovers()).toEqual([]);
    });

    it("fails a transcription in an unsupported language with a clear error", async () => {
      fixture.media.set("trfr", speechClip);
      await backend.postJob(
        speechBody("trfr", {
          kind: "transcribe",
          language: "fr",
          output: { name: "transcript.json", contentType: "application/json" },
        }),
      );
      const [callback] = await fixture.waitForCallback("trfr", 1, 30_000);
      expectSigned(callback!);
      const body = payload(callback!);
      expect(body.status).toBe("failed");
      expect(body.error).toMatch(/transcription language 'fr' is not supported .*pocketsphinx: en/);
      expect(fixture.of("PUT", "/upload/trfr")).toHaveLength(0);
    });

    it("never opens a file a playlist names: an upload passed as MP3 that hides HLS after a long ID3 tag fails", async () => {
      // The upload's checks see an ID3 tag longer than their window, then MPEG frames; ffmpeg skips
      // the tag and, left to choose, reads the playlist and the host file it names.
      const secret = path.join(scratch, "secret.mp4");
      writeFileSync(secret, speechClip);
      const frames = path.join(scratch, "frames.mp3");
      await ffmpeg(["-f", "lavfi", "-i", "sine=f=800:d=3", "-c:a", "libmp3lame", frames]);
      const tag = Buffer.alloc(5000);
      const tagSize = Buffer.from([21, 14, 7, 0].map((shift) => (tag.length >> shift) & 0x7f));
      const playlist = `#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:5.0,\nfile://${secret}\n#EXT-X-ENDLIST\n${"\n".repeat(16)}`;
      const disguised = Buffer.concat([
        Buffer.from("ID3\x03\x00\x00", "latin1"),
        tagSize,
        tag,
        Buffer.from(playlist),
        readFileSync(frames),
      ]);
      fixture.media.set("speechhls", disguised);
      fixture.media.set("ffmpeghls", disguised);
      await backend.postJob(
        speechBody("speechhls", {
          kind: "transcribe",
          language: "en",
          output: { name: "transcript.json", contentType: "application/json" },
        }),
      );
      await backend.postJob(
        jobBody(fixture, "ffmpeghls", {
          args: ["-hide_banner", "-y", "-i", "in0.mp4", "-vn", "-c:a", "pcm_s16le", "out.wav"],
          output: {
            name: "out.wav",
            url: `${fixture.baseUrl}/upload/ffmpeghls?X-Amz-Signature=deadbeef`,
            contentType: "audio/wav",
          },
        }),
      );
      for (const key of ["speechhls", "ffmpeghls"]) {
        const [callback] = await fixture.waitForCallback(key, 1, 30_000);
        expect(payload(callback!)).toMatchObject({ status: "failed", error: expect.stringMatching(/whitelist/) });
        // Named as the customer knows the file, without the backend's work directory.
        expect(payload(callback!).error).toMatch(/ in0\.mp4: Invalid argument/);
        expect(payload(callback!).error).not.toMatch(/media-job-|\/tmp\//);
        expect(fixture.of("PUT", `/upload/${key}`)).toHaveLength(0);
      }
    });

    it("refuses a malformed speech request with 400", async () => {
      const bad = await backend.postJob(
        speechBody("bad", {
          kind: "tts",
          text: "x",
          voice: "bob",
          language: "en",
          output: { name: "out.wav", contentType: "audio/wav" },
        }),
      );
      expect(bad.status).toBe(400);
      const clone = await backend.postJob(
        speechBody("bad2", {
          kind: "tts",
          text: "x",
          voice: "clone",
          language: "en",
          output: { name: "out.wav", contentType: "audio/wav" },
        }),
      );
      expect(clone.status).toBe(400);
      expect(((await clone.json()) as { message: string }).message).toMatch(/cloneProfile/);
    });

    it("speaks text as a 24 kHz mono 16-bit WAV in a male voice", async () => {
      await backend.postJob(
        speechBody("tts", {
          kind: "tts",
          inputs: undefined,
          text: "Bonjour à tous. Voici une phrase en français, pour essayer la voix de Thomas.",
          voice: "thomas",
          language: "fr",
          output: { name: "out.wav", contentType: "audio/wav" },
        }),
      );
      const [callback] = await fixture.waitForCallback("tts", 1, 60_000);
      expect(payload(callback!)).toMatchObject({ status: "completed" });
      const [put] = fixture.of("PUT", "/upload/tts");
      expect(put!.headers["content-type"]).toBe("audio/wav");
      const pcm = parseWav(put!.body);
      expect(pcm.sampleRate).toBe(24_000);
      expect(put!.body.readUInt16LE(22)).toBe(1); // mono
      expect(put!.body.readUInt16LE(34)).toBe(16);
      expect(pcm.samples.length / pcm.sampleRate).toBeGreaterThan(3);
      expect(pitchStats(pcm).median).toBeLessThan(140);
    });

    it("runs the finish pass over the spoken WAV before uploading it (test-mode mark)", async () => {
      const finish = {
        input: "speech.wav",
        args: ["-hide_banner", "-y", "-i", "speech.wav", "-c", "copy", "-metadata", "comment=TEST", "out.wav"],
      };
      const wrong = await backend.postJob(
        speechBody("finbad", {
          kind: "tts",
          text: "x",
          voice: "lea",
          language: "en",
          output: { name: "out.wav", contentType: "audio/wav" },
          finish: { ...finish, args: finish.args.slice(0, -1) },
        }),
      );
      expect(wrong.status).toBe(400);
      expect(((await wrong.json()) as { message: string }).message).toMatch(/last arg must be the output name/);
      await backend.postJob(
        speechBody("fin", {
          kind: "tts",
          inputs: undefined,
          text: "Hello there.",
          voice: "lea",
          language: "en",
          output: { name: "out.wav", contentType: "audio/wav" },
          finish,
        }),
      );
      const [callback] = await fixture.waitForCallback("fin", 1, 60_000);
      expect(payload(callback!)).toMatchObject({ status: "completed" });
      const [put] = fixture.of("PUT", "/upload/fin");
      const output = path.join(scratch, "fin-out.wav");
      writeFileSync(output, put!.body);
      const probe = await ffprobe(output);
      expect(probe.format.tags?.comment).toBe("TEST");
      expect(Number(probe.format.duration)).toBeGreaterThan(0.5);
      expect(parseWav(put!.body).sampleRate).toBe(24_000);
    });

    it("changes the voice by resynthesis (English): same duration, video copied, pitch toward the target", async () => {
      fixture.media.set("vc", speechClip);
      await backend.postJob(
        speechBody("vc", {
          kind: "voice-change",
          voice: "gilles",
          language: "en",
          output: { name: "out.mp4", contentType: "video/mp4" },
        }),
      );
      const [callback] = await fixture.waitForCallback("vc", 1, 90_000);
      expect(payload(callback!)).toMatchObject({ status: "completed" });
      const [put] = fixture.of("PUT", "/upload/vc");
      const input = path.join(scratch, "vc-in.mp4");
      const output = path.join(scratch, "vc-out.mp4");
      writeFileSync(input, speechClip);
      writeFileSync(output, put!.body);
      const [pin, pout] = [await ffprobe(input), await ffprobe(output)];
      expect(Math.abs(Number(pout.format.duration) - Number(pin.format.duration))).toBeLessThanOrEqual(0.1);
      expect(pout.streams.map((s) => s.codec_type).sort()).toEqual(["audio", "video"]);
      expect(await videoMd5(output)).toBe(await videoMd5(input));
      const f0 = await audioF0(output);
      console.log(
        `voice-change resynthesis: source f0 ${speechClipF0.toFixed(0)} Hz -> ${f0.toFixed(0)} Hz (gilles ~100)`,
      );
      expect(f0).toBeLessThan(speechClipF0 * 0.75);
      const log = backend.jobLogs().find((l) => l.jobId === "job_vc");
      expect(log?.voiceChangeMode).toBe(1);
    });

    it("keeps the original's channels under the new voice: a stereo bed stays stereo at 48 kHz", async () => {
      // lea's sentence in both channels, a 6 kHz tone (above the removed voice band) on the right alone.
      const stereo = path.join(scratch, "vc-stereo.mp4");
      await ffmpeg([
        "-i",
        path.join(scratch, "speech.mp4"),
        "-f",
        "lavfi",
        "-i",
        "sine=f=6000:r=48000:d=5",
        "-filter_complex",
        "[0:a]aresample=48000,asplit[l][v];[1:a]volume=0.3[t];[v][t]amix=inputs=2:normalize=0[r];[l][r]join=inputs=2:channel_layout=stereo[a]",
        "-map",
        "0:v",
        "-map",
        "[a]",
        "-c:v",
        "copy",
        "-c:a",
        "aac",
        "-b:a",
        "128k",
        stereo,
      ]);
      fixture.media.set("vcst", readFileSync(stereo));
      await backend.postJob(
        speechBody("vcst", {
          kind: "voice-change",
          voice: "thomas",
          language: "en",
          output: { name: "out.mp4", contentType: "video/mp4" },
        }),
      );
      const [callback] = await fixture.waitForCallback("vcst", 1, 90_000);
      expect(payload(callback!)).toMatchObject({ status: "completed" });
      const output = path.join(scratch, "vcst-out.mp4");
      writeFileSync(output, fixture.of("PUT", "/upload/vcst")[0]!.body);
      const { stdout } = await run("ffprobe", [
        "-v",
        "error",
        "-select_streams",
        "a:0",
        "-show_entries",
        "stream=channels,sample_rate",
        "-of",
        "csv=p=0",
        output,
      ]);
      expect(stdout.trim()).toBe("48000,2");
      const toneDb = async (channel: number) => {
        const { stderr } = await run("ffmpeg", [
          "-hide_banner",
          "-i",
          output,
          "-af",
          `pan=mono|c0=c${channel},bandpass=f=6000:w=400,volumedetect`,
          "-f",
          "null",
          "-",
        ]);
        return Number(/mean_volume: (-?[\d.]+) dB/.exec(stderr)?.[1]);
      };
      const [left, right] = [await toneDb(0), await toneDb(1)];
      console.log(
        `voice-change stereo bed: 6 kHz tone ${right.toFixed(1)} dB on the right, ${left.toFixed(1)} dB on the left`,
      );
      expect(right - left).toBeGreaterThan(20);
      expect(backend.jobLogs().find((l) => l.jobId === "job_vcst")?.voiceChangeMode).toBe(1);
    });

    it("changes the voice at signal level when the language cannot be transcribed", async () => {
      fixture.media.set("vcsig", speechClip);
      await backend.postJob(
        speechBody("vcsig", {
          kind: "voice-change",
          voice: "thomas",
          language: "fr",
          output: { name: "out.mp4", contentType: "video/mp4" },
        }),
      );
      const [callback] = await fixture.waitForCallback("vcsig", 1, 90_000);
      expect(payload(callback!)).toMatchObject({ status: "completed" });
      const [put] = fixture.of("PUT", "/upload/vcsig");
      const output = path.join(scratch, "vcsig-out.mp4");
      writeFileSync(output, put!.body);
      const pout = await ffprobe(output);
      expect(Math.abs(Number(pout.format.duration) - 5)).toBeLessThanOrEqual(0.1);
      expect(await videoMd5(output)).toBe(await videoMd5(path.join(scratch, "speech.mp4")));
      const f0 = await audioF0(output);
      console.log(
        `voice-change signal level: source f0 ${speechClipF0.toFixed(0)} Hz -> ${f0.toFixed(0)} Hz (thomas ~122)`,
      );
      expect(Math.abs(f0 - 122)).toBeLessThan(Math.abs(speechClipF0 - 122) / 2);
      expect(backend.jobLogs().find((l) => l.jobId === "job_vcsig")?.voiceChangeMode).toBe(2);
      // The source's mono stays mono (it came back stereo at 44.1 kHz), at 48 kHz as the other way.
      const { stdout } = await run("ffprobe", [
        "-v",
        "error",
        "-select_streams",
        "a:0",
        "-show_entries",
        "stream=channels,sample_rate",
        "-of",
        "csv=p=0",
        output,
      ]);
      expect(stdout.trim()).toBe("48000,1");
    });

    it("keeps a 5.1 original's six channels at signal level", async () => {
      const surround = path.join(scratch, "vc-51.mp4");
      await ffmpeg([
        "-i",
        path.join(scratch, "speech.mp4"),
        "-filter_complex",
        "[0:a]aresample=48000,pan=5.1|FL=c0|FR=c0|FC=c0|LFE=0*c0|BL=0.5*c0|BR=0.5*c0[a]",
        "-map",
        "0:v",
        "-map",
        "[a]",
        "-c:v",
        "copy",
        "-c:a",
        "aac",
        "-b:a",
        "256k",
        surround,
      ]);
      fixture.media.set("vc51", readFileSync(surround));
      await backend.postJob(
        speechBody("vc51", {
          kind: "voice-change",
          voice: "thomas",
          language: "fr",
          output: { name: "out.mp4", contentType: "video/mp4" },
        }),
      );
      const [callback] = await fixture.waitForCallback("vc51", 1, 90_000);
      expect(payload(callback!)).toMatchObject({ status: "completed" });
      const output = path.join(scratch, "vc51-out.mp4");
      writeFileSync(output, fixture.of("PUT", "/upload/vc51")[0]!.body);
      const { stdout } = await run("ffprobe", [
        "-v",
        "error",
        "-select_streams",
        "a:0",
        "-show_entries",
        "stream=channels,channel_layout,sample_rate",
        "-of",
        "csv=p=0",
        output,
      ]);
      expect(stdout.trim()).toBe("48000,6,5.1");
      expect(Math.abs(Number((await ffprobe(output)).format.duration) - 5)).toBeLessThanOrEqual(0.1);
      expect(backend.jobLogs().find((l) => l.jobId === "job_vc51")?.voiceChangeMode).toBe(2);
    });

    it("measures a voice profile and speaks with voice 'clone' at its pitch", async () => {
      fixture.media.set("vp", camilleSample);
      await backend.postJob(
        speechBody("vp", {
          kind: "voice-profile",
          language: "fr",
          output: { name: "profile.json", contentType: "application/json" },
        }),
      );
      const [callback] = await fixture.waitForCallback("vp", 1, 60_000);
      expect(payload(callback!)).toMatchObject({ status: "completed" });
      const profile = JSON.parse(fixture.of("PUT", "/upload/vp")[0]!.body.toString("utf8")) as Record<string, any>;
      console.log("voice profile of camille:", JSON.stringify(profile), `measured f0 ${camilleF0.toFixed(1)}`);
      expect(Math.abs(profile.f0Median - camilleF0) / camilleF0).toBeLessThan(0.05);
      expect(profile.nearestVoice).toBe("camille");
      expect(profile.engine).toBe("cpu-match");
      expect(profile.f0Range[0]).toBeLessThan(profile.f0Median);
      expect(profile.f0Range[1]).toBeGreaterThan(profile.f0Median);
      expect(profile.speakingRate).toBeUndefined(); // needs a transcriber for the sample's language

      const target = { ...profile, f0Median: 175, nearestVoice: "lea" };
      await backend.postJob(
        speechBody("clone", {
          kind: "tts",
          text: SENTENCE_EN,
          voice: "clone",
          language: "en",
          cloneProfile: target,
          output: { name: "out.wav", contentType: "audio/wav" },
        }),
      );
      const [cloneCallback] = await fixture.waitForCallback("clone", 1, 60_000);
      expect(payload(cloneCallback!)).toMatchObject({ status: "completed" });
      const f0 = pitchStats(parseWav(fixture.of("PUT", "/upload/clone")[0]!.body)).median;
      expect(Math.abs(f0 - 175) / 175).toBeLessThan(0.08);
    });

    it("refuses a voice profile from a sample shorter than 10 s", async () => {
      fixture.media.set("vpshort", speechClip);
      await backend.postJob(
        speechBody("vpshort", {
          kind: "voice-profile",
          output: { name: "profile.json", contentType: "application/json" },
        }),
      );
      const [callback] = await fixture.waitForCallback("vpshort", 1, 30_000);
      expect(payload(callback!)).toMatchObject({ status: "failed" });
      expect(payload(callback!).error).toMatch(/at least 10 s/);
    });
  },
);
