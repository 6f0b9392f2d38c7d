/** The HTTP surface: health, auth, capabilities, request validation (nothing gets to run). */
import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CapabilitiesSchema } from "@media-credits/wire/protocol";
import { Backend, BACKEND_DIR, Fixture, jobBody, SECRET } from "./helpers.ts";

let backend: Backend;
let fixture: Fixture;

beforeAll(async () => {
  fixture = await new Fixture().start();
  // Without speech engines: the ffmpeg-only answer (the speech kinds have their own test files).
  backend = await Backend.start({ TRANSCRIBE_ENGINE: "none", TTS_ENGINE: "none" });
});

afterAll(async () => {
  await backend?.stop();
  await fixture?.stop();
});

describe("health and auth", () => {
  it("answers health without auth", async () => {
    const res = await backend.fetch("/v1/health", { auth: null });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
  });

  it("refuses missing, wrong and malformed credentials with 401 JSON", async () => {
    for (const auth of [
      null,
      "Bearer wrong",
      `Basic ${SECRET}`,
      `Bearer ${SECRET}x`,
      `Bearer ${SECRET.slice(1)}`,
      "Bearer",
    ]) {
      const res = await backend.fetch("/v1/capabilities", { auth });
      expect(res.status, String(auth)).toBe(401);
      expect(res.headers.get("content-type")).toMatch(/application\/json/);
      expect(await res.json()).toMatchObject({ error: "unauthorized" });
    }
    const res = await backend.postJob(jobBody(fixture, "noauth"), "Bearer nope");
    expect(res.status).toBe(401);
  });

  it("lists capabilities with the ffmpeg version line", async () => {
    const res = await backend.fetch("/v1/capabilities", { auth: `bearer ${SECRET}` });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, any>;
    expect(CapabilitiesSchema.safeParse(body).error).toBeUndefined(); // what the Worker reads (src/services/media-jobs/speech-capabilities.ts)
    expect(body.engines.ffmpeg).toMatch(/^ffmpeg version \S+/);
    expect(body.transcription).toEqual({ languages: [] });
    expect(body.tts).toEqual({ voices: [] });
    expect(body.kinds).toEqual(["ffmpeg", "voice-profile"]); // voice-profile needs only ffmpeg
    expect(body.voiceChange).toEqual({ resynthesisLanguages: [], signalLevel: expect.any(Boolean) });
  });

  it("answers 404 for unknown routes and unknown jobs, 405 for wrong methods", async () => {
    expect((await backend.fetch("/v1/nope")).status).toBe(404);
    expect((await backend.fetch("/v1/jobs/job_unknown")).status).toBe(404);
    expect((await backend.fetch("/v1/jobs")).status).toBe(405);
  });

  it("refuses to start without BACKEND_SECRET", async () => {
    const proc = spawn(process.execPath, ["src/server.ts"], {
      cwd: BACKEND_DIR,
      env: { PATH: process.env.PATH, PORT: "0" },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    proc.stderr.setEncoding("utf8").on("data", (s: string) => (stderr += s));
    const code = await new Promise((resolve) => proc.once("exit", resolve));
    expect(code).toBe(1);
    expect(stderr).toMatch(/BACKEND_SECRET is required/);
  });
});

describe("job request validation", () => {
  const bad = (key: string, patch: (body: Record<string, any>) => void) => {
    const body = jobBody(fixture, key) as Record<string, any>;
    patch(body);
    return body;
  };

  it("answers 400 to malformed requests", async () => {
    const cases: [string, unknown][] = [
      ["not json", "{nope"],
      ["array", []],
      ["no jobId", bad("a", (b) => delete b.jobId)],
      ["bad jobId", bad("b", (b) => (b.jobId = "job/../x"))],
      ["unknown kind", bad("c", (b) => (b.kind = "transcribe-everything"))],
      ["args not strings", bad("d", (b) => (b.args = ["-i", "in0.mp4", 3, "out.mp4"]))],
      ["empty args", bad("e", (b) => (b.args = []))],
      ["input url not http", bad("f", (b) => (b.inputs[0].url = "file:///etc/passwd"))],
      ["output without url", bad("g", (b) => delete b.output.url)],
      ["bad content type", bad("h", (b) => (b.output.contentType = "video mp4"))],
      ["callback not a url", bad("i", (b) => (b.callbackUrl = "not a url"))],
      ["deadline not a number", bad("j", (b) => (b.deadlineMs = "soon"))],
      ["deadline negative", bad("k", (b) => (b.deadlineMs = -5))],
      ["files not base64", bad("l", (b) => (b.files = { "subs.ass": "%%%not base64%%%" }))],
    ];
    for (const [label, body] of cases) {
      const res = await backend.postJob(body);
      expect(res.status, label).toBe(400);
      const json = (await res.json()) as { error: string; message: string };
      expect(json.error, label).toMatch(/^invalid_(json|request)$/);
      expect(json.message.length, label).toBeGreaterThan(0);
    }
  });

  it("refuses unsafe names and arguments", async () => {
    const cases: [string, Record<string, unknown>][] = [
      ["input name with a slash", bad("n1", (b) => (b.inputs[0].name = "dir/in0.mp4"))],
      ["input name ..", bad("n2", (b) => (b.inputs[0].name = ".."))],
      ["input name starting with -", bad("n3", (b) => (b.inputs[0].name = "-in0.mp4"))],
      ["output name with a slash", bad("n4", (b) => (b.output.name = "../out.mp4"))],
      ["file name absolute", bad("n5", (b) => (b.files = { "/tmp/x.ass": "AAAA" }))],
      ["font name with a slash", bad("n6", (b) => (b.fonts = ["../../etc/passwd"]))],
      ["duplicate names", bad("n7", (b) => (b.files = { "in0.mp4": "AAAA" }))],
      ["reserved name fonts", bad("n8", (b) => (b.files = { fonts: "AAAA" }))],
      ["absolute path arg", bad("a1", (b) => b.args.splice(-1, 0, "-attach", "/etc/passwd"))],
      ["home path arg", bad("a2", (b) => b.args.splice(-1, 0, "-attach", "~/secret"))],
      ["parent dir arg", bad("a3", (b) => b.args.splice(-1, 0, "-attach", "../secret"))],
      ["parent dir inside", bad("a4", (b) => b.args.splice(-1, 0, "-attach", "fonts/../../x"))],
      ["absolute path in a filter", bad("a5", (b) => b.args.splice(-1, 0, "-vf", "subtitles=/etc/passwd"))],
      [
        "quoted absolute path in a filter",
        bad("a6", (b) => b.args.splice(-1, 0, "-vf", "drawtext=textfile='/proc/self/environ'")),
      ],
      ["parent dir in a filter", bad("a7", (b) => b.args.splice(-1, 0, "-vf", "subtitles=subs.ass:fontsdir=.."))],
      ["http input", bad("a8", (b) => (b.args[b.args.indexOf("in0.mp4")] = "http://169.254.169.254/latest"))],
      ["file: protocol", bad("a9", (b) => (b.args[b.args.indexOf("in0.mp4")] = "file:in0.mp4"))],
      ["concat: protocol", bad("a10", (b) => (b.args[b.args.indexOf("in0.mp4")] = "concat:in0.mp4|in0.mp4"))],
      ["movie= with a URL", bad("a11", (b) => b.args.splice(-1, 0, "-vf", "movie=https\\://example.com/x.mp4"))],
      ["undeclared input", bad("a12", (b) => (b.args[b.args.indexOf("in0.mp4")] = "other.mp4"))],
      ["-safe 0", bad("a13", (b) => b.args.splice(0, 0, "-f", "concat", "-safe", "0"))],
      ["output not written", bad("a14", (b) => (b.args[b.args.length - 1] = "elsewhere.mp4"))],
      ["pipe output", bad("a15", (b) => (b.args[b.args.length - 1] = "pipe:1"))],
    ];
    for (const [label, body] of cases) {
      const res = await backend.postJob(body);
      expect(res.status, label).toBe(400);
      expect(((await res.json()) as { error: string }).error, label).toBe("invalid_request");
    }
  });

  it("refuses fonts the backend does not have", async () => {
    const res = await backend.postJob(bad("font", (b) => (b.fonts = ["Nope-Regular.ttf"])));
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: "unknown_font" });
  });

  it("refuses bodies over the size limit with 413", async () => {
    const huge = "A".repeat(17 * 1024 * 1024);
    const res = await backend.postJob(bad("huge", (b) => (b.files = { "big.bin": huge })));
    expect(res.status).toBe(413);
  });

  it("never ran anything for refused requests", () => {
    expect(fixture.requests).toEqual([]);
    expect(backend.jobLogs()).toEqual([]);
    expect(backend.leftovers()).toEqual([]);
  });
});
