#!/usr/bin/env node
/**
 * media-credits: the API from a terminal. Results go to stdout (an id, a path, or JSON with
 * --json); progress and messages to stderr. Exit codes: 0 done, 1 the API or the job refused,
 * 2 a usage error.
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { ApiError, createApi, describeError, type JobStatus, unwrap } from "./client.ts";
import type { paths } from "./api-types.ts";
import { loadConfig, saveConfig, type Config } from "./config.ts";
import { abandonDownload, downloadResult, isFolder, waitForJob } from "./jobs.ts";
import {
  checkFirstInput,
  credits,
  describeQuote,
  describeTemplates,
  getTemplate,
  parseVars,
  type PipelineRequest,
  readPipelineFile,
  readTemplateFile,
  typedVariables,
  withFlags,
} from "./pipelines.ts";
import { buildBody, describeTool, fetchTools } from "./tool-fields.ts";
import { uploadFile, resumableUpload } from "./upload.ts";
import { UsageError } from "./usage-error.ts";
import { toolNames } from "./api-types.ts";

/** `words` joined by ", " after `first`, on lines of at most `width` characters, each indented by `indent`. */
function wrapped(first: string, words: readonly string[], indent: number, width: number): string {
  const lines = [first];
  words.forEach((word, index) => {
    const piece = index < words.length - 1 ? `${word},` : word;
    if (indent + lines.at(-1)!.length + 1 + piece.length > width) lines.push(piece);
    else lines[lines.length - 1] += ` ${piece}`;
  });
  return lines.join(`\n${" ".repeat(indent)}`);
}

const USAGE = `Usage: media-credits <command> [arguments] [--options]

  login [--base-url URL]              store the API key read from stdin (or MEDIA_CREDITS_API_KEY)
  upload <file> [--resumable] [--resume UPLOAD_ID]
                                      upload a file; files over 95 MB go in resumable parts
  upload-url <url>                    the API downloads the file itself
  <tool> [ids or text] [--field value ...] [--wait] [--out FILE] [--idempotency-key KEY]
                                      ${wrapped("call a tool:", toolNames, 38, 100)}
  quote <tool> [ids or text] [--field value ...]
                                      the exact price of a tool call, spending nothing
  pipeline run <steps.json> | --template ID [--var name=value ...] [--upload FILE | --upload-id ID]
        [--max-credits N] [--wait] [--out FILE]
                                      up to ten tools in order as one job, a line per step
  pipeline quote <steps.json> | --template ID [--var name=value ...] [--upload-id ID]
                                      the price of a pipeline, step by step, spending nothing
  templates [list | show <id> | save <file> [--name NAME] | delete <id>]
                                      saved pipelines whose params hold {{variables}}
  tools | help <command>              the tools and their fields (from the API's OpenAPI document)
  job <jobId> [--wait] [--out FILE]   a job's status; wait for its end; download its result
  cancel <jobId>                      cancel a queued or processing job (refunded)
  deliveries <jobId>                  the webhook deliveries of a job (attempts, answers)
  account                             the balance and the account's email
  webhook [set <url> | delete | rotate-secret]
                                      the account's default webhook: show, set, remove, new secret
  voice [clone <uploadId> | delete]   the account's cloned voice: show, register a sample, remove

Options: --json (print the whole answer), --quiet (no progress), --timeout SECONDS (for --wait),
--help or -h (a command's usage; nothing is called), --idempotency-key KEY (a tool call sent again
with the same key and body is answered as the first and charged once; without it, each run makes
its own key, so a call whose answer was lost is repeated safely). --out FILE writes the result there (a folder:
inside it, under the result's name; -: to stdout). Field values: numbers and booleans as typed,
lists by repeating the flag, @file reads a file (--srt-content @subs.srt), @@ a value starting with @
(--watermark-text @@brand). The key comes from MEDIA_CREDITS_API_KEY or the config file written by
login; the base URL from MEDIA_CREDITS_BASE_URL, the config file, or http://127.0.0.1:8787.`;

