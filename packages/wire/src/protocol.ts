/**
 * The wire contract between the Worker (src/) and the media backend (backend/): the one definition
 * both import as `@media-credits/wire/protocol` (the package packages/wire; wrangler bundles it
 * into the Worker, Node runs it in the backend). Nothing else may describe these shapes:
 *   - job requests (POST /v1/jobs): a zod schema per kind, and parseJobRequest, the checks a
 *     request passes before anything runs (names unique, ffmpeg args kept in the work directory);
 *   - file names (one rule for the backend's work directory and ffmpeg.wasm's), the fonts
 *     subdirectory, job ids, deadline bounds, catalogue voices;
 *   - the callback (its body, and its signature: HMAC-SHA256 over `timestamp.body`, the header
 *     names, one clock-skew bound);
 *   - the capabilities document (GET /v1/capabilities).
 * Runtime-neutral: zod and WebCrypto only (no `node:` imports), so it runs in workerd and in
 * Node 24; erasable TypeScript only (Node's type stripping).
 */
import * as z from "zod";
import { silenceCutArgs } from "./silence.ts";

// ---------------------------------------------------------------------------------------------
// Names, ids, bounds

/** Characters and length of a file name in the work directory (inputs, `files`, fonts, output). */
export const SAFE_NAME = /^[A-Za-z0-9._-]{1,128}$/;
/**
 * The fonts are also placed in this subdirectory of the work directory: `subtitles=...:fontsdir=fonts`
 * keeps libass from loading every file of the work directory (the input video included, about
 * its size in RAM) as a candidate font, which `fontsdir=.` does. Reserved as a file name.
 */
export const FONTS_SUBDIR = "fonts";
export const JOB_ID = /^[A-Za-z0-9_-]{1,128}$/;
export const MAX_DEADLINE_MS = 24 * 3600 * 1000;
export const DEFAULT_DEADLINE_MS = 15 * 60 * 1000;

/**
 * A flat file name of the work directory: SAFE_NAME, not `.`/`..`, no leading `-` (ffmpeg would
 * read it as an option), not FONTS_SUBDIR. The one rule of both engines: ffmpeg.wasm's runner
 * used to accept a leading `-` and the name `fonts`; the backend's stricter rule is the one kept
 * (no name the Worker's builders produce is affected).
 */
export const FileNameSchema = z
  .string()
  .regex(SAFE_NAME, "must match ^[A-Za-z0-9._-]{1,128}$")
  .refine((n) => n !== "." && n !== ".." && !n.startsWith("-"), "must not be '.', '..' or start with '-'")
  .refine((n) => n !== FONTS_SUBDIR, `'${FONTS_SUBDIR}' is reserved (the fonts' subdirectory)`);

export function isSafeFileName(name: string): boolean {
  return FileNameSchema.safeParse(name).success;
}

export const JobIdSchema = z.string().regex(JOB_ID, "must match ^[A-Za-z0-9_-]{1,128}$");

/** The voices the product sells; "clone" is the account's own voice on top. */
export const CATALOGUE_VOICES = ["lea", "camille", "thomas", "gilles"] as const;
export type CatalogueVoice = (typeof CATALOGUE_VOICES)[number];

// ---------------------------------------------------------------------------------------------
// Job requests (POST /v1/jobs)

const httpUrl = z
  .string()
  .max(16_384)
  .refine((value) => {
    try {
      const { protocol } = new URL(value);
      return protocol === "http:" || protocol === "https:";
    } catch {
      return false;
    }
  }, "must be an http(s) URL");

const mimeType = z.string().regex(/^[\w.+-]+\/[\w.+-]+(\s*;.{0,200})?$/, "must be a MIME type");

/** Fields every kind has. */
const envelope = {
  jobId: JobIdSchema,
  output: z.object({ name: FileNameSchema, url: httpUrl, contentType: mimeType }),
  callbackUrl: httpUrl,
  deadlineMs: z.number().int().min(1).max(MAX_DEADLINE_MS).default(DEFAULT_DEADLINE_MS),
};
const namedUrl = z.object({ name: FileNameSchema, url: httpUrl });
/** One downloaded input (audio or video). */
const oneInput = z.array(namedUrl).length(1, "exactly one input is expected");
/** "en", "fr-FR", "auto". */
const language = z
  .string()
  .regex(/^(auto|[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})?)$/, "must be 'auto' or an ISO 639-1 code");
