/**
 * The OpenAI-compatible adapter against a loopback server speaking the OpenAI audio wire format:
 * multipart in / verbose_json (with words) out for transcriptions, JSON in / WAV bytes out for
 * speech. The backend runs as a real process with TRANSCRIBE_ENGINE=openai TTS_ENGINE=openai.
 */
import { readFileSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseWav } from "../src/speech/audio.ts";
import { Backend, ffmpeg, Fixture, jobBody, scratchDir } from "./helpers.ts";

interface Seen {
  path: string;
  headers: http.IncomingHttpHeaders;
  form?: FormData;
  json?: Record<string, unknown>;
}

let fake: http.Server;
let fakeUrl = "";
const seen: Seen[] = [];
let speechWav: Buffer;
let backend: Backend;
let fixture: Fixture;
let scratch: string;
let clip: Buffer;

beforeAll(async () => {
  scratch = scratchDir();
  // What the fake server answers to /v1/audio/speech: 1.5 s, 22.05 kHz stereo (normalised by the adapter).
  const wav = path.join(scratch, "speech.wav");
  await ffmpeg([
    "-f",
    "lavfi",
    "-i",
    "sine=frequency=220:duration=1.5:sample_rate=22050",
    "-ac",
    "2",
    "-c:a",
    "pcm_s16le",
    wav,
  ]);
  speechWav = readFileSync(wav);
  const mp4 = path.join(scratch, "in.mp4");
  await ffmpeg(["-f", "lavfi", "-i", "sine=frequency=300:duration=2", "-c:a", "aac", mp4]);
  clip = readFileSync(mp4);

  fake = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const body = Buffer.concat(chunks);
      const record: Seen = { path: req.url ?? "", headers: req.headers };
      seen.push(record);
      if (req.headers.authorization !== "Bearer sk-test-key") {
        res
          .writeHead(401, { "content-type": "application/json" })
          .end(JSON.stringify({ error: { message: "bad key" } }));
        return;
      }
      if (req.method === "POST" && req.url === "/v1/audio/transcriptions") {
        // Parse the multipart body the way any server would (a web Request).
        record.form = await new Request("http://fake/", {
          method: "POST",
          headers: { "content-type": String(req.headers["content-type"]) },
          body,
        }).formData();
        res.writeHead(200, { "content-type": "application/json" }).end(
          JSON.stringify({
            task: "transcribe",
            language: "french",
            duration: 2.0,
            text: " Bonjour le monde.",
            segments: [{ id: 0, start: 0.1, end: 1.4, text: " Bonjour le monde." }],
            words: [
              { word: "Bonjour", start: 0.1, end: 0.6 },
              { word: "le", start: 0.6, end: 0.8 },
              { word: "monde.", start: 0.8, end: 1.4 },
            ],
          }),
        );
      } else if (req.method === "POST" && req.url === "/v1/audio/speech") {
        record.json = JSON.parse(body.toString("utf8")) as Record<string, unknown>;
        res.writeHead(200, { "content-type": "audio/wav", "content-length": speechWav.length }).end(speechWav);
      } else {
        res
          .writeHead(404, { "content-type": "application/json" })
          .end(JSON.stringify({ error: { message: "no such route" } }));
      }
    });
  });
  await new Promise<void>((resolve) => fake.listen(0, "127.0.0.1", resolve));
  fakeUrl = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
  fixture = await new Fixture().start();
  backend = await Backend.start({
    TRANSCRIBE_ENGINE: "openai",
    TTS_ENGINE: "openai",
    OPENAI_AUDIO_BASE_URL: fakeUrl,
    OPENAI_AUDIO_API_KEY: "sk-test-key",
    OPENAI_TRANSCRIBE_MODEL: "whisper-large-v3",
    OPENAI_TTS_MODEL: "tts-test",
  });
}, 60_000);

afterAll(async () => {
  await backend?.stop();
  await fixture?.stop();
  fake?.closeAllConnections();
  await new Promise<void>((resolve) => (fake ? fake.close(() => resolve()) : resolve()));
  rmSync(scratch, { recursive: true, force: true });
});

function speechBody(key: string, fields: Record<string, unknown>): Record<string, unknown> {
  const base = jobBody(fixture, key);
  return { jobId: base.jobId, inputs: base.inputs, callbackUrl: base.callbackUrl, deadlineMs: 60_000, ...fields };
}