/** Each command's own usage line and the options it takes (a tool takes its fields besides). */
const COMMANDS: Record<string, { usage: string; options: string[] }> = {
  login: {
    usage: "login [--base-url URL]: stores the API key read from stdin (or MEDIA_CREDITS_API_KEY) after checking it",
    options: ["base-url"],
  },
  upload: {
    usage:
      "upload <file> [--resumable] [--resume UPLOAD_ID] [--json] [--quiet]: uploads a file; over 95 MB in resumable parts",
    options: ["resumable", "resume", "json", "quiet"],
  },
  "upload-url": { usage: "upload-url <url> [--json]: the API downloads the file itself", options: ["json"] },
  account: { usage: "account: the balance and the account's email", options: ["json"] },
  job: {
    usage:
      "job <jobId> [--wait] [--out FILE] [--timeout SECONDS] [--json] [--quiet]: a job's status; waits for its end; downloads its result",
    options: ["wait", "out", "timeout", "json", "quiet"],
  },
  cancel: { usage: "cancel <jobId>: cancels a queued or processing job (refunded)", options: ["json"] },
  deliveries: { usage: "deliveries <jobId>: the webhook deliveries of a job (attempts, answers)", options: ["json"] },
  webhook: {
    usage:
      "webhook [set <url> | delete | rotate-secret]: the account's default webhook (URL and signing secret): shows it, sets its URL, removes it, or issues a new secret",
    options: ["json"],
  },
  voice: {
    usage:
      "voice [clone <uploadId> | delete]: the account's cloned voice: shows it, registers an uploaded sample, or removes it",
    options: ["json"],
  },
  quote: {
    usage:
      "quote <tool> [ids or text] [--field value ...] [--json]: what the call would cost now, checked as the call is; nothing is spent",
    options: ["json"],
  },
  pipeline: {
    usage: `pipeline run <steps.json> | --template ID [--var name=value ...] [--upload FILE | --upload-id ID] [--max-credits N] [--webhook-url URL] [--wait] [--out FILE] [--timeout SECONDS] [--idempotency-key KEY] [--json] [--quiet]: runs up to ten tools in order as one job, each step reading the previous result, and with --wait prints a line per step as its state changes
       media-credits pipeline quote <steps.json> | --template ID [--var name=value ...] [--upload FILE | --upload-id ID] [--json]: what the pipeline would cost now, step by step; nothing is spent
  steps.json: a list of steps, [{"tool": "trim", "params": {"start": 0, "end": 5}}, {"tool": "convert", "params": {"format": "webm"}}],
  or a whole POST /api/v1/pipelines body; only the first step names its input (or --upload / --upload-id does).
  --var name=value fills the template's {{name}}, typed by the field it fills (@file reads a file).`,
    options: [
      "template",
      "var",
      "upload",
      "upload-id",
      "max-credits",
      "webhook-url",
      "wait",
      "out",
      "timeout",
      "idempotency-key",
      "json",
      "quiet",
    ],
  },
  templates: {
    usage:
      'templates [list | show <templateId> | save <file> [--name NAME] [--description TEXT] | delete <templateId>]: the account\'s saved pipelines; a file is {"name", "description", "steps"} or a list of steps with --name, its params may hold {{name}} placeholders that pipeline run --template fills with --var',
    options: ["name", "description", "json", "quiet"],
  },
  tools: { usage: "tools: the tools and what they do", options: [] },
  help: { usage: "help <command>: a command's usage, or a tool's fields", options: [] },
};
const commandUsage = (command: { usage: string }) => `Usage: media-credits ${command.usage}`;
const TOOL_OPTIONS = ["wait", "out", "timeout", "idempotency-key", "json", "quiet"];

const BOOLEAN_FLAGS = new Set(["wait", "json", "quiet", "resumable", "help"]);
const OPTIONS = new Set(["out", "timeout", "idempotency-key", "base-url", "resume"]);