const voice = z.enum([...CATALOGUE_VOICES, "clone"]);

/** What a voice-profile job writes, given back as `cloneProfile` for voice "clone". */
export const VoiceProfileSchema = z.looseObject({
  f0Median: z.number().min(40).max(600),
  /** 10th and 90th percentiles of f0 (Hz). */
  f0Range: z.tuple([z.number(), z.number()]).optional(),
  speakingRate: z.number().optional(),
  nearestVoice: z.enum(CATALOGUE_VOICES),
  engine: z.string().optional(),
});
export type VoiceProfile = z.infer<typeof VoiceProfileSchema>;

function requireProfile(job: { voice: string; cloneProfile?: unknown }, ctx: z.RefinementCtx): void {
  if (job.voice === "clone" && !job.cloneProfile) {
    ctx.addIssue({
      code: "custom",
      path: ["cloneProfile"],
      message: "voice 'clone' needs a cloneProfile (from a voice-profile job)",
    });
  }
}

/** One `loudnorm` filter (with or without options) inside a filter graph argument. */
export const LOUDNORM_FILTER = /(^|[,;\]])\s*loudnorm(=[^,;[\]]*)?\s*(?=$|[,;[])/g;

/** A loudness target (EBU R128 units, ffmpeg `loudnorm`'s ranges). */
export const LoudnormTargetSchema = z.object({
  /** Integrated loudness, LUFS. */
  integrated: z.number().min(-70).max(-5),
  /** Maximum true peak, dBTP. */
  truePeak: z.number().min(-9).max(0),
  /** Loudness range, LU. */
  lra: z.number().min(1).max(50),
});
export type LoudnormTarget = z.infer<typeof LoudnormTargetSchema>;

/** How many `loudnorm` filters an argv holds. */
const loudnormFilterCount = (args: string[]) =>
  args.reduce((count, arg) => count + (arg.match(LOUDNORM_FILTER)?.length ?? 0), 0);

/**
 * Demuxers an uploaded input may be read with (`-format_whitelist` in front of it, on both
 * engines): those of the containers uploads are accepted in. ffmpeg otherwise picks a demuxer by
 * content, and a file that passed the upload's checks as MP3 can hold an HLS playlist after a
 * long ID3 tag, whose entries would be opened on the host that runs the job.
 */
export const UPLOAD_DEMUXERS = "mov,matroska,avi,mp3,aac,wav,flac,ogg,image2,png_pipe,jpeg_pipe,webp_pipe";
export const UPLOAD_INPUT_OPTIONS = ["-format_whitelist", UPLOAD_DEMUXERS] as const;

/**
 * Demuxers an input may be read with over HTTP (FfmpegJobSchema.streamedInputs): containers whose
 * index lets ffmpeg seek with a range request and that never open other URLs themselves.
 */
export const STREAMED_DEMUXERS = ["mov", "matroska", "mp3"] as const;
export type StreamedDemuxer = (typeof STREAMED_DEMUXERS)[number];

/**
 * An ffmpeg pass over a job's result before it is uploaded (the TEST mark of a test-mode key's
 * result): the job (its speech stage, or its ffmpeg args) writes `input`, then `args` (argv over
 * work-directory names, ending with `output.name`; `fonts` placed as for an ffmpeg job) turn it
 * into the output.
 */
export const FinishSchema = z.object({
  input: FileNameSchema,
  args: z.array(z.string().max(4_096)).min(1).max(200),
  fonts: z.array(FileNameSchema).max(8).default([]),
});
export type FinishPass = z.output<typeof FinishSchema>;

// --- clean-audio's report (packages/wire/src/audio-report.ts runs it) ---

const figures = z.object({ integrated: z.number(), truePeak: z.number(), lra: z.number() });
const cut = z.object({ start: z.number().nonnegative(), end: z.number().nonnegative() });

/** The report as the backend's callback carries it (and as the job's row keeps it). */
export const AudioReportSchema = z.object({
  loudness: z.object({ before: figures.nullable(), after: figures.nullable() }),
  silence: z.object({ removedSeconds: z.number().nonnegative(), cuts: z.array(cut).max(2_000) }).optional(),
});
export type AudioReport = z.output<typeof AudioReportSchema>;
export type SilenceCut = z.output<typeof cut>;

/**
 * The silence pass of a command: `input` (what the command's own args write) is searched for
 * pauses, then cut into `output`. `encodeArgs`: the codec and muxer options of a cut result
 * (between the maps and the output name); `copyArgs`: the same for a file with nothing to cut
 * (streams copied as they are).
 */
export const SilencePassSchema = z.object({
  input: FileNameSchema,
  output: FileNameSchema,
  thresholdDb: z.number().min(-90).max(0),
  minPauseSeconds: z.number().positive().max(600),
  keepSeconds: z.number().nonnegative().max(60),
  /** The picture's frame rate: each cut starts and ends on a frame, so sound and picture lose the same time. */
  frameRate: z.number().positive().max(1_000).optional(),
  video: z.boolean(),
  /** Applied to the joined picture before it is encoded (even dimensions for H.264). */
  videoFilter: z.string().max(1_000).optional(),
  /** The input's length (the cleaned audio keeps the source's): where a pause still open at the end stops. */
  durationSeconds: z.number().nonnegative(),
  encodeArgs: z.array(z.string().max(4_096)).max(200),
  copyArgs: z.array(z.string().max(4_096)).max(200),
});
export type SilencePass = z.output<typeof SilencePassSchema>;

/** The report a command asks for: the source's loudness (`sourceMeterArgs`), and its silence pass. */
export const AudioReportPassSchema = z.object({
  sourceMeterArgs: z.array(z.string().max(4_096)).min(1).max(200),
  silence: SilencePassSchema.optional(),
});
export type AudioReportPass = z.output<typeof AudioReportPassSchema>;

/**
 * clean-audio's denoiser (packages/wire/src/rnnoise.ts): the args decode the source's sound into
 * `writes`, raw 32-bit float samples at 48 kHz with `channels` interleaved (they end with
 * `-f f32le <writes>`); the engine then runs RNNoise over that file in place, and the passes after
 * it read it as an input (`-f f32le -ar 48000 -ac <channels> -i <writes>`).
 */
export const DenoisePassSchema = z.object({
  args: z.array(z.string().max(65_536)).min(1).max(2_000),
  writes: FileNameSchema,
  channels: z.number().int().min(1).max(64),
});
export type DenoisePass = z.output<typeof DenoisePassSchema>;

export const FfmpegJobSchema = z
  .object({
    ...envelope,
    kind: z.literal("ffmpeg"),
    /** ffmpeg's argv without the program name, over names of the work directory. */
    args: z.array(z.string().max(65_536)).min(1).max(2_000),
    inputs: z.array(namedUrl).max(64).default([]),
    /** Generated files (ASS subtitles, drawtext's text), name -> base64 content. */
    files: z.record(FileNameSchema, z.base64()).default({}),
    /** Shipped fonts, copied from the backend's FONTS_DIR into the work directory and its FONTS_SUBDIR. */
    fonts: z.array(FileNameSchema).max(64).default([]),
    /**
     * Two-pass loudness normalisation to this target. The args hold exactly one `loudnorm` filter
     * (a placeholder: its own options are ignored) and end with the output name. The backend
     * first runs the args with ffmpeg's EBU R128 meter (`ebur128=peak=true`) in the filter's place
     * and the output replaced by `-f null -`, then the real run with the filter replaced by one
     * gain (`volume`) when that keeps the true peak and range within the target (loudnorm's
     * `linear=true` rule); else loudnorm measures the args into `-f null -` (`print_format=json`)
     * and the real run has it in its dynamic mode with those values. When nothing could be
     * measured, as on silence or under 0.4 s, the filter becomes `anull`. The filter's output
     * rate is the input's with one gain and 192 kHz with loudnorm, so args that need a rate set
     * it after the filter (`aformat=sample_rates=...`).
     */
    loudnorm: LoudnormTargetSchema.optional(),
    /**
     * Inputs ffmpeg reads over http(s) with range requests instead of downloading them first,
     * name -> demuxer: a trim of a long file reads the part it keeps and the encode starts at once.
     * The demuxer is forced so that no playlist or concat demuxer can open other URLs named inside
     * the file. The input URL must honour `Range` (R2, presigned or served by the Worker).
     */
    streamedInputs: z.record(FileNameSchema, z.enum(STREAMED_DEMUXERS)).default({}),
    /**
     * Inputs the backend downloads whole, as any other, but which ffmpeg reads while they arrive,
     * name -> demuxer: the backend serves the file on loopback HTTP and answers each range as its
     * bytes land (the part a read waits for is fetched next), so the run overlaps the download and
     * any seek (an index at the end, a second pass) is served from disk. Forced demuxer as above.
     */
    progressiveInputs: z.record(FileNameSchema, z.enum(STREAMED_DEMUXERS)).default({}),
    /**
     * With `loudnorm`: a measuring pass of its own instead of the args run into `-f null -`. Its
     * args hold exactly one `loudnorm` filter (where the meter goes) and end with
     * `writes`, a work-directory file the final args then read as an input: clean-audio filters
     * its audio once, into a lossless intermediate, and the final pass only applies the gain.
     */
    measurePass: z
      .object({ args: z.array(z.string().max(65_536)).min(1).max(2_000), writes: FileNameSchema })
      .optional(),
    /**
     * The billed duration of each media input (ms), when the args bound each input to it
     * (packages/wire/src/billed-duration.ts) and report their progress (`-progress`): a run whose result
     * is longer than those inputs can honestly make fails the job instead of delivering it.
     */
    billedInputsMs: z.array(z.number().int().nonnegative()).max(64).optional(),
    /** A pass over what the args wrote (they write `finish.input` instead of the output). */
    finish: FinishSchema.optional(),
    /**
     * clean-audio's report (packages/wire/src/audio-report.ts): the source's loudness measured
     * before the run, the result's after it; with `silence`, the args write `silence.input`, whose
     * pauses are found and cut into `silence.output` (the finish pass's input, or the output).
     */
    audioReport: AudioReportPassSchema.optional(),
    /** Runs before everything else of the job (the measuring pass included). */
    denoisePass: DenoisePassSchema.optional(),
  })
  .superRefine((job, ctx) => {
    const denoise = job.denoisePass;
    if (
      denoise &&
      (denoise.args.at(-1) !== denoise.writes || denoise.args.at(-2) !== "f32le" || denoise.args.at(-3) !== "-f")
    )
      ctx.addIssue({
        code: "custom",
        path: ["denoisePass", "args"],
        message: "the denoise pass must end with -f f32le and the file it writes",
      });
    const silence = job.audioReport?.silence;
    if (silence && silence.output !== (job.finish?.input ?? job.output.name))
      ctx.addIssue({
        code: "custom",
        path: ["audioReport", "silence", "output"],
        message: "the silence pass must write the finish pass's input, or the output",
      });
    if (job.measurePass) {
      const filters = loudnormFilterCount(job.measurePass.args);
      if (!job.loudnorm) ctx.addIssue({ code: "custom", path: ["measurePass"], message: "measurePass needs loudnorm" });
      if (filters !== 1)
        ctx.addIssue({
          code: "custom",
          path: ["measurePass", "args"],
          message: `the measuring pass must hold exactly one loudnorm filter (found ${filters})`,
        });
      if (job.measurePass.args.at(-1) !== job.measurePass.writes)
        ctx.addIssue({
          code: "custom",
          path: ["measurePass", "args"],
          message: "the measuring pass's last arg must be the file it writes",
        });
    }
    for (const field of ["streamedInputs", "progressiveInputs"] as const) {
      for (const name of Object.keys(job[field])) {
        if (!job.inputs.some((input) => input.name === name))
          ctx.addIssue({ code: "custom", path: [field, name], message: `'${name}' is not one of the inputs` });
      }
    }
    for (const name of Object.keys(job.progressiveInputs)) {
      if (name in job.streamedInputs)
        ctx.addIssue({
          code: "custom",
          path: ["progressiveInputs", name],
          message: `'${name}' is already a streamed input`,
        });
    }
    if (!job.loudnorm) return;
    const filters = loudnormFilterCount(job.args);
    if (filters !== 1)
      ctx.addIssue({
        code: "custom",
        path: ["args"],
        message: `with loudnorm, the args must hold exactly one loudnorm filter (found ${filters})`,
      });
    if (job.args.at(-1) !== (job.audioReport?.silence?.input ?? job.finish?.input ?? job.output.name))
      ctx.addIssue({
        code: "custom",
        path: ["args"],
        message: "with loudnorm, the last arg must be the file the args write",
      });
  })
  .superRefine(checkFinish);
/**
 * What a speech job's media input was billed for (ms): the job reads at most that much of it, plus
 * the tolerance of packages/wire/src/billed-duration.ts, and fails when the input holds more.
 */
const billedMs = z.number().int().nonnegative().optional();

export const TranscribeJobSchema = z.object({
  ...envelope,
  kind: z.literal("transcribe"),
  inputs: oneInput,
  language: language.default("auto"),
  billedMs,
});

function checkFinish(job: { output: { name: string }; finish?: FinishPass }, ctx: z.RefinementCtx): void {
  if (!job.finish) return;
  if (job.finish.input === job.output.name)
    ctx.addIssue({
      code: "custom",
      path: ["finish", "input"],
      message: "the finish pass must read another file than the output",
    });
  if (job.finish.args.at(-1) !== job.output.name)
    ctx.addIssue({
      code: "custom",
      path: ["finish", "args"],
      message: "the finish pass's last arg must be the output name",
    });
}

export const TtsJobSchema = z
  .object({
    ...envelope,
    kind: z.literal("tts"),
    text: z.string().min(1).max(100_000),
    voice,
    language: language.refine((l) => l !== "auto", "text to speech needs a language").default("fr"),
    cloneProfile: VoiceProfileSchema.optional(),
    finish: FinishSchema.optional(),
  })
  .superRefine(requireProfile)
  .superRefine(checkFinish);
export const VoiceChangeJobSchema = z
  .object({
    ...envelope,
    kind: z.literal("voice-change"),
    inputs: oneInput,
    voice,
    language: language.refine((l) => l !== "auto", "voice change needs the spoken language").default("fr"),
    cloneProfile: VoiceProfileSchema.optional(),
    finish: FinishSchema.optional(),
    billedMs,
  })
  .superRefine(requireProfile)
  .superRefine(checkFinish);
export const VoiceProfileJobSchema = z.object({
  ...envelope,
  kind: z.literal("voice-profile"),
  inputs: oneInput,
  language: language.optional(),
});

/** Job kinds: native ffmpeg, and the speech kinds (backend/src/speech/). */
export const JobRequestSchema = z.discriminatedUnion("kind", [
  FfmpegJobSchema,
  TranscribeJobSchema,
  TtsJobSchema,
  VoiceChangeJobSchema,
  VoiceProfileJobSchema,
]);

/** A request as the backend works with it (defaults applied). */
export type JobRequest = z.output<typeof JobRequestSchema>;
/** A request as a client may send it (fields with defaults optional). */
export type JobRequestInput = z.input<typeof JobRequestSchema>;
export type JobKind = JobRequest["kind"];
export type TranscribeJobRequest = z.output<typeof TranscribeJobSchema>;
export type TtsJobRequest = z.output<typeof TtsJobSchema>;
export type VoiceChangeJobRequest = z.output<typeof VoiceChangeJobSchema>;
export type VoiceProfileJobRequest = z.output<typeof VoiceProfileJobSchema>;

/** ffmpeg protocols (`ffmpeg -protocols`, 5.1) other than plain relative file names. */
const PROTOCOLS =
  "async|bluray|cache|concat|concatf|crypto|data|fd|ffrtmpcrypt|ffrtmphttp|file|ftp|gopher|gophers|hls|http|httpproxy|https|icecast|ipfs|ipns|md5|mmsh|mmst|pipe|prompeg|rist|rtmp|rtmpe|rtmps|rtmpt|rtmpte|rtmpts|rtp|sctp|sftp|smb|srt|srtp|subfile|tcp|tee|tls|udp|udplite|unix|zmq|amqp|librtmp|libsmbclient|libssh";
const PROTOCOL_URL = new RegExp(`(^|[=|,;'"\\s])(${PROTOCOLS}):`, "i");
/** `..` as a whole path segment or option value. */
const PARENT_SEGMENT = /(^|[/\\=:,;'"|\s])\.\.($|[/\\:,;'"|\s])/;
/** An absolute or home path as an option value inside a filter or option string. */
const ABSOLUTE_VALUE = /[=:,;|]\s*['"]?\s*[/\\~]/;

/**
 * Why `args` are unsafe, or null. Every path must stay in the work directory: no absolute or
 * home paths, no `..`, no protocol URLs (file:, http:, concat:, subfile,...); each `-i` names a
 * declared input or file (or is a lavfi graph after `-f lavfi`); the output name is written.
 */
export function checkFfmpegArgs(args: string[], declared: Set<string>, outputName: string): string | null {
  for (const [i, arg] of args.entries()) {
    const where = `args[${i}]`;
    if (arg.includes("\0")) return `${where} contains a NUL character`;
    if (/^[/\\~]/.test(arg)) return `${where} is an absolute path: only names in the work directory are allowed`;
    if (PARENT_SEGMENT.test(arg)) return `${where} refers to a parent directory ('..')`;
    if (ABSOLUTE_VALUE.test(arg))
      return `${where} contains an absolute path: only names in the work directory are allowed`;
    if (PROTOCOL_URL.test(arg) || /^subfile,/i.test(arg))
      return `${where} uses a protocol URL: only plain file names are allowed`;
  }
  let format: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "-f") format = args[i + 1];
    if (arg === "-safe" && args[i + 1] === "0") return `args[${i}]: '-safe 0' is not allowed`;
    if (arg === "-i") {
      const value = args[i + 1];
      if (value === undefined) return `args[${i}]: '-i' has no value`;
      if (format !== "lavfi" && !declared.has(value)) {
        return `args[${i + 1}]: input '${value}' is not one of the declared inputs or files`;
      }
      format = undefined;
      i++;
    }
  }
  if (!args.includes(outputName)) return `args do not write the output '${outputName}'`;
  return null;
}

export type ParseResult = { ok: true; job: JobRequest } | { ok: false; message: string; issues?: string[] };

/**
 * A job request checked as the backend checks it before accepting it: the schema, every name
 * used once (inputs, files, fonts, output), and for ffmpeg the args (checkFfmpegArgs). Whether
 * the kind's engine is installed and the fonts exist is the backend's own business.
 */
export function parseJobRequest(body: unknown): ParseResult {
  const parsed = JobRequestSchema.safeParse(body);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => `${issue.path.join(".") || "(body)"}: ${issue.message}`);
    return { ok: false, message: issues[0] ?? "invalid request", issues };
  }
  const job = parsed.data;
  const intermediate = job.kind === "ffmpeg" ? job.measurePass?.writes : undefined;
  const finishInput = "finish" in job ? job.finish?.input : undefined;
  const silence = job.kind === "ffmpeg" ? job.audioReport?.silence : undefined;
  const denoised = job.kind === "ffmpeg" ? job.denoisePass?.writes : undefined;
  const names = [
    ...("inputs" in job ? job.inputs.map((input) => input.name) : []),
    ...("files" in job ? Object.keys(job.files) : []),
    ...("fonts" in job ? job.fonts : []),
    ...(intermediate ? [intermediate] : []),
    ...(finishInput ? [finishInput] : []),
    ...(silence ? [silence.input] : []),
    ...(denoised ? [denoised] : []),
    job.output.name,
  ];
  const seen = new Set<string>();
  for (const name of names) {
    if (seen.has(name))
      return { ok: false, message: `file name '${name}' is used twice (inputs, files, fonts, output)` };
    seen.add(name);
  }
  if (job.kind !== "ffmpeg") return { ok: true, job };
  seen.delete(job.output.name);
  // With a finish pass the args write its input, and the pass reads that alone and writes the output.
  if (job.finish) seen.delete(job.finish.input);
  if (silence) seen.delete(silence.input);
  const problem = checkFfmpegArgs(job.args, seen, silence?.input ?? job.finish?.input ?? job.output.name);
  if (problem) return { ok: false, message: problem };
  if (job.audioReport) {
    // The meter reads what the job brings; the silence pass reads what the args wrote, with the args it is given.
    const meterProblem = checkFfmpegArgs(job.audioReport.sourceMeterArgs, seen, "-");
    if (meterProblem) return { ok: false, message: `audioReport.sourceMeterArgs: ${meterProblem}` };
    if (silence) {
      for (const cuts of [[], [{ start: 0, end: 1 }]]) {
        const cutProblem = checkFfmpegArgs(silenceCutArgs(silence, cuts), new Set([silence.input]), silence.output);
        if (cutProblem) return { ok: false, message: `audioReport.silence: ${cutProblem}` };
      }
    }
  }
  if (job.finish) {
    const finishProblem = checkFfmpegArgs(
      job.finish.args,
      new Set([job.finish.input, ...job.finish.fonts]),
      job.output.name,
    );
    if (finishProblem) return { ok: false, message: `finish: ${finishProblem}` };
  }
  if (job.measurePass) {
    // The measuring pass runs first: it reads what the job brings, not the file it writes.
    seen.delete(job.measurePass.writes);
    const measureProblem = checkFfmpegArgs(job.measurePass.args, seen, job.measurePass.writes);
    if (measureProblem) return { ok: false, message: `measurePass: ${measureProblem}` };
  }
  if (job.denoisePass) {
    // The denoise pass runs before all others: it reads what the job brings, not what any pass writes.
    seen.delete(job.denoisePass.writes);
    const denoiseProblem = checkFfmpegArgs(job.denoisePass.args, seen, job.denoisePass.writes);
    if (denoiseProblem) return { ok: false, message: `denoisePass: ${denoiseProblem}` };
  }
  return { ok: true, job };
}

