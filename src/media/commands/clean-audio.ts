/**
 * clean-audio: removes background noise, keeps the voice and brings it to a steady loudness
 * (the request's target, -16 LUFS and -1.5 dBTP by default, in two passes on both engines); the
 * picture is copied untouched. First RNNoise, a neural denoiser (packages/wire/src/rnnoise.ts),
 * over the sound decoded to raw samples, on the backend (the media Worker has no room for its
 * wasm: routing sends these calls to the backend, and without one the Worker runs the rest of the
 * chain on the undenoised samples): it takes out non-stationary noise and the noise of pauses. Then the graph, whose order is the invariant: level (dynaudnorm as a
 * near-constant gain), then fixed-floor afftdn (the steady noise RNNoise leaves under a held
 * tone), gate and limiter, then one measured gain, because noise judged before levelling is
 * judged by the recording level. The sound stays in sync with the copied picture and keeps the
 * source's exact length and start. Why, and every measurement: docs/decisions/0006-clean-audio-chain.md.
 */
import type { CleanAudioInput } from "../../tools/clean-audio";
import type { LoudnormTarget } from "@media-credits/wire/protocol";
import { loudnessMeterOf } from "@media-credits/wire/audio-report";
import { type MediaCommand, type MediaInput, resultName } from "./command";
import { EVEN_SIZE_FILTER, isAudioOnly, videoEncoderArgs, wasmHeapEstimate } from "./encoders";
import { containerFamily, familyAudioArgs, familyContentType } from "./trim";

const MiB = 1024 * 1024;

/** The measuring run's meter on ffmpeg.wasm, per channel, with margin (6.4 MiB measured on stereo, 16 on 5.1). */
const METER_BYTES_PER_CHANNEL = 4 * MiB;
/** One 0.5 s dynaudnorm frame of silence in front, at 48 kHz. */
const LEAD_SAMPLES = 24_000;
/** Two afftdn passes at 48 kHz, 1200 samples each. */
const AFFTDN_DELAY_SAMPLES = 2_400;

/**
 * ffmpeg 5.1's alimiter mixes the channels up beyond two once it limits (a 5.1 tone in the centre
 * came out at the same level in all six channels, silent ones included); acompressor, linked on
 * the loudest channel, keeps each channel's own signal and holds peaks within 0.4 dB of the limit.
 */
const stereoLimiter = (ceiling: string) => `alimiter=limit=${ceiling}:level=0:latency=1`;
const surroundLimiter = (ceiling: string) =>
  `acompressor=threshold=${ceiling}:ratio=20:attack=0.01:release=50:knee=1:link=maximum:detection=peak`;

/** What both engines normalise to by default: -16 LUFS integrated, the usual target for spoken content on the web and in podcasts. */
export const CLEAN_AUDIO_LOUDNESS: LoudnormTarget = { integrated: -16, truePeak: -1.5, lra: 11 };

/** The drive into the limiter at the default target: the levelled voice (about -20 dBFS RMS) raised to about -11. */
const DEFAULT_DRIVE_DB = 9;

/**
 * The limiter's ceiling, linear, at the target's true peak rounded down to 0.01 (0.84 at -1.5
 * dBTP); it limits sample peaks, and the measured gain after it keeps the true peak (loudness.ts).
 */
const limiterCeiling = (truePeak: number) => (Math.floor(10 ** (truePeak / 20) * 100) / 100).toString();

/** The default target's room between the loudness and the true peak, dB. */
const DEFAULT_HEADROOM_DB = CLEAN_AUDIO_LOUDNESS.truePeak - CLEAN_AUDIO_LOUDNESS.integrated;
/** Extra drive per dB of room under the default's, and its most. */
const SQUEEZE_PER_DB = 3;
const MAX_SQUEEZE_DB = 8;

/**
 * The drive into the limiter follows the target (9 dB at -16 LUFS, 2 at -23), so the graph's
 * output sits the same few dB above any target and the measured gain is a cut (it keeps the
 * peak); and it rises 3 dB per dB of room between loudness and true peak lost against the
 * default's 14.5 (at most 8: 17 dB at -14 LUFS, -1.5 dBTP), so a peaky voice is limited enough to
 * reach a loud target. Why and the measurements: docs/decisions/0006-clean-audio-chain.md.
 */