/** `--name value`, `--name=value`, repeatable; the boolean flags above take no value; `--` ends the options. */
function parseArgs(argv: string[]): {
  positionals: string[];
  flags: Map<string, string[]>;
  options: Map<string, string | true>;
} {
  const positionals: string[] = [];
  const flags = new Map<string, string[]>();
  const options = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (arg === "-h") {
      options.set("help", true);
      continue;
    }
    if (!arg.startsWith("--")) {
      positionals.push(arg);
      continue;
    }
    const [name, inline] = arg.slice(2).split(/=(.*)/s, 2) as [string, string | undefined];
    if (BOOLEAN_FLAGS.has(name)) {
      if (inline !== undefined) throw new UsageError(`--${name} takes no value (write --${name} alone)`);
      options.set(name, true);
      continue;
    }
    const value = inline ?? argv[++i];
    if (value === undefined) throw new UsageError(`--${name} needs a value`);
    if (OPTIONS.has(name)) options.set(name, value);
    else flags.set(name, [...(flags.get(name) ?? []), value]);
  }
  return { positionals, flags, options };
}

/** Refuses what `command` does not take, before anything is called. */
function checkOptions(
  command: string,
  allowed: string[],
  flags: Map<string, string[]>,
  options: Map<string, string | true>,
): void {
  const unknown = [...options.keys(), ...flags.keys()].filter((name) => name !== "help" && !allowed.includes(name));
  if (unknown.length > 0) {
    throw new UsageError(
      `${command} has no option --${unknown[0]}${allowed.length ? `; its options: ${allowed.map((o) => `--${o}`).join(", ")}` : ""}`,
    );
  }
}

/**
 * `<command> [action [argument]]` checked before any call: no action shows, one of `actions`
 * acts, and only `withArgument` takes (and needs) one argument.
 */
function actionOf(
  command: string,
  positionals: string[],
  actions: string[],
  withArgument: string,
): [action: string | undefined, argument: string | undefined] {
  const [action, argument, ...extra] = positionals;
  const usage = commandUsage(COMMANDS[command]!);
  if (action !== undefined && !actions.includes(action))
    throw new UsageError(`${command} has no action ${action}; ${usage}`);
  if (extra.length > 0 || (action === withArgument) !== (argument !== undefined)) throw new UsageError(usage);
  return [action, argument];
}

/** A flag given at most once (the pipeline's and templates' options, read from the flags). */
function single(flags: Map<string, string[]>, name: string): string | undefined {
  const values = flags.get(name);
  if (values && values.length > 1) throw new UsageError(`--${name} is given ${values.length} times; give it once`);
  return values?.[0];
}

/** `--timeout` in whole seconds, checked before a tool is called (and its credits spent). */
function timeoutOf(options: Map<string, string | true>): number {
  const raw = options.get("timeout");
  if (raw === undefined) return 3600;
  if (typeof raw !== "string" || !/^\d+$/.test(raw) || Number(raw) < 1)
    throw new UsageError(`--timeout takes whole seconds (at least 1), not "${String(raw)}"`);
  return Number(raw);
}

const print = (value: unknown) =>
  process.stdout.write(`${typeof value === "string" ? value : JSON.stringify(value, null, 2)}\n`);

type ToolPath = {
  [P in keyof paths]: paths[P] extends {
    post: { responses: { 200: { content: { "application/json": { estimatedSeconds: number } } } } };
  }
    ? P
    : never;
}[keyof paths];

/** The job a command started or follows: named when the command stops before the job ends. */
let followedJob: string | undefined;