// ---------------------------------------------------------------------------------------------
// Callback (POST callbackUrl, backend -> Worker)

export const CALLBACK_TIMESTAMP_HEADER = "x-backend-timestamp";
export const CALLBACK_SIGNATURE_HEADER = "x-backend-signature";
/**
 * How far a callback's timestamp may be from the receiver's clock. The backend's reference check
 * allowed 5 min, the Worker 10 min; the stricter 5 min is kept (the backend signs each attempt
 * right before sending it, so only clock drift counts).
 */
export const CALLBACK_MAX_SKEW_MS = 5 * 60 * 1000;
/** Longest `error` the Worker accepts; the backend cuts longer texts. */
export const CALLBACK_ERROR_MAX_CHARS = 4000;

export const CallbackSchema = z.object({
  jobId: JobIdSchema,
  status: z.enum(["completed", "failed"]),
  /** Meant for users; never contains URLs. */
  error: z.string().max(CALLBACK_ERROR_MAX_CHARS).optional(),
  outputBytes: z.number().int().nonnegative().optional(),
  /** Wall time of the run: preparing, downloads, the work, upload (queue wait excluded). */
  durationMs: z.number().nonnegative().optional(),
  /** Time spent waiting for a free slot before the run. */
  queuedMs: z.number().optional(),
  /** What the job's audioReport measured, when it asked for one. */
  report: AudioReportSchema.optional(),
});
export type CallbackBody = z.infer<typeof CallbackSchema>;

