/**
 * What a tool is, in one place: its request schema (validation and OpenAPI), a summary, when
 * an assistant should use it, its price under both pricing forms, the uploads it reads and what it bills on, the checks that
 * need the probed media, an estimate of the work, and how it runs (a speech stage first, an
 * ffmpeg command, or both). `src/tools/index.ts` lists the tools; pricing, routes, the OpenAPI
 * document, job creation and execution all derive from it.
 */
import type * as z from "zod";
import type { MediaKind } from "../media/probe";
import type { MediaCommand, MediaInput } from "../media/commands/command";
import type { Transcript } from "../media/transcript";
import type { CapabilityLookup } from "../services/media-jobs/speech-capabilities";
import type { StoredUpload } from "../services/media-jobs/uploads";

export type Rate =
  | { per: "minute"; credits: number; clone?: number }
  | { per: "call"; credits: number }
  | { per: "1000chars"; credits: number; clone: number }
  | { per: "free" };

/** What a call is billed on: milliseconds of media, or characters of text. */
export type BillingQuantity = { durationMs: number; clone?: boolean } | { characters: number; clone?: boolean };

export interface InputRef {
  field: string;
  uploadId: string;
  accepts: MediaKind[];
  /** The tool works on the audio track, so the upload must have one. */
  needsAudio?: boolean;
}

export interface ToolContext {
  /** Whether the account has a registered cloned voice, looked up only by the tools that speak. */
  hasClonedVoice: () => Promise<boolean>;
  /** The speech engines' languages and voices, looked up only by the tools that need them. */
  speech: () => Promise<CapabilityLookup>;
}

/** A file the job delivers: its name for the user and its type. */
export interface ResultFile {
  filename: string;
  contentType: string;
}

/**
 * The speech stage a job starts with, on the backend. `transcribe` writes timed words that a
 * later step turns into the result (fromTranscript) or feeds to the media stage (build);
 * `tts` and `voice-change` write the result itself. A `clone` voice gets a voice-profile
 * stage first when the account's sample has not been analysed yet.
 */
export type SpeechPlan =
  | { kind: "transcribe"; language: string }
  | { kind: "tts"; text: string; voice: string; language: string; result: ResultFile }
  | { kind: "voice-change"; voice: string; language: string; result: ResultFile };

/** What earlier stages produced for the ffmpeg stage (automatic subtitles use the transcript). */
export interface BuildContext {
  transcript?: Transcript;
  /** A test-mode job: its result is marked TEST (src/media/commands/test-mark.ts), so video is never stream-copied. */
  testMode?: boolean;
}

/**
 * What a tool's result is, as the next step of a pipeline reads it (src/services/media-jobs/pipelines.ts):
 * media with its billed length and streams, or text, which no tool reads.
 */
export type ProducedMedia =
  | {
      kind: "video" | "audio";
      durationMs: number;
      hasAudio: boolean;
      hasVideo: boolean;
      container: string;
      width?: number;
      height?: number;
      frameRate?: number;
      audioChannels?: number;
    }
  | { kind: "text" };

export interface ToolDefinition<Schema extends z.ZodType = z.ZodType> {
  summary: string;
  /** When an assistant should reach for the tool, beyond the summary (the connector's description). */
  guidance: string;
  /** What a per-minute tool bills when it is not its input's duration, as a sentence for assistants. */
  billedOn?: string;
  params: Schema;
  /** Form A (`payg`) and form B (monthly plans). */
  rates: { payg: Rate; plans: Rate };
  inputs(params: z.output<Schema>): InputRef[];
  quantity(params: z.output<Schema>, uploads: StoredUpload[]): BillingQuantity;
  check?(params: z.output<Schema>, uploads: StoredUpload[], context: ToolContext): Promise<void> | void;
  /**
   * The result's kind, length and streams, known before the job runs; absent for a tool that cannot
   * be a pipeline step (text-to-speech: the length of speech is known only once it is spoken).
   */
  produces?(params: z.output<Schema>, uploads: StoredUpload[]): ProducedMedia;
  /** Processing seconds per second of media (or per 100 characters for text-to-speech). */
  workFactor: number;
  /** The speech stage the job starts with, if any; `sourceFilename` names the first input. */
  speech?(params: z.output<Schema>, sourceFilename: string | undefined): SpeechPlan | undefined;
  /** Turns a transcript into the result file (tools whose result is text). */
  fromTranscript?(
    params: z.output<Schema>,
    transcript: Transcript,
    sourceFilename: string | undefined,
    context: { testMode: boolean },
  ): ResultFile & { content: string };
  /** The ffmpeg command of the media stage; absent for tools made of speech stages only. */
  build?(params: z.output<Schema>, inputs: MediaInput[], context: BuildContext): Promise<MediaCommand> | MediaCommand;
}

export const defineTool = <Schema extends z.ZodType>(definition: ToolDefinition<Schema>) => definition;
