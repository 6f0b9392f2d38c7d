#!/usr/bin/env node
/**
 * media-credits: the API from a terminal. Results go to stdout (an id, a path, or JSON with
 * --json); progress and messages to stderr. Exit codes: 0 done, 1 the API or the job refused,
 * 2 a usage error.
 */
import { readFileSync } from "node:fs";
import { ApiError, createApi, type JobStatus, unwrap } from "./client.ts";
import type { paths } from "./api-types.ts";
import { loadConfig, saveConfig, type Config } from "./config.ts";
import { downloadResult, waitForJob } from "./jobs.ts";
import { buildBody, describeTool, fetchTools } from "./tool-fields.ts";
import { uploadFile, resumableUpload } from "./upload.ts";
import { UsageError } from "./usage-error.ts";

const USAGE = `Usage: media-credits <command> [arguments] [--options]

  login [--base-url URL]              store the API key read from stdin (or MEDIA_CREDITS_API_KEY)
  upload <file> [--resumable] [--resume UPLOAD_ID]
                                      upload a file; files over 95 MB go in resumable parts
  upload-url <url>                    the API downloads the file itself
  <tool> [ids or text] [--field value ...] [--wait] [--out FILE] [--idempotency-key KEY]
                                      call a tool: ${"extract-audio, convert, trim, merge, watermark, clean-audio,"}
                                      subtitles, transcribe, text-to-speech, voice-change
  tools | help <tool>                 the tools and their fields (from the API's OpenAPI document)
  job <jobId> [--wait] [--out FILE]   a job's status; wait for its end; download its result
  cancel <jobId>                      cancel a queued or processing job (refunded)
  account                             the balance and the account's email

Options: --json (print the whole answer), --quiet (no progress), --timeout SECONDS (for --wait).
Field values: numbers and booleans as typed, lists by repeating the flag, @file reads a file
(--srt-content @subs.srt). The key comes from MEDIA_CREDITS_API_KEY or the config file
written by login; the base URL from MEDIA_CREDITS_BASE_URL, the config file, or
http://127.0.0.1:8787.`;


const BOOLEAN_FLAGS = new Set(["wait", "json", "quiet", "resumable", "help"]);

/** `--name value`, `--name=value`, repeatable; the boolean flags above take no value. */
function parseArgs(argv: string[]): { positionals: string[]; flags: Map<string, string[]>; options: Map<string, string | true> } {
  const positionals: string[] = [];
  const flags = new Map<string, string[]>();
  const options = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith("--")) {
      positionals.push(arg);
      continue;
    }
    const [name, inline] = arg.slice(2).split(/=(.*)/s, 2) as [string, string | undefined];
    if (BOOLEAN_FLAGS.has(name)) {
      options.set(name, true);
      continue;
    }
    const value = inline ?? argv[++i];
    if (value === undefined) throw new UsageError(`--${name} needs a value`);
    if (["out", "timeout", "idempotency-key", "base-url", "resume"].includes(name)) options.set(name, value);
    else flags.set(name, [...(flags.get(name) ?? []), value]);
  }
  return { positionals, flags, options };
}

const print = (value: unknown) => process.stdout.write(`${typeof value === "string" ? value : JSON.stringify(value, null, 2)}\n`);

type ToolPath = {
  [P in keyof paths]: paths[P] extends { post: { responses: { 200: { content: { "application/json": { estimatedSeconds: number } } } } } } ? P : never;
}[keyof paths];

async function finishJob(config: Config, job: JobStatus, options: Map<string, string | true>): Promise<number> {
  const api = createApi(config);
  const quiet = options.has("quiet");
  const wanted = options.has("wait") || options.has("out");
  const final = wanted ? await waitForJob(api, job.jobId, { quiet, timeoutSeconds: Number(options.get("timeout") ?? 3600) }) : job;
  if (typeof options.get("out") === "string" && final.status === "completed") {
    await downloadResult(config, final, options.get("out") as string, quiet);
  }
  if (options.has("json")) print(final);
  else if (final.status === "failed") process.stderr.write(`job ${final.jobId} failed: ${final.error ?? "no reason given"} (refunded)\n`);
  else print(wanted ? (typeof options.get("out") === "string" ? (options.get("out") as string) : final.result?.url ?? final.status) : final.jobId);
  return final.status === "failed" ? 1 : 0;
}