function driveDb(target: LoudnormTarget): number {
  const lostRoom = Math.max(0, DEFAULT_HEADROOM_DB - (target.truePeak - target.integrated));
  const squeeze = Math.min(MAX_SQUEEZE_DB, SQUEEZE_PER_DB * lostRoom);
  return Number((DEFAULT_DRIVE_DB + target.integrated - CLEAN_AUDIO_LOUDNESS.integrated + squeeze).toFixed(2));
}

/** The raw samples the denoise pass writes and every pass after it reads (packages/wire/src/rnnoise.ts). */
export const DENOISED = "denoised.f32";

/** How the passes after the denoiser read its output: input 1, raw float samples at 48 kHz. */
export const denoisedInput = (channels: number) => [
  "-f",
  "f32le",
  "-ar",
  "48000",
  "-ac",
  String(channels),
  "-i",
  DENOISED,
];

/** The denoised samples' channels: the source's, or stereo when the probe does not know them. */
const denoisedChannels = (channels: number | undefined) => channels ?? 2;

/**
 * The denoise pass: the source's sound decoded to raw float samples at 48 kHz, as the graph's
 * timing reference is (the same resampler, so both hold the same number of samples), for RNNoise.
 */
export function denoisePassArgs(inputName: string, channels: number): string[] {
  return [
    "-hide_banner",
    "-y",
    "-i",
    inputName,
    "-map",
    "0:a:0",
    "-af",
    "aformat=sample_rates=48000",
    "-ac",
    String(channels),
    "-c:a",
    "pcm_f32le",
    "-f",
    "f32le",
    DENOISED,
  ];
}

/**
 * The graph on both engines, without the loudness normalisation that follows it: a complex graph
 * over the source (input 0, whose sound only lends its timing) and the denoised samples (input 1),
 * its output unlabelled. `channels`: the source's, when the probe knows them; unknown is treated
 * as possibly more than two. `target`: the loudness the result is normalised to, which sets the
 * drive into the limiter and its ceiling.
 */
export function cleanAudioFilter(channels: number | undefined, target: LoudnormTarget = CLEAN_AUDIO_LOUDNESS): string {
  const ceiling = limiterCeiling(target.truePeak);
  const limiter = channels !== undefined && channels <= 2 ? stereoLimiter(ceiling) : surroundLimiter(ceiling);
  return [
    "[0:a:0]aformat=sample_rates=48000,aeval=exprs=1:c=same,aformat=sample_fmts=fltp[one]",
    [
      "[1:a:0]highpass=f=80,lowpass=f=12000",
      `adelay=delays=${LEAD_SAMPLES}S:all=1`,
      "apad=pad_dur=9",
      "dynaudnorm=f=500:g=17:p=0.95:m=30:r=0.1:b=1",
      "afftdn=nr=20:nf=-32",
      "afftdn=nr=10:nf=-42",
      `atrim=start_sample=${LEAD_SAMPLES + AFFTDN_DELAY_SAMPLES}`,
      "agate=threshold=0.03:ratio=3:range=0.05:attack=10:release=300",
      `volume=${driveDb(target)}dB`,
      limiter,
      "aformat=sample_fmts=fltp[x]",
    ].join(","),
    "[one][x]amultiply",
  ].join(";");
}

const loudnormFilter = (target: LoudnormTarget) =>
  `loudnorm=I=${target.integrated}:TP=${target.truePeak}:LRA=${target.lra}`;

/** The backend's intermediate: the cleaned audio before loudnorm, written by the measuring pass. */
const CLEANED_AUDIO = "cleaned-audio.nut";

/**
 * The backend's measuring pass: the graph once, its result split between loudnorm (which only
 * measures) and a lossless intermediate: FLAC at 24 bits (about a third of float PCM) up to the 8
 * channels FLAC holds, 32-bit float PCM beyond. NUT keeps any codec and channel count.
 */
