/**
 * clean-audio: removes background noise, keeps the voice and brings it to a steady loudness; the
 * picture, when there is one, is copied untouched (`-c:v copy`: same packets, no re-encoding).
 *
 * The graph (cleanAudioFilter, one `-af`), then loudness normalisation in two passes on both
 * engines:
 * 1. `aformat=sample_rates=48000`, `highpass=f=80`, `lowpass=f=12000`: one rate whatever the
 *    source (ffmpeg inserts the resampler; an explicit `aresample` fails on inputs whose channel
 *    layout is unknown, such as some mono WAV), rumble and hum below the voice, hiss above it;
 * 2. `dynaudnorm` first, as a near-constant gain: 0.5 s frames, and the minimum gain over +/-4 s
 *    (17 frames) smoothed, so the voice sits at a known level (frame RMS 0.1, -20 dBFS) before
 *    anything judges levels. A pause shorter than about 8 s between words, or a noise-only start
 *    shorter than about 4 s, takes the gain of the voice next to it instead of being lifted (the
 *    old chain levelled last, with 3 s windows: it lifted the noise-only first seconds of a tone
 *    over white noise by 3 dB, and the signal-to-noise ratio gained 0.4 dB). Alternative boundary
 *    mode (`b=1`) so a quiet recording that starts with speech is raised from its first frame
 *    (the default mode holds the gain at 1 for the first seconds, and the gate then cut that
 *    speech); the 0.5 s of silence put in front (`adelay`, one frame) absorbs the fade from the
 *    first frame's gain, which otherwise lifts a noise-only first half second. The 9 s of silence
 *    put after (`apad`, more than the 8.5 s window) let files shorter than the window be
 *    normalised at all and keep the end at the voice's gain;
 * 3. two `afftdn` passes with fixed noise floors (-32 and -42 dB, 20 + 10 dB of reduction, no
 *    tracking): on audio already at a known level, everything spectrally flat under the floors
 *    goes, whatever the recording level. Noise tracking (`tn=1`, the old chain) adapts too slowly
 *    and misjudges pink noise: on the same inputs it gained 5-27 dB depending on the level alone;
 *    fixed floors on raw audio gained 30 dB but muffled quiet speech (-14 dB at 1.6-3.4 kHz for
 *    speech at -46 dBFS). Each pass delays the audio by 1200 samples; `atrim` takes the lead and
 *    the 2400 samples back, so the sound stays in sync with the copied picture (the old chain
 *    played 50 ms late and lost its last 50 ms);
 * 4. `agate` as a downward expander (threshold 0.03, -30.5 dBFS, ratio 3, at most -26 dB): after
 *    step 2 the voice is 10-15 dB above it, the residual noise of pauses far below;
 * 5. `volume=9dB` into `alimiter` (ceiling 0.84, -1.5 dBFS, auto-level off, latency compensated;
 *    `acompressor` at ratio 20 beyond two channels, or when the probe does not know them):
 *    tones and speech come out above -16 LUFS with peaks at the ceiling, so the normalisation
 *    after it is nearly always a cut;
 * 6. the exact source length and timestamps: `amultiply` by a constant 1 carrying the timing of an
 *    untouched copy of the input (`aeval`). The copy ends the stream where the source ends (the
 *    padding goes) and keeps the source's start time, which `adelay` resets (an audio track
 *    starting 0.46 s into a video stays there).
 *
 * Measured with native ffmpeg 5.1 on a 1 kHz tone and on flite speech over white or pink noise
 * (3 s noise-only start, 2.5 s pause, voice from -46 to -13 dBFS RMS, signal-to-noise ratios
 * 12-50 dB): noise-only passages 16-59 dB quieter relative to the voice (14-59 dB with the
 * backend's two passes; the old chain: -4 to +27 dB); the voice band keeps its balance (1.6-3.4 kHz against 300-800 Hz: -1.3 to -1.6 dB),
 * the quietest 5 % of speech blocks stay within 4.5 dB of the rest (measured with 5 dB into the
 * limiter and no loudness passes, when the tone ended at -15.3 LUFS and flite's speech, very
 * peaky: 17 dB from loudness to peak, at -19). ffmpeg.wasm gives the same figures to 0.1 dB.
 * The tests (test/media/clean-audio-quality.test.ts in workerd,
 * test/e2e/clean-audio-quality.test.ts through the API on both engines) measure a 400 Hz + 3 kHz
 * voice stand-in 23 dB over white noise: 54 and 57 dB less noise (start, pause) on both engines,
 * the two tones within 0.05 dB of each other's balance, -16.0 LUFS on both; flite speech 18 dB
 * over pink noise: 25-27 and 39-43 dB, the voice band within 0.7 dB of the clean speech, -16.5
 * LUFS on the Worker and -16.1 on the backend.
 *
 * Loudness: -16 LUFS, -1.5 dBTP, LRA 11 (CLEAN_AUDIO_LOUDNESS), in two passes on both engines
 * (packages/wire/src/loudness.ts): the first measures the graph's output with ebur128, the second
 * applies one gain with `volume` (loudnorm's `linear=true` rule). With 9 dB into the limiter the
 * gain is a cut for tones and speech (flite's speech over noise: -13.4 LUFS, one gain of -2.6 dB).
 * - The backend (backend/src/jobs.ts) runs the graph once: its measuring pass writes the
 *   cleaned audio to a lossless intermediate beside the measurement, and the final pass applies
 *   the gain to it (a 60 s 1080p clip: 6.4 s of ffmpeg against 8.3 s when both passes ran the
 *   graph; into PCM the same samples to 24-bit precision, -131 dB from the peak, and the same
 *   start time against the picture). Quiet, peaky material whose gain would pass -1.5 dBTP gets
 *   loudnorm's dynamic mode (below the measured gate its gain stays the linear offset, so pauses
 *   are not lifted either).
 * - ffmpeg.wasm (`wasmLoudness`, src/media-worker/wasm-command.ts) runs the graph twice, as two runs of
 *   a fresh core: the first (audio only, into the null muxer) measures, the second encodes with
 *   the gain: 2.2-2.8x one run of the graph in workerd (10 s of noise: 0.74 s on mono against
 *   0.26, 1.33 s on stereo against 0.61). The backend's way, the cleaned audio kept between the
 *   runs, was tried: 0.61 and 0.86 s, but the audio then stays in the isolate's memory (24-bit,
 *   up to 288 KB per second of stereo) and the first run took more wasm heap (46 MiB on stereo);
 *   not kept. loudnorm's dynamic mode works at 192 kHz: it took 66-96 MiB of heap on mono and
 *   138-239 MiB on stereo input (10-12 s at 44.1 kHz), more than a 128 MB isolate, and ran 3x
 *   slower. Where one gain would pass the peak, the Worker takes the largest gain that keeps it
 *   (peakSafeGainDb): such material ends under -16 LUFS instead of clipping. Before 2026-11-27
 *   the Worker ran the graph once with 5 dB into the limiter and landed at -14.9 LUFS on the
 *   tones and -18.7 on flite's speech.
 *
 * Memory on ffmpeg.wasm: the graph stays within the initial 32 MiB of wasm heap on mono and
 * stereo input (with 1 s dynaudnorm frames it took 46-55 MiB on stereo), 80 MiB on 5.1; the
 * measuring run's meter takes more (38.4 MiB on stereo, 95.8 on 5.1).
 * Limits: a noise-only stretch longer than the window (over ~4 s at the start, ~8 s between
 * words) is lifted towards the voice's level; speech more than ~10 dB under the loudest speech
 * within 4 s is expanded by the gate.
 *
 * The result keeps the source's container and its usual audio codec (MP3 stays MP3, WAV stays
 * PCM, M4A stays AAC, a WebM keeps VP8/VP9 with Opus...).
 */
