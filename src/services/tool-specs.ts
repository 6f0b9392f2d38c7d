/**
 * What each tool reads and how it is billed: which uploads its parameters name, which media
 * kinds they must be, what quantity the price applies to, the checks that need the probed
 * media (trim bounds, SRT syntax, cloned voice), and an honest estimate of the work.
 */
import { invalidRequest } from "../errors";
import { cuesFromSrt, SrtError } from "../media/tools/subtitles";
import type { CapabilityLookup } from "./speech";
import type { ToolParams } from "../tools/schemas";
import type { MediaKind } from "../media/probe";
import type { BillingQuantity, ToolName } from "./pricing";
import type { StoredUpload } from "./uploads";

export interface InputRef {
  field: string;
  uploadId: string;
  accepts: MediaKind[];
  /** The tool works on the audio track, so the upload must have one. */
  needsAudio?: boolean;
}

export interface ToolContext {
  /** Whether the account has a registered cloned voice. */
  hasClonedVoice: boolean;
  /** The speech engines' languages and voices, looked up only by the tools that need them. */
  speech: () => Promise<CapabilityLookup>;
}

export interface ToolSpec<T> {
  inputs(params: T): InputRef[];
  quantity(params: T, uploads: StoredUpload[]): BillingQuantity;
  check?(params: T, uploads: StoredUpload[], context: ToolContext): Promise<void> | void;
  /** Processing seconds per second of media (or per 100 characters for text-to-speech). */
  workFactor: number;
}

const media: MediaKind[] = ["video", "audio"];
const video: MediaKind[] = ["video"];
const totalMs = (uploads: StoredUpload[]) => uploads.reduce((sum, u) => sum + u.durationMs, 0);
const single = (uploadId: string, accepts: MediaKind[], needsAudio = false): InputRef[] => [
  { field: "uploadId", uploadId, accepts, needsAudio },
];

function requireClone(voice: string, context: ToolContext) {
  if (voice === "clone" && !context.hasClonedVoice) {
    throw invalidRequest("voice: clone needs a cloned voice registered on the account (POST /api/v1/voices/clone).");
  }
}

/** The same parser the burn-in uses, so what is accepted here renders later. */
/**
 * A language the configured transcription engines cannot do is refused before any debit. A
 * backend that is configured but does not answer right now is not a reason to refuse: the
 * job then fails and is refunded.
 */
async function checkTranscriptionLanguage(language: string, context: ToolContext, field = "language") {
  const lookup = await context.speech();
  if (lookup.state === "unreachable") return;
  const languages = lookup.state === "known" ? lookup.value.transcription.languages : [];
  if (languages.length === 0) {
    throw invalidRequest(field === "srtContent" ? "srtContent: Required, automatic transcription is not available on this server." : `${field}: transcription is not available on this server.`);
  }
  if (language !== "auto" && !languages.includes(language)) {
    throw invalidRequest(`${field}: '${language}' is not supported by the transcription engines (available: ${languages.join(", ")}).`);
  }
}

async function checkSrt(srt: string | undefined) {
  if (srt === undefined) return;
  try {
    await cuesFromSrt(srt);
  } catch (error) {
    if (error instanceof SrtError) throw invalidRequest(error.message.startsWith("srtContent") ? error.message : `srtContent: ${error.message}`);
    throw error;
  }
}

export const toolSpecs: { [K in ToolName]: ToolSpec<ToolParams[K]> } = {
  subtitles: {
    inputs: (p) => single(p.uploadId, video),
    quantity: (_p, u) => ({ durationMs: totalMs(u) }),
    check: (p, _u, context) => (p.srtContent === undefined ? checkTranscriptionLanguage("auto", context, "srtContent") : checkSrt(p.srtContent)),
    workFactor: 1.2,
  },
  transcribe: {
    inputs: (p) => single(p.uploadId, media, true),
    quantity: (_p, u) => ({ durationMs: totalMs(u) }),
    check: (p, _u, context) => checkTranscriptionLanguage(p.language, context),
    workFactor: 0.8,
  },
  "clean-audio": {
    inputs: (p) => single(p.uploadId, media, true),
    quantity: (_p, u) => ({ durationMs: totalMs(u) }),
    workFactor: 0.3,
  },
  "extract-audio": {
    inputs: (p) => single(p.uploadId, media, true),
    quantity: (_p, u) => ({ durationMs: totalMs(u) }),
    workFactor: 0.05,
  },
  convert: {
    inputs: (p) => single(p.uploadId, media),
    quantity: (_p, u) => ({ durationMs: totalMs(u) }),
    workFactor: 0.5,
  },
  merge: {
    inputs: (p) => p.uploadIds.map((uploadId, i) => ({ field: `uploadIds.${i}`, uploadId, accepts: video })),
    quantity: (_p, u) => ({ durationMs: totalMs(u) }),
    workFactor: 0.6,
  },
  watermark: {
    inputs: (p) => [
      ...single(p.uploadId, video),
      ...(p.watermarkUploadId ? [{ field: "watermarkUploadId", uploadId: p.watermarkUploadId, accepts: ["image" as const] }] : []),
    ],
    // The mark image has no duration; only the video is billed.
    quantity: (_p, u) => ({ durationMs: u[0].durationMs }),
    workFactor: 0.6,
  },
  trim: {
    inputs: (p) => single(p.uploadId, media),
    quantity: (p) => ({ durationMs: Math.round((p.end - p.start) * 1000) }),
    check: (p, [upload]) => {
      if (p.end * 1000 > upload.durationMs) {
        throw invalidRequest(`end: must not exceed the media duration (${upload.durationMs / 1000} s).`);
      }
    },
    workFactor: 0.3,
  },
  "text-to-speech": {
    inputs: () => [],
    quantity: (p) => ({ characters: [...p.text].length, clone: p.voice === "clone" }),
    check: (p, _u, context) => requireClone(p.voice, context),
    workFactor: 0.5,
  },
  "voice-change": {
    inputs: (p) => single(p.uploadId, video, true),
    quantity: (p, u) => ({ durationMs: totalMs(u), clone: p.voice === "clone" }),
    check: (p, _u, context) => requireClone(p.voice, context),
    workFactor: 1.5,
  },
};

/** Estimated processing time in whole seconds, at least 1; never used for billing. */
export function estimateSeconds(tool: ToolName, quantity: BillingQuantity): number {
  const factor = toolSpecs[tool].workFactor;
  const units = "durationMs" in quantity ? quantity.durationMs / 1000 : quantity.characters / 100;
  return Math.max(1, Math.ceil(2 + units * factor));
}