async function finishJob(config: Config, job: JobStatus, options: Map<string, string | true>): Promise<number> {
  const api = createApi(config);
  const quiet = options.has("quiet");
  const out = outputOf(options);
  const wanted = options.has("wait") || out !== undefined;
  followedJob = job.jobId;
  const final = wanted ? await waitForJob(api, job.jobId, { quiet, timeoutSeconds: timeoutOf(options) }) : job;
  const written =
    out !== undefined && final.status === "completed" ? await downloadResult(config, final, out, quiet) : undefined;
  followedJob = undefined;
  if (options.has("json")) print(final);
  else if (final.status === "failed")
    process.stderr.write(`job ${final.jobId} failed: ${final.error ?? "no reason given"} (refunded)\n`);
  else if (written !== undefined && written !== "-") print(written);
  else if (written === undefined)
    print(wanted ? (final.result ? `${config.baseUrl}${final.result.url}` : final.status) : final.jobId);
  return final.status === "failed" ? 1 : 0;
}

async function run(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  if (command === "--help" || command === "-h") {
    print(USAGE);
    return 0;
  }
  const { positionals, flags, options } = parseArgs(rest);
  const quiet = options.has("quiet");
  const builtIn = COMMANDS[command];
  if (builtIn) {
    if (options.has("help")) {
      print(commandUsage(builtIn));
      return 0;
    }
    // A quote's flags are its tool's fields, checked by buildBody.
    checkOptions(command, builtIn.options, command === "quote" ? new Map() : flags, options);
  }
  switch (command) {
    case "login": {
      // A broken config file is what login replaces: it is not read first.
      const config = loadConfig({ ignoreBrokenFile: true });
      const apiKey = process.env.MEDIA_CREDITS_API_KEY || readFileSync(0, "utf8").trim();
      if (!/^mk_(live|test)_/.test(apiKey))
        throw new UsageError("login reads an API key (mk_live_...) from stdin or MEDIA_CREDITS_API_KEY");
      const baseUrl = String(options.get("base-url") ?? config.baseUrl).replace(/\/+$/, "");
      const account = unwrap(await createApi({ apiKey, baseUrl }).GET("/api/v1/account"));
      const file = saveConfig({ apiKey, baseUrl });
      process.stderr.write(`key checked (balance ${account.balance} credits), saved to ${file}\n`);
      return 0;
    }
    case "upload": {
      const file = positionals[0];
      if (!file || positionals.length > 1) throw new UsageError("upload takes one file");
      const config = loadConfig();
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
      if (!url || positionals.length > 1) throw new UsageError("upload-url takes one URL");
      const result = unwrap(await createApi(loadConfig()).POST("/api/v1/uploads", { body: { url } as never }));
      print(options.has("json") ? result : result.uploadId);
      return 0;
    }
    case "account": {
      if (positionals.length > 0) throw new UsageError("account takes no argument");
      print(unwrap(await createApi(loadConfig()).GET("/api/v1/account")));
      return 0;
    }
    case "job": {
      const jobId = positionals[0];
      if (!jobId || positionals.length > 1) throw new UsageError("job takes one job id");
      timeoutOf(options);
      outputOf(options);
      const config = loadConfig();
      const job = unwrap(await createApi(config).GET("/api/v1/jobs/{id}", { params: { path: { id: jobId } } }));
      if (!options.has("wait") && !options.has("out")) {
        print(job);
        return 0;
      }
      return finishJob(config, job, options);
    }
    case "cancel": {
      const jobId = positionals[0];
      if (!jobId || positionals.length > 1) throw new UsageError("cancel takes one job id");
      print(
        unwrap(await createApi(loadConfig()).POST("/api/v1/jobs/{id}/cancel", { params: { path: { id: jobId } } })),
      );
      return 0;
    }
    case "deliveries": {
      const jobId = positionals[0];
      if (!jobId || positionals.length > 1) throw new UsageError("deliveries takes one job id");
      print(
        unwrap(await createApi(loadConfig()).GET("/api/v1/jobs/{id}/webhooks", { params: { path: { id: jobId } } })),
      );
      return 0;
    }
    case "webhook": {
      const [action, url] = actionOf("webhook", positionals, ["set", "delete", "rotate-secret"], "set");
      const api = createApi(loadConfig());
      if (action === undefined) print(unwrap(await api.GET("/api/v1/account/webhook")));
      else if (action === "set") print(unwrap(await api.PUT("/api/v1/account/webhook", { body: { url: url! } })));
      else if (action === "delete") print(unwrap(await api.DELETE("/api/v1/account/webhook")));
      else print(unwrap(await api.POST("/api/v1/account/webhook/rotate-secret")));
      return 0;
    }
    case "voice": {
      const [action, uploadId] = actionOf("voice", positionals, ["clone", "delete"], "clone");
      const api = createApi(loadConfig());
      if (action === undefined) print(unwrap(await api.GET("/api/v1/voices/clone")));
      else if (action === "clone")
        print(unwrap(await api.POST("/api/v1/voices/clone", { body: { uploadId: uploadId! } })));
      else print(unwrap(await api.DELETE("/api/v1/voices/clone")));
      return 0;
    }
    case "quote": {
      const [name, ...inputs] = positionals;
      const config = loadConfig();
      const tools = await fetchTools(config.baseUrl);
      const tool = name ? tools.get(name) : undefined;
      if (!tool)
        throw new UsageError(
          `quote takes a tool: ${[...tools.keys()].join(", ")}; a pipeline's price: media-credits pipeline quote <steps.json>`,
        );
      const params = buildBody(tool, inputs, flags);
      const quote = unwrap(
        await createApi(config).POST("/api/v1/quotes", { body: { tool: tool.name, params } as never }),
      );
      if (options.has("json")) print(quote);
      else
        print(
          `${quote.tool}: ${quote.creditsRequired} credit${quote.creditsRequired === 1 ? "" : "s"} (about ${quote.estimatedSeconds} s); balance ${quote.balance}${quote.sufficient ? "" : ", not enough"}`,
        );
      return 0;
    }
    case "pipeline":
      return pipelineCommand(positionals, flags, options);
    case "templates":
      return templatesCommand(positionals, flags, options);
    case "tools":
    case "help": {
      const name = positionals[0];
      if (name && COMMANDS[name]) {
        print(commandUsage(COMMANDS[name]));
        return 0;
      }
      const tools = await fetchTools(loadConfig().baseUrl);
      const tool = name && tools.get(name);
      if (name && !tool)
        throw new UsageError(`no command ${name}; commands: ${[...Object.keys(COMMANDS), ...tools.keys()].join(", ")}`);
      print(tool ? describeTool(tool) : [...tools.values()].map((t) => `${t.name.padEnd(15)} ${t.summary}`).join("\n"));
      return 0;
    }
    default: {
      const config = loadConfig();
      const tools = await fetchTools(config.baseUrl);
      const tool = tools.get(command);
      if (!tool)
        throw new UsageError(
          `unknown command ${command}; commands: ${[...Object.keys(COMMANDS), ...tools.keys()].join(", ")}`,
        );
      if (options.has("help")) {
        print(describeTool(tool));
        return 0;
      }
      checkOptions(command, TOOL_OPTIONS, new Map(), options);
      // Everything a typo could break is checked before the call spends credits.
      timeoutOf(options);
      outputOf(options);
      const body = buildBody(tool, positionals, flags);
      // Every call carries a key (the user's, or one of this run), so a call whose answer was lost
      // on the way is sent again without being charged twice.
      const given = options.get("idempotency-key");
      const idempotencyKey = typeof given === "string" ? given : `cli-${randomUUID()}`;
      const answer = await createApi(config)
        .POST(
          `/api/v1/${command}` as ToolPath,
          { body: body as never, params: { header: { "idempotency-key": idempotencyKey } } } as never,
        )
        .catch((error: unknown) => {
          // The retries ran out: the call may have reached the API. The same key gets its answer
          // (its job) without a second charge.
          throw new Error(
            `${describeError(error)}. The call may have been made: run the same command with --idempotency-key ${idempotencyKey} to get its answer without paying twice`,
          );
        });
      const envelope = unwrap(answer) as { jobId: string; creditsUsed: number; creditsRemaining: number };
      if (!quiet)
        process.stderr.write(
          `job ${envelope.jobId} queued: ${envelope.creditsUsed} credit${envelope.creditsUsed === 1 ? "" : "s"} used, ${envelope.creditsRemaining} left\n`,
        );
      if (options.has("json") && !options.has("wait") && !options.has("out")) {
        print(envelope);
        return 0;
      }
      return finishJob(config, { jobId: envelope.jobId, status: "queued" } as JobStatus, options);
    }
  }
}