async function run(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const { positionals, flags, options } = parseArgs(rest);
  const quiet = options.has("quiet");
  if (!command || command === "--help" || command === "-h") {
    print(USAGE);
    return command ? 0 : 2;
  }
  const config = loadConfig();
  switch (command) {
    case "login": {
      const apiKey = process.env.MEDIA_CREDITS_API_KEY || readFileSync(0, "utf8").trim();
      if (!/^mk_(live|test)_/.test(apiKey)) throw new UsageError("login reads an API key (mk_live_...) from stdin or MEDIA_CREDITS_API_KEY");
      const baseUrl = String(options.get("base-url") ?? config.baseUrl).replace(/\/+$/, "");
      const account = unwrap(await createApi({ apiKey, baseUrl }).GET("/api/v1/account"));
      const file = saveConfig({ apiKey, baseUrl });
      process.stderr.write(`key checked (balance ${account.balance} credits), saved to ${file}\n`);
      return 0;
    }
    case "upload": {
      const file = positionals[0];
      if (!file || positionals.length > 1) throw new UsageError("upload takes one file");
      const api = createApi(config);
      const resumeId = options.get("resume");
      const result =
        typeof resumeId === "string"
          ? await resumableUpload(api, config, file, { quiet, resumeId })
          : await uploadFile(api, config, file, { quiet, resumable: options.has("resumable") });
      print(options.has("json") ? result : result.uploadId);
      return 0;
    }
    case "upload-url": {
      const url = positionals[0];
      if (!url) throw new UsageError("upload-url takes a URL");
      const result = unwrap(await createApi(config).POST("/api/v1/uploads", { body: { url } as never }));
      print(options.has("json") ? result : result.uploadId);
      return 0;
    }
    case "account": {
      print(unwrap(await createApi(config).GET("/api/v1/account")));
      return 0;
    }
    case "job": {
      const jobId = positionals[0];
      if (!jobId) throw new UsageError("job takes a job id");
      const job = unwrap(await createApi(config).GET("/api/v1/jobs/{id}", { params: { path: { id: jobId } } }));
      if (!options.has("wait") && !options.has("out")) {
        print(job);
        return 0;
      }
      return finishJob(config, job, options);
    }
    case "cancel": {
      const jobId = positionals[0];
      if (!jobId) throw new UsageError("cancel takes a job id");
      print(unwrap(await createApi(config).POST("/api/v1/jobs/{id}/cancel", { params: { path: { id: jobId } } })));
      return 0;
    }
    case "tools":
    case "help": {
      const tools = await fetchTools(config.baseUrl);
      const tool = positionals[0] && tools.get(positionals[0]);
      if (positionals[0] && !tool) throw new UsageError(`no tool ${positionals[0]}; tools: ${[...tools.keys()].join(", ")}`);
      print(tool ? describeTool(tool) : [...tools.values()].map((t) => `${t.name.padEnd(15)} ${t.summary}`).join("\n"));
      return 0;
    }
    default: {
      const tools = await fetchTools(config.baseUrl);
      const tool = tools.get(command);
      if (!tool) throw new UsageError(`unknown command ${command}; tools: ${[...tools.keys()].join(", ")}`);
      if (options.has("help")) {
        print(describeTool(tool));
        return 0;
      }
      const body = buildBody(tool, positionals, flags);
      const idempotencyKey = options.get("idempotency-key");
      const envelope = unwrap(
        await createApi(config).POST(`/api/v1/${command}` as ToolPath, {
          body: body as never,
          ...(typeof idempotencyKey === "string" ? { params: { header: { "idempotency-key": idempotencyKey } } } : {}),
        } as never),
      ) as { jobId: string; creditsUsed: number; creditsRemaining: number };
      if (!quiet) process.stderr.write(`job ${envelope.jobId} queued: ${envelope.creditsUsed} credit${envelope.creditsUsed === 1 ? "" : "s"} used, ${envelope.creditsRemaining} left\n`);
      if (options.has("json") && !options.has("wait") && !options.has("out")) {
        print(envelope);
        return 0;
      }
      return finishJob(config, { jobId: envelope.jobId, status: "queued" } as JobStatus, options);
    }
  }
}

try {
  process.exitCode = await run(process.argv.slice(2));
} catch (error) {
  if (error instanceof UsageError) {
    process.stderr.write(`${error.message}\n\n${USAGE}\n`);
    process.exitCode = 2;
  } else if (error instanceof ApiError) {
    process.stderr.write(`error ${error.status} ${error.code}: ${error.message}\n`);
    process.exitCode = 1;
  } else {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  }
}