import type { CleanAudioInput } from "../../tools/clean-audio";
import type { LoudnormTarget } from "@media-credits/wire/protocol";
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
const STEREO_LIMITER = "alimiter=limit=0.84:level=0:latency=1";
const SURROUND_LIMITER = "acompressor=threshold=0.84:ratio=20:attack=0.01:release=50:knee=1:link=maximum:detection=peak";

/**
 * The graph on both engines, without the loudness normalisation that follows it. `channels`:
 * the source's, when the probe knows them; unknown is treated as possibly more than two.
 */
export function cleanAudioFilter(channels: number | undefined): string {
  const limiter = channels !== undefined && channels <= 2 ? STEREO_LIMITER : SURROUND_LIMITER;
  return [
    "aformat=sample_rates=48000,highpass=f=80,lowpass=f=12000,asplit[a][ref]",
    [
      `[a]adelay=delays=${LEAD_SAMPLES}S:all=1`,
      "apad=pad_dur=9",
      "dynaudnorm=f=500:g=17:p=0.95:m=30:r=0.1:b=1",
      "afftdn=nr=20:nf=-32",
      "afftdn=nr=10:nf=-42",
      `atrim=start_sample=${LEAD_SAMPLES + AFFTDN_DELAY_SAMPLES}`,
      "agate=threshold=0.03:ratio=3:range=0.05:attack=10:release=300",
      "volume=9dB",
      limiter,
      "aformat=sample_fmts=fltp[x]",
    ].join(","),
    "[ref]aeval=exprs=1:c=same,aformat=sample_fmts=fltp[one]",
    "[one][x]amultiply",
  ].join(";");
}

/** What both engines normalise to: -16 LUFS integrated, the usual target for spoken content on the web and in podcasts. */
export const CLEAN_AUDIO_LOUDNESS: LoudnormTarget = { integrated: -16, truePeak: -1.5, lra: 11 };

const LOUDNORM = `loudnorm=I=${CLEAN_AUDIO_LOUDNESS.integrated}:TP=${CLEAN_AUDIO_LOUDNESS.truePeak}:LRA=${CLEAN_AUDIO_LOUDNESS.lra}`;