const PIPELINE_QUOTE_OPTIONS = ["template", "var", "upload", "upload-id", "json", "quiet"];

/** `pipeline run|quote`: a steps file or a template, its first input, then the call and (--wait) its steps. */
async function pipelineCommand(
  positionals: string[],
  flags: Map<string, string[]>,
  options: Map<string, string | true>,
): Promise<number> {
  const [action, file, ...extra] = positionals;
  const usage = commandUsage(COMMANDS.pipeline!);
  if (action !== "run" && action !== "quote") throw new UsageError(`pipeline takes run or quote; ${usage}`);
  if (action === "quote") checkOptions("pipeline quote", PIPELINE_QUOTE_OPTIONS, flags, options);
  const templateId = single(flags, "template");
  if (extra.length > 0 || (file !== undefined && templateId !== undefined))
    throw new UsageError(`pipeline ${action} takes one steps file or --template ID, not both`);
  if (file === undefined && templateId === undefined)
    throw new UsageError(`pipeline ${action} needs a steps file or --template ID; ${usage}`);
  // Everything a typo could break is checked before a file is uploaded or the pipeline paid for.
  if (action === "run") {
    timeoutOf(options);
    outputOf(options);
  }
  const fileToUpload = single(flags, "upload");
  const uploadId = single(flags, "upload-id");
  if (fileToUpload !== undefined && uploadId !== undefined)
    throw new UsageError("--upload and --upload-id: give one input");
  const body: PipelineRequest = withFlags(
    file === undefined ? {} : readPipelineFile(file),
    { templateId, uploadId, maxCredits: single(flags, "max-credits"), webhookUrl: single(flags, "webhook-url") },
    file ?? "--template",
  );
  checkFirstInput(body, fileToUpload !== undefined);
  const vars = parseVars(flags.get("var") ?? []);
  if (body.templateId === undefined && vars.size > 0)
    throw new UsageError("--var fills a template's {{name}}: give --template ID");
  if (body.variables !== undefined && vars.size > 0)
    throw new UsageError(`${file} sets variables already: leave out --var or its variables`);
  const quiet = options.has("quiet");
  const config = loadConfig();
  const api = createApi(config);
  if (body.templateId !== undefined && body.variables === undefined) {
    // Read first: a missing template or variable is said before anything is uploaded.
    const [template, tools] = await Promise.all([getTemplate(api, body.templateId), fetchTools(config.baseUrl)]);
    body.variables = typedVariables(template, tools, vars);
  }
  if (fileToUpload !== undefined) body.uploadId = (await uploadFile(api, config, fileToUpload, { quiet })).uploadId;

  if (action === "quote") {
    const { maxCredits: _maxCredits, webhookUrl: _webhookUrl, ...priced } = body;
    const quote = unwrap(await api.POST("/api/v1/quotes", { body: priced }));
    print(options.has("json") ? quote : describeQuote(quote));
    return 0;
  }
  const given = options.get("idempotency-key");
  const idempotencyKey = typeof given === "string" ? given : `cli-${randomUUID()}`;
  const answer = await api
    .POST("/api/v1/pipelines", { body, params: { header: { "idempotency-key": idempotencyKey } } })
    .catch((error: unknown) => {
      // The same key and body get the first call's job; a new upload would make a new body.
      const input = fileToUpload !== undefined ? `--upload-id ${body.uploadId} (instead of --upload) and ` : "";
      throw new Error(
        `${describeError(error)}. The call may have been made: run the same command with ${input}--idempotency-key ${idempotencyKey} to get its answer without paying twice`,
      );
    });
  const envelope = unwrap(answer);
  if (!quiet)
    process.stderr.write(
      `job ${envelope.jobId} queued: ${envelope.steps.length} step${envelope.steps.length === 1 ? "" : "s"}, ${credits(envelope.creditsUsed)} used, ${envelope.creditsRemaining} left\n`,
    );
  if (options.has("json") && !options.has("wait") && !options.has("out")) {
    print(envelope);
    return 0;
  }
  return finishJob(config, { jobId: envelope.jobId, status: "queued" } as JobStatus, options);
}

