/**
 * The command-line client (cli/) against the e2e stack, run as a user runs it: a Node process
 * with the key in its environment, progress on stderr, results on stdout and in files.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { renderTypes } from "../../cli/src/types-source";
import { eventually } from "../helpers/eventually";
import { balance, ffprobe, FIXTURES, newClient, stream, type Client } from "./client";

const root = path.resolve(import.meta.dirname, "../..");
const main = path.join(root, "cli/src/main.ts");
const scratch = mkdtempSync(path.join(tmpdir(), "e2e-cli-"));
const SRT =
  "1\n00:00:00,500 --> 00:00:02,500\nBonjour depuis la CLI\n\n2\n00:00:03,000 --> 00:00:04,500\nDeuxième ligne\n";

let client: Client;
let configHome: string;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cli(args: string[], options: { env?: Record<string, string>; input?: string } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [main, ...args], {
      env: {
        PATH: process.env.PATH,
        HOME: scratch,
        XDG_CONFIG_HOME: configHome,
        MEDIA_CREDITS_BASE_URL: client.base,
        MEDIA_CREDITS_API_KEY: client.auth.authorization.slice("Bearer ".length),
        ...options.env,
      },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout: stdout.trim(), stderr }));
    child.stdin.end(options.input ?? "");
  });
}

beforeAll(async () => {
  client = await newClient(inject("e2eMainUrl"));
  configHome = mkdtempSync(path.join(scratch, "config-"));
});

describe("media-credits CLI", () => {
  it("has types generated from the API's current OpenAPI document", async () => {
    const document = (await (await fetch(`${client.base}/api/v1/openapi.json`)).json()) as object;
    // A failure here means the API changed: regenerate with `npm run generate -w media-credits`.
    expect(readFileSync(path.join(root, "cli/src/api-types.ts"), "utf8")).toBe(await renderTypes(document));
  });

  it("type-checks against those types (a renamed route or field fails here)", () => {
    const result = spawnSync(
      process.execPath,
      [path.join(root, "node_modules/typescript/bin/tsc"), "-p", path.join(root, "cli")],
      { encoding: "utf8" },
    );
    expect(result.status, result.stdout + result.stderr).toBe(0);
  });

  it("runs as `npx media-credits` from the repository", () => {
    const result = spawnSync("npx", ["--no-install", "media-credits", "--help"], { cwd: root, encoding: "utf8" });
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain("media-credits <command>");
  });

  it("uploads, runs subtitles with --wait --out and writes a video with the burnt-in text", async () => {
    const uploaded = await cli(["upload", path.join(FIXTURES, "clip.mp4")]);
    expect(uploaded.code, uploaded.stderr).toBe(0);
    expect(uploaded.stdout).toMatch(/^upl_\w+$/);
    expect(uploaded.stderr).toMatch(/upload clip\.mp4: upl_\w+ \(\d+\.\d MB in/);

    const srtFile = path.join(scratch, "subs.srt");
    writeFileSync(srtFile, SRT);
    const out = path.join(scratch, "clip.srt.mp4");
    const before = await balance(client);
    const run = await cli([
      "subtitles",
      uploaded.stdout,
      "--srt-content",
      `@${srtFile}`,
      "--style",
      "impact",
      "--wait",
      "--out",
      out,
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe(out);
    expect(run.stderr).toMatch(/job job_\w+ queued: 1 credit used/);
    expect(run.stderr).toMatch(/completed in \d+\.\d s/);
    const probe = ffprobe(out);
    expect(stream(probe, "video")!.codec_name).toBe("h264");
    expect(Number(probe.format.duration)).toBeCloseTo(
      Number(ffprobe(path.join(FIXTURES, "clip.mp4")).format.duration),
      0,
    );
    expect(await balance(client)).toBeLessThan(before);
  });

  it("uploads a big file in resumable parts and, after an interruption, sends only the missing ones", async () => {
    // 40 MB of real audio: a 210 s stereo 48 kHz WAV, three parts.
    const file = path.join(scratch, "long.wav");
    const made = spawnSync("ffmpeg", [
      "-v",
      "error",
      "-y",
      "-f",
      "lavfi",
      "-i",
      "sine=frequency=440:sample_rate=48000:duration=210",
      "-ac",
      "2",
      file,
    ]);
    expect(made.status, String(made.stderr)).toBe(0);
    const size = statSync(file).size;
    const fresh = await cli(["upload", file, "--resumable"]);
    expect(fresh.code, fresh.stderr).toBe(0);
    expect(fresh.stderr).toMatch(/upl_\w+ \(\d+\.\d MB in 3 parts in \d+\.\d s\)/);

    // An interrupted upload: the session is open and only part 2 arrived.
    const headers = { ...client.auth, "content-type": "application/json" };
    const opened = (await (
      await fetch(`${client.base}/api/v1/uploads/multipart`, {
        method: "POST",
        headers,
        body: JSON.stringify({ filename: "long.wav", size }),
      })
    ).json()) as { uploadId: string; partSize: number };
    const bytes = readFileSync(file);
    const part2 = await fetch(`${client.base}/api/v1/uploads/multipart/${opened.uploadId}/parts/2`, {
      method: "PUT",
      headers: client.auth,
      body: bytes.subarray(opened.partSize, 2 * opened.partSize),
    });
    expect(part2.status).toBe(200);
    const resumed = await cli(["upload", file, "--resume", opened.uploadId]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toBe(opened.uploadId);
    expect(resumed.stderr).toContain("resumed with 2 of 3 parts to send");

    // What arrived is the file: a trim near its end has the source's tone.
    const out = path.join(scratch, "end.wav");
    const trimmed = await cli([
      "trim",
      opened.uploadId,
      "--start",
      "205",
      "--end",
      "207",
      "--wait",
      "--out",
      out,
      "--quiet",
    ]);
    expect(trimmed.code, trimmed.stderr).toBe(0);
    expect(Number(ffprobe(out).format.duration)).toBeCloseTo(2, 1);
  });

  it("types flag values by the tool's schema and prints the envelope, then waits on the job", async () => {
    const uploaded = await cli(["upload", path.join(FIXTURES, "tone.mp3"), "--quiet"]);
    const queued = await cli(["trim", uploaded.stdout, "--start", "0.5", "--end", "1.5", "--json"]);
    expect(queued.code, queued.stderr).toBe(0);
    const envelope = JSON.parse(queued.stdout) as { jobId: string; status: string; creditsUsed: number };
    expect(envelope).toMatchObject({ status: "queued", creditsUsed: 1 });
    // A folder as --out: the result under its own name inside it.
    const folder = mkdtempSync(path.join(scratch, "out-"));
    const waited = await cli(["job", envelope.jobId, "--out", folder, "--quiet"]);
    expect(waited.code, waited.stderr).toBe(0);
    const out = path.join(folder, "tone-trim.mp3");
    expect(waited.stdout).toBe(out);
    expect(Number(ffprobe(out).format.duration)).toBeCloseTo(1, 1);
    expect(stream(ffprobe(out), "audio")!.codec_name).toBe("mp3");
  });

  it("runs a pipeline from a steps file, a line per step, and downloads its result; its quote is what it debits", async () => {
    const steps = path.join(scratch, "steps.json");
    writeFileSync(
      steps,
      JSON.stringify([
        { tool: "trim", params: { start: 0.5, end: 2 } },
        { tool: "convert", params: { format: "webm" } },
      ]),
    );
    const clip = path.join(FIXTURES, "clip.mp4");
    const uploaded = await cli(["upload", clip, "--quiet"]);
    expect(uploaded.code, uploaded.stderr).toBe(0);
    const quoted = await cli(["pipeline", "quote", steps, "--upload-id", uploaded.stdout, "--json"]);
    expect(quoted.code, quoted.stderr).toBe(0);
    const quote = JSON.parse(quoted.stdout) as {
      tool: string;
      creditsRequired: number;
      steps: { tool: string; creditsRequired: number }[];
    };
    expect(quote.tool).toBe("pipeline");
    expect(quote.steps.map((step) => step.tool)).toEqual(["trim", "convert"]);
    const described = await cli(["pipeline", "quote", steps, "--upload-id", uploaded.stdout]);
    expect(described.stdout.split("\n")).toEqual([
      expect.stringMatching(
        new RegExp(`^pipeline: ${quote.creditsRequired} credits? \\(about \\d+ s\\); balance \\d+$`),
      ),
      expect.stringMatching(/^ {2}step 1\/2 trim: \d+ credits? \(about \d+ s\)$/),
      expect.stringMatching(/^ {2}step 2\/2 convert: \d+ credits? \(about \d+ s\)$/),
    ]);

    const before = await balance(client);
    const out = path.join(scratch, "pipeline.webm");
    // The run uploads the same file itself (--upload), and may cost no more than the quote.
    const run = await cli([
      "pipeline",
      "run",
      steps,
      "--upload",
      clip,
      "--max-credits",
      String(quote.creditsRequired),
      "--wait",
      "--out",
      out,
      "--json",
    ]);
    expect(run.code, run.stderr).toBe(0);
    const job = JSON.parse(run.stdout) as {
      status: string;
      steps: { tool: string; status: string; creditsUsed: number; engine?: string }[];
    };
    expect(job.status).toBe("completed");
    expect(job.steps.map((step) => [step.tool, step.status])).toEqual([
      ["trim", "completed"],
      ["convert", "completed"],
    ]);
    expect(job.steps.map((step) => step.creditsUsed)).toEqual(quote.steps.map((step) => step.creditsRequired));
    expect(await balance(client)).toBe(before - quote.creditsRequired);

    // stderr: the upload, the queued job, each step's end in order with its engine and time, the job's end.
    expect(run.stderr).toMatch(/upload clip\.mp4: upl_\w+ \(\d+\.\d MB in/);
    expect(run.stderr).toMatch(
      new RegExp(`job job_\\w+ queued: 2 steps, ${quote.creditsRequired} credits? used, \\d+ left`),
    );
    const lines = run.stderr.split("\n");
    const ends = lines.filter((line) => /^step \d\/2 [a-z-]+: completed/.test(line));
    expect(ends, run.stderr).toEqual([
      expect.stringMatching(/^step 1\/2 trim: completed \((wasm|backend), \d+\.\d s\)$/),
      expect.stringMatching(/^step 2\/2 convert: completed \((wasm|backend), \d+\.\d s\)$/),
    ]);
    expect(lines.findIndex((line) => /: completed in \d+\.\d s$/.test(line))).toBeGreaterThan(lines.indexOf(ends[1]!));

    const probe = ffprobe(out);
    expect(probe.format.format_name).toContain("webm");
    expect(["vp8", "vp9"]).toContain(stream(probe, "video")!.codec_name);
    expect(Math.abs(Number(probe.format.duration) - 1.5)).toBeLessThan(0.1);
  });

  it("saves a template, runs it with --var values typed by the fields they fill, lists and deletes it", async () => {
    const file = path.join(scratch, "template.json");
    writeFileSync(
      file,
      JSON.stringify({
        name: "cut to sound",
        steps: [
          { tool: "trim", params: { start: "{{start}}", end: "{{end}}" } },
          { tool: "extract-audio", params: { format: "{{format}}" } },
        ],
      }),
    );
    const saved = await cli(["templates", "save", file]);
    expect(saved.code, saved.stderr).toBe(0);
    const templateId = saved.stdout;
    expect(templateId).toMatch(/^tpl_\w+$/);
    const summary = "cut to sound  (trim -> extract-audio; variables: start, end, format)";
    expect(saved.stderr).toContain(`template ${templateId} saved: ${summary}`);
    const listed = await cli(["templates", "list"]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout.split("\n")).toContain(`${templateId}  ${summary}`);

    const uploaded = await cli(["upload", path.join(FIXTURES, "clip.mp4"), "--quiet"]);
    const input = ["--upload-id", uploaded.stdout];
    const vars = ["--var", "start=0.5", "--var", "end=1.5", "--var", "format=wav"];
    const before = await balance(client);
    // Refused before any call: text where {{start}} fills trim's start (a number), an unknown variable.
    const notNumber = await cli([
      "pipeline",
      "run",
      "--template",
      templateId,
      ...input,
      ...["--var", "start=abc", "--var", "end=1.5", "--var", "format=wav"],
    ]);
    expect([notNumber.code, notNumber.stderr]).toEqual([
      2,
      expect.stringContaining('--var start: {{start}} is trim\'s start, a number, not "abc"'),
    ]);
    const unknown = await cli(["pipeline", "run", "--template", templateId, ...input, ...vars, "--var", "speed=2"]);
    expect([unknown.code, unknown.stderr]).toEqual([
      2,
      expect.stringContaining(`template ${templateId} has no variable speed; its variables: start, end, format`),
    ]);
    expect(await balance(client)).toBe(before);

    const quoted = await cli(["pipeline", "quote", "--template", templateId, ...input, ...vars, "--json"]);
    expect(quoted.code, quoted.stderr).toBe(0);
    const quote = JSON.parse(quoted.stdout) as { creditsRequired: number; steps: { tool: string }[] };
    expect(quote.steps.map((step) => step.tool)).toEqual(["trim", "extract-audio"]);
    const folder = mkdtempSync(path.join(scratch, "template-"));
    const run = await cli(["pipeline", "run", "--template", templateId, ...input, ...vars, "--wait", "--out", folder]);
    expect(run.code, run.stderr).toBe(0);
    expect(path.dirname(run.stdout)).toBe(folder);
    expect(run.stdout).toMatch(/\.wav$/);
    expect(run.stderr).toMatch(/^step 2\/2 extract-audio: completed \((wasm|backend), \d+\.\d s\)$/m);
    const probe = ffprobe(run.stdout);
    expect(probe.streams.map((s) => [s.codec_type, s.codec_name])).toEqual([["audio", "pcm_s16le"]]);
    expect(Math.abs(Number(probe.format.duration) - 1)).toBeLessThan(0.1);
    expect(await balance(client)).toBe(before - quote.creditsRequired);

    const deleted = await cli(["templates", "delete", templateId]);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(JSON.parse(deleted.stdout)).toEqual({ templateId, deleted: true });
    const gone = await cli(["pipeline", "run", "--template", templateId, ...input, ...vars]);
    expect([gone.code, gone.stderr]).toEqual([1, expect.stringMatching(/^error 404 not_found: Template .+ not found/)]);
    expect(await balance(client)).toBe(before - quote.creditsRequired);
  });

  it("refuses bad flags before calling the API, and reports the API's refusals with its code", async () => {
    const uploaded = await cli(["upload", path.join(FIXTURES, "tone.mp3"), "--quiet"]);
    const before = await balance(client);
    // Usage errors exit with 2, the API's refusals with 1.
    const notNumber = await cli(["trim", uploaded.stdout, "--start", "abc", "--end", "2"]);
    expect(notNumber.code).toBe(2);
    expect(notNumber.stderr).toContain("--start takes a number");
    const unknown = await cli(["extract-audio", uploaded.stdout, "--bitrate", "320"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/extract-audio has no field --bitrate; its fields: --upload-id, --format/);
    const refused = await cli(["convert", uploaded.stdout, "--format", "gif"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^error 400 invalid_request: .*format/m);
    const usage = await cli(["frobnicate"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("unknown command frobnicate");
    // What would fail after the call (and its debit) is refused before it.
    const badTimeout = await cli(["extract-audio", uploaded.stdout, "--wait", "--timeout", "abc"]);
    expect([badTimeout.code, badTimeout.stderr]).toEqual([
      2,
      expect.stringContaining('--timeout takes whole seconds (at least 1), not "abc"'),
    ]);
    const noFolder = await cli(["extract-audio", uploaded.stdout, "--out", path.join(scratch, "missing", "x.mp3")]);
    expect([noFolder.code, noFolder.stderr]).toEqual([2, expect.stringContaining("the folder")]);
    const noFile = await cli(["subtitles", uploaded.stdout, "--srt-content", "@nothing-here.srt"]);
    expect([noFile.code, noFile.stderr]).toEqual([
      2,
      expect.stringContaining("cannot read nothing-here.srt (ENOENT); write @@ for a value that starts with @"),
    ]);
    const notAnOption = await cli(["account", "--base-url", "http://127.0.0.1:1"]);
    expect([notAnOption.code, notAnOption.stderr]).toEqual([
      2,
      expect.stringContaining("account has no option --base-url"),
    ]);
    const help = await cli(["upload", "--help"]);
    expect([help.code, help.stdout]).toEqual([0, expect.stringMatching(/^Usage: media-credits upload <file>/)]);
    expect(await balance(client)).toBe(before);
    // The cause of a network error, not just "fetch failed".
    const down = await cli(["account"], { env: { MEDIA_CREDITS_BASE_URL: "http://127.0.0.1:5" } });
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/^fetch failed: .*ECONNREFUSED 127\.0\.0\.1:5/);

    const poor = await newClient(client.base, 0);
    const broke = await cli(["extract-audio", uploaded.stdout], {
      env: { MEDIA_CREDITS_API_KEY: poor.auth.authorization.slice(7) },
    });
    expect(broke.code).toBe(1);
    expect(broke.stderr).toMatch(/error (400|402) (invalid_request|insufficient_credits)/);
  });

  it("sends a tool call again with its Idempotency-Key when the answer is lost, and is charged once", async () => {
    const uploaded = await cli(["upload", path.join(FIXTURES, "tone.mp3"), "--quiet"]);
    const before = await balance(client);
    // A loopback proxy in front of the API: the first trim call reaches the API, which debits and
    // queues the job, and then the connection breaks before its answer gets back.
    const trimKeys: string[] = [];
    let dropEveryAnswer = false;
    const proxy = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", async () => {
        const toolCall = req.method === "POST" && req.url === "/api/v1/trim";
        if (toolCall) trimKeys.push(String(req.headers["idempotency-key"]));
        const headers = Object.fromEntries(
          Object.entries(req.headers).filter(([name]) => !["host", "connection", "content-length"].includes(name)),
        ) as Record<string, string>;
        const answer = await fetch(new URL(req.url!, client.base), {
          method: req.method,
          headers,
          body: chunks.length ? Buffer.concat(chunks) : undefined,
        });
        const body = Buffer.from(await answer.arrayBuffer());
        if (toolCall && (trimKeys.length === 1 || dropEveryAnswer)) return void req.socket.destroy();
        res.writeHead(answer.status, {
          "content-type": answer.headers.get("content-type") ?? "application/octet-stream",
        });
        res.end(body);
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    try {
      const viaProxy = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      const out = path.join(scratch, "retried.mp3");
      const run = await cli(["trim", uploaded.stdout, "--start", "0", "--end", "1", "--wait", "--out", out], {
        env: { MEDIA_CREDITS_BASE_URL: viaProxy },
      });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toMatch(/retrying in 1 s/);
      expect(trimKeys).toHaveLength(2);
      expect(trimKeys[0]).toMatch(/^cli-[0-9a-f-]{36}$/);
      expect(trimKeys[1]).toBe(trimKeys[0]);
      expect(Number(ffprobe(out).format.duration)).toBeCloseTo(1, 1);
      // The repeat got the first call's job: one trim of 1 s, 1 credit.
      expect(await balance(client)).toBe(before - 1);

      // Every answer lost: after its retries the CLI names the key that picks the call up.
      dropEveryAnswer = true;
      const lost = await cli(["trim", uploaded.stdout, "--start", "1", "--end", "2"], {
        env: { MEDIA_CREDITS_BASE_URL: viaProxy },
      });
      expect(lost.code).toBe(1);
      const key = /--idempotency-key (cli-[0-9a-f-]{36}) to get its answer without paying twice/.exec(lost.stderr)?.[1];
      expect(key, lost.stderr).toBeDefined();
      expect(trimKeys.slice(2)).toEqual([key, key, key, key]);
      expect(await balance(client)).toBe(before - 2);
      const picked = await cli([
        "trim",
        uploaded.stdout,
        "--start",
        "1",
        "--end",
        "2",
        "--idempotency-key",
        key!,
        "--json",
      ]);
      expect(picked.code, picked.stderr).toBe(0);
      expect(JSON.parse(picked.stdout)).toMatchObject({ status: "queued", creditsUsed: 1 });
      expect(await balance(client)).toBe(before - 2);
    } finally {
      proxy.close();
    }
  });

  it("lists the tools and a tool's fields from the OpenAPI document", async () => {
    const tools = await cli(["tools"]);
    expect(
      tools.stdout
        .split("\n")
        .map((line) => line.split(/\s+/)[0])
        .sort(),
    ).toEqual([
      "clean-audio",
      "convert",
      "extract-audio",
      "merge",
      "subtitles",
      "text-to-speech",
      "transcribe",
      "trim",
      "voice-change",
      "watermark",
    ]);
    const help = await cli(["help", "watermark"]);
    expect(help.stdout).toContain("--type <string> (fixe | flottant)");
    expect(help.stdout).toContain("--upload-id <string> (required)");
  });

  it("stores the key with login (mode 0600) and uses it without the environment variable", async () => {
    const key = client.auth.authorization.slice(7);
    const login = await cli(["login", "--base-url", client.base], {
      env: { MEDIA_CREDITS_API_KEY: "" },
      input: `${key}\n`,
    });
    expect(login.code, login.stderr).toBe(0);
    const file = path.join(configHome, "media-credits/config.json");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ apiKey: key, baseUrl: client.base });
    const account = await cli(["account"], { env: { MEDIA_CREDITS_API_KEY: "", MEDIA_CREDITS_BASE_URL: "" } });
    expect(account.code, account.stderr).toBe(0);
    expect(JSON.parse(account.stdout).balance).toBe(await balance(client));
  });

  it("sets, rotates and removes the account's webhook, and lists a job's deliveries to it", async () => {
    const json = (run: Run) => {
      expect(run.code, run.stderr).toBe(0);
      return JSON.parse(run.stdout) as { url: string | null; secret: string; secretVersion: number };
    };
    const before = json(await cli(["webhook"]));
    expect(before.url).toBeNull();
    expect(before.secret).toMatch(/^whsec_/);
    const hook = `${inject("hookBaseUrl")}/cli-default`;
    expect(json(await cli(["webhook", "set", hook])).url).toBe(hook);
    const rotated = json(await cli(["webhook", "rotate-secret"]));
    expect(rotated.secretVersion).toBe(before.secretVersion + 1);
    expect(rotated.secret).not.toBe(before.secret);

    // A job without its own webhookUrl notifies the default, which the sink answers with 200.
    const uploaded = await cli(["upload", path.join(FIXTURES, "tone.mp3"), "--quiet"]);
    expect(uploaded.code, uploaded.stderr).toBe(0);
    const queued = await cli(["extract-audio", uploaded.stdout, "--format", "wav", "--json", "--quiet"]);
    expect(queued.code, queued.stderr).toBe(0);
    const jobId = (JSON.parse(queued.stdout) as { jobId: string }).jobId;
    const log = await eventually(
      async () => {
        const deliveries = await cli(["deliveries", jobId]);
        expect(deliveries.code, deliveries.stderr).toBe(0);
        return JSON.parse(deliveries.stdout) as {
          deliveries: { event: string; status: string; attempts: { responseStatus: number | null }[] }[];
        };
      },
      (read) => read.deliveries[0]?.status === "delivered",
      { timeoutMs: 30_000, intervalMs: 300, what: `job ${jobId}'s webhook delivered` },
    );
    expect(log.deliveries).toHaveLength(1);
    expect(log.deliveries[0]).toMatchObject({ event: "job.completed", status: "delivered" });
    expect(log.deliveries[0]!.attempts.map((a) => a.responseStatus)).toEqual([200]);

    expect(json(await cli(["webhook", "delete"])).url).toBeNull();
    expect(json(await cli(["webhook"])).url).toBeNull();
    // Usage errors cost nothing and say what the command takes.
    for (const args of [
      ["webhook", "set"],
      ["webhook", "frobnicate"],
      ["webhook", "delete", "now"],
    ]) {
      const refused = await cli(args);
      expect(refused.code, args.join(" ")).toBe(2);
      expect(refused.stderr).toContain("webhook [set <url> | delete | rotate-secret]");
    }
    const badUrl = await cli(["webhook", "set", "not a url"]);
    expect(badUrl.code).toBe(1);
    expect(badUrl.stderr).toMatch(/invalid_request/);
  });

  it("registers, shows and removes the cloned voice", async () => {
    const none = await cli(["voice"]);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/not_found/);
    const sample = await cli(["upload", path.join(FIXTURES, "long-61s.mp3"), "--quiet"]);
    expect(sample.code, sample.stderr).toBe(0);
    const cloned = await cli(["voice", "clone", sample.stdout]);
    expect(cloned.code, cloned.stderr).toBe(0);
    expect(JSON.parse(cloned.stdout)).toMatchObject({ voice: "clone", status: "ready" });
    const shown = await cli(["voice"]);
    expect(JSON.parse(shown.stdout)).toMatchObject({ voice: "clone", status: "ready" });
    const removed = await cli(["voice", "delete"]);
    expect(removed.code, removed.stderr).toBe(0);
    expect((await cli(["voice"])).code).toBe(1);
    const usage = await cli(["voice", "clone"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("voice [clone <uploadId> | delete]");
  });
});