/** The backend's intermediate: the cleaned audio before loudnorm, written by the measuring pass. */
const CLEANED_AUDIO = "cleaned-audio.nut";

/**
 * The backend's measuring pass: the graph once, its result split between loudnorm (which only
 * measures) and a lossless intermediate: FLAC at 24 bits (about a third of float PCM) up to the 8
 * channels FLAC holds, 32-bit float PCM beyond. NUT keeps any codec and channel count.
 */
function measurePassArgs(inputName: string, channels: number | undefined): string[] {
  const lossless = (channels ?? 2) <= 8 ? ["-c:a", "flac", "-compression_level", "0", "-sample_fmt", "s32", "-bits_per_raw_sample", "24"] : ["-c:a", "pcm_f32le"];
  return [
    "-hide_banner",
    "-y",
    "-i", inputName,
    "-filter_complex", `[0:a:0]${cleanAudioFilter(channels)},asplit[cleaned][measured];[measured]${LOUDNORM},anullsink`,
    "-map", "[cleaned]",
    ...lossless,
    "-f", "nut",
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
const FINAL_PASS_GRAPH = [
  "[0:a:0]aformat=sample_rates=48000,aeval=exprs=1:c=same[one]",
  "[1:a:0]aformat=sample_fmts=dblp[cleaned]",
  `[one][cleaned]amultiply,${LOUDNORM},aformat=sample_rates=48000[out]`,
].join(";");

/** `reencodeVideo`: re-encode the picture instead of copying it (a test-mode result gets a mark drawn on it). */
export function buildCleanAudioCommand(_params: Partial<CleanAudioInput>, inputs: MediaInput[], options: { reencodeVideo?: boolean } = {}): MediaCommand {
  const input = inputs[0];
  if (input === undefined) throw new TypeError("clean-audio takes one input");
  const { probe } = input;
  if (!probe.hasAudio) throw new TypeError("The file has no audio track to clean.");
  const family = containerFamily(probe);
  const audioOnly = isAudioOnly(probe);
  const outputName = `out.${family.extension}`;
  const reencode = !audioOnly && options.reencodeVideo === true;
  const videoArgs = reencode ? ["-vf", EVEN_SIZE_FILTER, ...videoEncoderArgs(family.video, probe.width, probe.height)] : ["-c:v", "copy"];
  const outputArgs = [...familyAudioArgs(family, probe), ...family.extraArgs, "-f", family.muxer, outputName];
  const picture = audioOnly ? [] : ["-map", "0:V:0", ...videoArgs];
  const graph = cleanAudioFilter(probe.audioChannels);
  const args = ["-hide_banner", "-y", "-i", input.name, ...picture, "-map", "0:a:0", "-af", graph, ...outputArgs];
  const finalPass = ["-hide_banner", "-y", "-i", input.name, "-i", CLEANED_AUDIO, "-filter_complex", FINAL_PASS_GRAPH, ...picture, "-map", "[out]", ...outputArgs];
  const normalised = `${graph},${LOUDNORM}`;
  const channels = probe.audioChannels ?? 2;
  const surroundBytes = Math.max(0, channels - 2) * 12 * MiB;
  return {
    // The graph in one run, not normalised: the work routing reads and the bench's native
    // baseline. Each engine runs its two passes instead (wasmLoudness, backend).
    args,
    files: {},
    fonts: [],
    outputName,
    resultFilename: resultName(input.filename, family.extension, "-clean"),
    contentType: familyContentType(probe),
    wasmCapable: true,
    // 32 MiB for mono and stereo; 5.1 took 80 MiB in workerd (12 MiB per channel above two).
    // A re-encoded picture (test mode) adds the encoder's buffers, and the audio graph no longer
    // fits the base heap beside them (9.3 MiB measured at 720p stereo, 12 with margin). The
    // measuring run (audio alone, with the meter) took more on stereo and 5.1: 38.4 and 95.8 MiB.
    wasmHeapBytes: Math.max(
      wasmHeapEstimate(reencode ? family.video : undefined, probe.width, probe.height, surroundBytes + (reencode ? 12 * MiB : 0)),
      wasmHeapEstimate(undefined, undefined, undefined, surroundBytes + channels * METER_BYTES_PER_CHANNEL),
    ),
    wasmLoudness: {
      measureArgs: ["-hide_banner", "-y", "-i", input.name, "-map", "0:a:0", "-af", normalised, "-f", "null", "-"],
      args: ["-hide_banner", "-y", "-i", input.name, ...picture, "-map", "0:a:0", "-af", normalised, ...outputArgs],
      loudnorm: CLEAN_AUDIO_LOUDNESS,
    },
    backend: {
      args: finalPass,
      loudnorm: CLEAN_AUDIO_LOUDNESS,
      measurePass: { args: measurePassArgs(input.name, probe.audioChannels), writes: CLEANED_AUDIO },
    },
  };
}