/** `templates [list | show ID | save FILE | delete ID]`. */
async function templatesCommand(
  positionals: string[],
  flags: Map<string, string[]>,
  options: Map<string, string | true>,
): Promise<number> {
  const [action = "list", argument, ...extra] = positionals;
  const usage = commandUsage(COMMANDS.templates!);
  if (!["list", "show", "save", "delete"].includes(action))
    throw new UsageError(`templates has no action ${action}; ${usage}`);
  if (extra.length > 0 || (action === "list") !== (argument === undefined)) throw new UsageError(usage);
  if (action !== "save") checkOptions(`templates ${action}`, ["json"], flags, options);
  const api = createApi(loadConfig());
  switch (action) {
    case "list": {
      const { templates } = unwrap(await api.GET("/api/v1/templates"));
      print(options.has("json") ? templates : describeTemplates(templates));
      return 0;
    }
    case "show":
      print(await getTemplate(api, argument!));
      return 0;
    case "save": {
      const request = readTemplateFile(argument!, single(flags, "name"), single(flags, "description"));
      const template = unwrap(await api.POST("/api/v1/templates", { body: request }));
      if (!options.has("quiet") && !options.has("json"))
        process.stderr.write(
          `template ${template.templateId} saved: ${describeTemplates([template]).slice(template.templateId.length + 2)}\n`,
        );
      print(options.has("json") ? template : template.templateId);
      return 0;
    }
    default:
      print(
        unwrap(await api.DELETE("/api/v1/templates/{templateId}", { params: { path: { templateId: argument! } } })),
      );
      return 0;
  }
}