describe("OpenAI-compatible engines", () => {
  it("reports the openai engines in the capabilities", async () => {
    const body = (await (await backend.fetch("/v1/capabilities")).json()) as Record<string, any>;
    expect(body.transcription.engine).toBe("openai");
    expect(body.transcription.languages).toEqual(expect.arrayContaining(["en", "fr", "de"]));
    expect(body.tts).toMatchObject({
      engine: "openai",
      voices: ["lea", "camille", "thomas", "gilles"],
      languages: ["fr", "en"],
    });
    expect([...body.voiceChange.resynthesisLanguages].sort()).toEqual(["en", "fr"]);
  });

  it("transcribes through POST /v1/audio/transcriptions (multipart, verbose_json, word timestamps)", async () => {
    fixture.media.set("oa", clip);
    const res = await backend.postJob(
      speechBody("oa", {
        kind: "transcribe",
        language: "fr",
        output: { name: "transcript.json", url: `${fixture.baseUrl}/upload/oa`, contentType: "application/json" },
      }),
    );
    expect(res.status).toBe(202);
    const [callback] = await fixture.waitForCallback("oa", 1, 30_000);
    expect(JSON.parse(callback!.body.toString("utf8"))).toMatchObject({ status: "completed" });
    const request = seen.find((s) => s.path === "/v1/audio/transcriptions")!;
    expect(request.headers["content-type"]).toMatch(/^multipart\/form-data; boundary=/);
    const form = request.form!;
    expect(form.get("model")).toBe("whisper-large-v3");
    expect(form.get("response_format")).toBe("verbose_json");
    expect(form.getAll("timestamp_granularities[]")).toEqual(["word"]);
    expect(form.get("language")).toBe("fr");
    const file = form.get("file") as File;
    const audio = parseWav(Buffer.from(await file.arrayBuffer()));
    expect(audio.sampleRate).toBe(16_000);
    expect(audio.samples.length / 16_000).toBeCloseTo(2, 1);
    const transcript = JSON.parse(fixture.of("PUT", "/upload/oa")[0]!.body.toString("utf8"));
    expect(transcript).toEqual({
      language: "fr",
      text: "Bonjour le monde.",
      words: [
        { text: "Bonjour", start: 0.1, end: 0.6 },
        { text: "le", start: 0.6, end: 0.8 },
        { text: "monde.", start: 0.8, end: 1.4 },
      ],
    });
  });

  it("speaks through POST /v1/audio/speech (JSON in, WAV out) with the mapped voice", async () => {
    await backend.postJob(
      speechBody("oatts", {
        kind: "tts",
        text: "Bonjour à tous.",
        voice: "thomas",
        language: "fr",
        output: { name: "out.wav", url: `${fixture.baseUrl}/upload/oatts`, contentType: "audio/wav" },
      }),
    );
    const [callback] = await fixture.waitForCallback("oatts", 1, 30_000);
    expect(JSON.parse(callback!.body.toString("utf8"))).toMatchObject({ status: "completed" });
    const request = seen.find((s) => s.path === "/v1/audio/speech")!;
    expect(request.headers["content-type"]).toMatch(/^application\/json/);
    expect(request.json).toEqual({
      model: "tts-test",
      input: "Bonjour à tous.",
      voice: "onyx",
      response_format: "wav",
    });
    const pcm = parseWav(fixture.of("PUT", "/upload/oatts")[0]!.body);
    expect(pcm.sampleRate).toBe(24_000);
    expect(pcm.samples.length / 24_000).toBeCloseTo(1.5, 1);
  });

  it("fails the job with the server's error when it refuses", async () => {
    await backend.postJob(
      speechBody("oabad", {
        kind: "tts",
        text: "Hello.",
        voice: "lea",
        language: "ja",
        output: { name: "out.wav", url: `${fixture.baseUrl}/upload/oabad`, contentType: "audio/wav" },
      }),
    );
    const [callback] = await fixture.waitForCallback("oabad", 1, 30_000);
    const payload = JSON.parse(callback!.body.toString("utf8"));
    expect(payload.status).toBe("failed");
    expect(payload.error).toMatch(/language 'ja' is not supported/);
  });
});