function measurePassArgs(inputName: string, channels: number | undefined, target: LoudnormTarget): string[] {
  const lossless =
    (channels ?? 2) <= 8
      ? ["-c:a", "flac", "-compression_level", "0", "-sample_fmt", "s32", "-bits_per_raw_sample", "24"]
      : ["-c:a", "pcm_f32le"];
  return [
    "-hide_banner",
    "-y",
    "-i",
    inputName,
    ...denoisedInput(denoisedChannels(channels)),
    "-filter_complex",
    `${cleanAudioFilter(channels, target)},asplit[cleaned][measured];[measured]${loudnormFilter(target)},anullsink`,
    "-map",
    "[cleaned]",
    ...lossless,
    "-f",
    "nut",
    CLEANED_AUDIO,
  ];
}

/**
 * The backend's final pass over the intermediate: the measured gain in loudnorm's place (one
 * `volume`, or loudnorm's dynamic mode), back to 48 kHz. The gain is multiplied onto a constant 1
 * carrying the source audio's timing (as the graph's own last step does): the intermediate's
 * samples match the source's one for one, and the result keeps the source's start time against
 * the picture. The product is taken in aeval's own format (planar double): converting aeval's
 * output leaves its channel layout unresolved on mono input unless loudnorm's resampler follows.
 */
const finalPassGraph = (target: LoudnormTarget) =>
  [
    "[0:a:0]aformat=sample_rates=48000,aeval=exprs=1:c=same[one]",
    "[1:a:0]aformat=sample_fmts=dblp[cleaned]",
    `[one][cleaned]amultiply,${loudnormFilter(target)},aformat=sample_rates=48000[out]`,
  ].join(";");

/** The request's target: its `targetLufs` and `truePeak`, the defaults for those it leaves out. */
export function cleanAudioTarget(params: Partial<CleanAudioInput>): LoudnormTarget {
  return {
    integrated: params.targetLufs ?? CLEAN_AUDIO_LOUDNESS.integrated,
    truePeak: params.truePeak ?? CLEAN_AUDIO_LOUDNESS.truePeak,
    lra: CLEAN_AUDIO_LOUDNESS.lra,
  };
}

/** removeSilence's defaults: a pause is under -45 dBFS for at least 1 s, and 0.3 s of it stays. */
export const REMOVE_SILENCE_DEFAULTS = { thresholdDb: -45, minPauseSeconds: 1, keepSeconds: 0.3 } as const;

/** The request's removeSilence with its defaults filled in, or null when it asks for none. */
export function removeSilenceSettings(params: Partial<CleanAudioInput>) {
  const asked = params.removeSilence;
  if (asked === undefined || asked === false) return null;
  return { ...REMOVE_SILENCE_DEFAULTS, ...(asked === true ? {} : asked) };
}

/** What the command's args write when pauses are cut after them. */
const UNCUT = "uncut";