/** `--out`: a file, a folder (the result's own name inside it), or - (stdout); its folder must exist. */
function outputOf(options: Map<string, string | true>): string | undefined {
  const out = options.get("out");
  if (typeof out !== "string") return undefined;
  if (out === "-") return out;
  const folder = isFolder(out) ? out : path.dirname(out);
  if (!isFolder(folder)) throw new UsageError(`--out ${out}: the folder ${folder} does not exist`);
  return out;
}

/** What to run to pick up a job this process leaves before its end. */
const followUp = (jobId: string) =>
  `job ${jobId} goes on on the server: media-credits job ${jobId} --wait --out FILE\n`;

process.on("SIGINT", () => {
  // Progress bars hide the cursor and turn line wrapping off: give the terminal back.
  if (process.stderr.isTTY) process.stderr.write("\x1b[?25h\x1b[?7h\n");
  abandonDownload();
  if (followedJob) process.stderr.write(followUp(followedJob));
  process.exit(130);
});

try {
  process.exitCode = await run(process.argv.slice(2));
} catch (error) {
  if (error instanceof UsageError) {
    process.stderr.write(`${error.message}\n(media-credits --help for the usage)\n`);
    process.exitCode = 2;
  } else if (error instanceof ApiError) {
    process.stderr.write(`error ${error.status} ${error.code}: ${error.message}\n`);
    process.exitCode = 1;
  } else {
    process.stderr.write(`${describeError(error)}\n`);
    process.exitCode = 1;
  }
  if (followedJob) process.stderr.write(followUp(followedJob));
}