const encoder = new TextEncoder();

function hmacKey(secret: string) {
  return crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
    "verify",
  ]);
}

/** `sha256=<hex HMAC-SHA256(secret, timestamp + "." + body)>`. */
export async function signCallback(secret: string, timestamp: string, body: string): Promise<string> {
  const mac = new Uint8Array(
    await crypto.subtle.sign("HMAC", await hmacKey(secret), encoder.encode(`${timestamp}.${body}`)),
  );
  return `sha256=${Array.from(mac, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** The two signature headers of a callback sent at `now` (unix ms). */
export async function callbackHeaders(secret: string, body: string, now = Date.now()): Promise<Record<string, string>> {
  const timestamp = String(now);
  return {
    [CALLBACK_TIMESTAMP_HEADER]: timestamp,
    [CALLBACK_SIGNATURE_HEADER]: await signCallback(secret, timestamp, body),
  };
}

/**
 * Constant-time check (WebCrypto's HMAC verify) of a callback's signature over the raw body,
 * with its timestamp (unix ms, digits only) within CALLBACK_MAX_SKEW_MS of `now`. An empty
 * secret never verifies.
 */
export async function verifyCallbackSignature(
  secret: string,
  timestamp: string | null | undefined,
  body: string,
  signature: string | null | undefined,
  now = Date.now(),
): Promise<boolean> {
  if (!secret || !timestamp || !signature) return false;
  if (!/^\d{1,16}$/.test(timestamp) || Math.abs(now - Number(timestamp)) > CALLBACK_MAX_SKEW_MS) return false;
  const hex = /^sha256=([0-9a-f]{64})$/.exec(signature)?.[1];
  if (!hex) return false;
  const given = new Uint8Array(32);
  for (let i = 0; i < 32; i++) given[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return crypto.subtle.verify("HMAC", await hmacKey(secret), given, encoder.encode(`${timestamp}.${body}`));
}

// ---------------------------------------------------------------------------------------------
// Capabilities (GET /v1/capabilities)

export const CapabilitiesSchema = z.object({
  /** Version or description of each engine: ffmpeg always, transcription/tts/rubberband when present. */
  engines: z.looseObject({
    ffmpeg: z.string(),
    transcription: z.string().optional(),
    tts: z.string().optional(),
    rubberband: z.string().optional(),
  }),
  /** Job kinds this backend runs ("ffmpeg" and the speech kinds whose engines are installed); read as plain strings, so that a newer backend's kinds do not make the document unreadable. */
  kinds: z.array(z.string()),
  transcription: z.object({
    languages: z.array(z.string()),
    engine: z.string().optional(),
    detectsLanguage: z.boolean().optional(),
  }),
  tts: z.object({
    voices: z.array(z.string()),
    languages: z.array(z.string()).optional(),
    /** How "clone" is done ("cpu-match"). */
    clone: z.string().optional(),
    engine: z.string().optional(),
  }),
  voiceChange: z.object({
    /** Languages both engines handle (voice change by resynthesis); others are signal-level. */
    resynthesisLanguages: z.array(z.string()),
    signalLevel: z.boolean(),
  }),
  limits: z.object({ maxConcurrentJobs: z.number().int(), maxRequestBytes: z.number().int() }),
  load: z.object({ active: z.number().int(), queued: z.number().int(), known: z.number().int() }),
});
export type Capabilities = z.infer<typeof CapabilitiesSchema>;

// ---------------------------------------------------------------------------------------------
// Full-read probe (POST /v1/probe {url}): what the backend measured of a file whose headers give
// no duration; 422 {message} when ffmpeg cannot read it.

export const FullProbeSchema = z.object({
  durationMs: z.number().nonnegative(),
  hasAudio: z.boolean(),
  hasVideo: z.boolean(),
  videoCodec: z.string().optional(),
  audioCodec: z.string().optional(),
  width: z.number().int().positive().optional(),
  height: z.number().int().positive().optional(),
  /** Frames per second of the first video stream (ffprobe's avg_frame_rate, else r_frame_rate), 3 decimals. */
  frameRate: z.number().positive().optional(),
  /** Channels of the first audio stream. */
  audioChannels: z.number().int().min(1).max(64).optional(),
  /** Clockwise turn players apply to the video (display matrix); width and height are already turned. */
  rotation: z.union([z.literal(90), z.literal(180), z.literal(270)]).optional(),
});
export type FullProbe = z.infer<typeof FullProbeSchema>;

// ---------------------------------------------------------------------------------------------
// URL ingestion (POST /v1/ingest): the backend fetches a user's URL with each connection pinned to
// the address it checked (url-ingest.ts) and PUTs the file to `output.url`; 422 {error, message}
// when the URL is refused or the download fails (the message is the user's, without URLs).

export const IngestRequestSchema = z.object({
  /** The URL the user gave (checked by the backend, hop by hop). */
  url: z.string().min(1).max(16_384),
  output: z.object({ url: httpUrl, contentType: mimeType.optional() }),
  /** Local development only (ALLOW_PRIVATE_URLS): loopback and private addresses allowed. */
  allowPrivate: z.boolean().default(false),
  maxBytes: z.number().int().positive().max(5_000_000_000),
});
export type IngestRequest = z.infer<typeof IngestRequestSchema>;

export const IngestResultSchema = z.object({
  bytes: z.number().int().nonnegative(),
  /** After redirects: its path names the upload. */
  finalUrl: z.string(),
  contentType: z.string().nullable(),
});
export type IngestResult = z.infer<typeof IngestResultSchema>;