/** `reencodeVideo`: re-encode the picture instead of copying it (a test-mode result gets a mark drawn on it). */
export function buildCleanAudioCommand(
  params: Partial<CleanAudioInput>,
  inputs: MediaInput[],
  options: { reencodeVideo?: boolean } = {},
): MediaCommand {
  const input = inputs[0];
  if (input === undefined) throw new TypeError("clean-audio takes one input");
  const { probe } = input;
  if (!probe.hasAudio) throw new TypeError("The file has no audio track to clean.");
  const family = containerFamily(probe);
  const audioOnly = isAudioOnly(probe);
  const outputName = `out.${family.extension}`;
  const reencode = !audioOnly && options.reencodeVideo === true;
  const videoArgs = reencode
    ? ["-vf", EVEN_SIZE_FILTER, ...videoEncoderArgs(family.video, probe.width, probe.height)]
    : ["-c:v", "copy"];
  const outputArgs = [...familyAudioArgs(family, probe), ...family.extraArgs, "-f", family.muxer, outputName];
  const picture = audioOnly ? [] : ["-map", "0:V:0", ...videoArgs];
  const target = cleanAudioTarget(params);
  const graph = cleanAudioFilter(probe.audioChannels, target);
  const sources = ["-i", input.name, ...denoisedInput(denoisedChannels(probe.audioChannels))];
  const cleaned = (chain: string) => ["-filter_complex", `${chain}[cleaned]`, "-map", "[cleaned]"];
  const args = ["-hide_banner", "-y", ...sources, ...picture, ...cleaned(graph), ...outputArgs];
  const finalPass = [
    "-hide_banner",
    "-y",
    "-i",
    input.name,
    "-i",
    CLEANED_AUDIO,
    "-filter_complex",
    finalPassGraph(target),
    ...picture,
    "-map",
    "[out]",
    ...outputArgs,
  ];
  const normalised = `${graph},${loudnormFilter(target)}`;
  const silenceSettings = removeSilenceSettings(params);
  // With pauses to cut, every pass writes the uncut result, which the silence pass then cuts into the output.
  const uncutName = `${UNCUT}.${family.extension}`;
  const writes = (list: string[]) => (silenceSettings ? [...list.slice(0, -1), uncutName] : list);
  const silence = silenceSettings && {
    input: uncutName,
    output: outputName,
    ...silenceSettings,
    ...(!audioOnly && probe.frameRate ? { frameRate: probe.frameRate } : {}),
    video: !audioOnly,
    ...(!audioOnly ? { videoFilter: EVEN_SIZE_FILTER } : {}),
    durationSeconds: probe.durationMs / 1000,
    encodeArgs: [
      ...(audioOnly ? [] : videoEncoderArgs(family.video, probe.width, probe.height)),
      ...familyAudioArgs(family, probe),
      ...family.extraArgs,
      "-f",
      family.muxer,
    ],
    copyArgs: ["-map", "0", "-c", "copy", ...family.extraArgs, "-f", family.muxer],
  };
  const channels = probe.audioChannels ?? 2;
  const surroundBytes = Math.max(0, channels - 2) * 12 * MiB;
  // The decoded samples, raw: once in the isolate beside the cores, once in each core's files.
  const denoisedBytes = 2 * Math.ceil((probe.durationMs / 1000) * 48_000) * 4 * denoisedChannels(probe.audioChannels);
  return {
    // The graph in one run, not normalised: the work routing reads and the bench's native
    // baseline. Each engine runs its two passes instead (wasmLoudness, backend).
    args: writes(args),
    files: {},
    fonts: [],
    outputName,
    resultFilename: resultName(input.filename, family.extension, "-clean"),
    contentType: familyContentType(probe),
    // Cutting pauses out of a video re-encodes its picture: the backend's work.
    wasmCapable: !(silence && !audioOnly),
    // 32 MiB for mono and stereo; 5.1 took 80 MiB in workerd (12 MiB per channel above two).
    // A re-encoded picture (test mode) adds the encoder's buffers, and the audio graph no longer
    // fits the base heap beside them (9.3 MiB measured at 720p stereo, 12 with margin). The
    // measuring run (audio alone, with the meter) took more on stereo and 5.1: 38.4 and 95.8 MiB.
    wasmHeapBytes:
      denoisedBytes +
      Math.max(
        wasmHeapEstimate(
          reencode ? family.video : undefined,
          probe.width,
          probe.height,
          surroundBytes + (reencode ? 12 * MiB : 0),
        ),
        wasmHeapEstimate(undefined, undefined, undefined, surroundBytes + channels * METER_BYTES_PER_CHANNEL),
      ),
    wasmLoudness: {
      measureArgs: ["-hide_banner", "-y", ...sources, ...cleaned(normalised), "-f", "null", "-"],
      args: writes(["-hide_banner", "-y", ...sources, ...picture, ...cleaned(normalised), ...outputArgs]),
      loudnorm: target,
    },
    backend: {
      args: writes(finalPass),
      loudnorm: target,
      measurePass: { args: measurePassArgs(input.name, probe.audioChannels, target), writes: CLEANED_AUDIO },
    },
    audioReport: { sourceMeterArgs: loudnessMeterOf(input.name), ...(silence ? { silence } : {}) },
    denoise: {
      args: denoisePassArgs(input.name, denoisedChannels(probe.audioChannels)),
      writes: DENOISED,
      channels: denoisedChannels(probe.audioChannels),
    },
  };
}
