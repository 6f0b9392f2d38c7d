/**
 * clean-audio's denoiser judged by content, in one run: speech (flite, two voices, with a 1.5 s
 * pause) and the voice band's tones under white, pink, babble, hum and street noise at 0, 5, 10 and
 * 20 dB SNR, through four chains:
 *  - none: the noisy input;
 *  - afftdn: ffmpeg's afftdn alone, at its defaults, its 25 ms delay taken back (native);
 *  - before: the chain clean-audio ran before RNNoise (a5ddaef: dynaudnorm, two fixed-floor
 *    afftdn, gate, limiter, loudnorm), native;
 *  - now: POST /api/v1/clean-audio on wrangler dev, call to downloaded result (RNNoise, then the
 *    same graph), on the engine routing picks: the backend, where RNNoise runs
 *    (`BENCH_DENOISE_ENGINE=wasm` shows the Worker's chain without it).
 * Measured on each result: STOI against the clean speech (bench/stoi.ts), the level of the pause
 * and of the lead against the speech's (dB; lower is cleaner), and the voice band's balance: the
 * largest change, against the clean source, of the level of 150-500 Hz, 500-2000 Hz and 2-6 kHz
 * relative to the whole (dB). Then the cost: real-time factor of each engine through the API on a
 * 60 s file, against native ffmpeg running the previous chain in the same run.
 * `npm run bench -- denoise`.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { startStack, type Stack, uploadFile } from "./api";
import { STOI_RATE, stoi } from "./stoi";
import { FFMPEG } from "./media";

const RATE = 48_000;
const LEAD_SECONDS = 1.5;
const PAUSE_SECONDS = 1.5;
const SNRS = [0, 5, 10, 20];
const TEXTS = [
  ["slt", "Welcome back to the show. Today we talk about recording at home, and how to keep a voice clear."],
  ["kal", "The microphone was cheap, the room was loud, and still every word should come through."],
] as const;
const BABBLE = [
  ["awb", "Did you see the match last night, it went on for hours."],
  ["rms", "I will take the train at nine and call you from the station."],
  ["slt", "Put the boxes in the hall, we can sort them after lunch."],
  ["kal", "Prices went up again, the shop on the corner is closing."],
] as const;

/** Each noise as an ffmpeg lavfi source of `seconds`, before scaling to the SNR. */
const NOISES: Record<string, (seconds: number, babble: string) => string[]> = {
  white: (s) => ["-f", "lavfi", "-i", `anoisesrc=c=white:r=${RATE}:d=${s}:seed=7`],
  pink: (s) => ["-f", "lavfi", "-i", `anoisesrc=c=pink:r=${RATE}:d=${s}:seed=7`],
  hum: (s) => [
    "-f",
    "lavfi",
    "-i",
    `aevalsrc='0.5*sin(2*PI*50*t)+0.3*sin(2*PI*150*t)+0.2*sin(2*PI*250*t)+0.1*sin(2*PI*350*t)':s=${RATE}:d=${s}`,
  ],
  babble: (_s, babble) => ["-i", babble],
  // Traffic: brown rumble, and pink noise swelling as cars pass every 5 s.
  street: (s) => [
    "-f",
    "lavfi",
    "-i",
    `anoisesrc=c=brown:r=${RATE}:d=${s}:seed=3,volume=0.6[b];anoisesrc=c=pink:r=${RATE}:d=${s}:seed=9,volume='0.2+0.8*pow(sin(PI*t/5),4)':eval=frame[p];[b][p]amix=inputs=2:normalize=0`,
  ],
};

/** The previous chain (a5ddaef's cleanAudioFilter at -16 LUFS, stereo-or-less limiter), with a one-pass loudnorm. */
const BEFORE_CHAIN = [
  "aformat=sample_rates=48000,highpass=f=80,lowpass=f=12000",
  "adelay=delays=24000S:all=1",
  "apad=pad_dur=9",
  "dynaudnorm=f=500:g=17:p=0.95:m=30:r=0.1:b=1",
  "afftdn=nr=20:nf=-32",
  "afftdn=nr=10:nf=-42",
  "atrim=start_sample=26400",
  "agate=threshold=0.03:ratio=3:range=0.05:attack=10:release=300",
  "volume=9dB",
  "alimiter=limit=0.84:level=0:latency=1",
  "loudnorm=I=-16:TP=-1.5:LRA=11",
  "aformat=sample_rates=48000",
].join(",");

const ffmpeg = (args: string[], cwd: string) => {
  const run = spawnSync(FFMPEG, ["-hide_banner", "-nostdin", "-v", "error", "-y", ...args], { cwd, encoding: "utf8" });
  if (run.status !== 0) throw new Error(`ffmpeg ${args.join(" ")}: ${run.stderr}`);
};

/** Mono float samples of `file` at `rate`. */
function samplesOf(file: string, rate: number): Float32Array {
  const raw = execFileSync(FFMPEG, ["-v", "error", "-i", file, "-ac", "1", "-ar", String(rate), "-f", "f32le", "-"], {
    maxBuffer: 1 << 30,
  });
  return new Float32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4);
}

const levelDb = (samples: Float32Array, rate: number, from: number, to: number) => {
  let sum = 0;
  const a = Math.round(from * rate);
  const b = Math.min(samples.length, Math.round(to * rate));
  for (let i = a; i < b; i++) sum += samples[i]! ** 2;
  return 10 * Math.log10(sum / Math.max(1, b - a) + 1e-20);
};

interface Layout {
  /** Where speech (or the tones) sound, seconds. */
  speech: [number, number][];
  pause: [number, number];
  lead: [number, number];
  seconds: number;
}

/** Clean speech: lead, utterance 1, pause, utterance 2, tail; at -23 LUFS. */
function makeSpeech(dir: string): Layout {
  const parts = TEXTS.map(([voice, text], i) => {
    const file = path.join(dir, `utterance-${i}.wav`);
    execFileSync("flite", ["-voice", voice, "-t", text, "-o", file]);
    ffmpeg(["-i", file, "-ar", String(RATE), "-ac", "1", path.join(dir, `u${i}.wav`)], dir);
    return Number(
      execFileSync("ffprobe", [
        "-v",
        "error",
        "-show_entries",
        "format=duration",
        "-of",
        "csv=p=0",
        path.join(dir, `u${i}.wav`),
      ]).toString(),
    );
  });
  const [first, second] = parts as [number, number];
  const seconds = LEAD_SECONDS + first + PAUSE_SECONDS + second + 1;
  ffmpeg(
    [
      "-i",
      "u0.wav",
      "-i",
      "u1.wav",
      "-filter_complex",
      `[0]adelay=${LEAD_SECONDS * 1000}:all=1[a];[1]adelay=${(LEAD_SECONDS + first + PAUSE_SECONDS) * 1000}:all=1[b];[a][b]amix=inputs=2:normalize=0,apad,atrim=0:${seconds},loudnorm=I=-23:TP=-2:linear=true`,
      "-ar",
      String(RATE),
      "-c:a",
      "pcm_f32le",
      "clean-speech.wav",
    ],
    dir,
  );
  return {
    speech: [
      [LEAD_SECONDS, LEAD_SECONDS + first],
      [LEAD_SECONDS + first + PAUSE_SECONDS, LEAD_SECONDS + first + PAUSE_SECONDS + second],
    ],
    pause: [LEAD_SECONDS + first + 0.3, LEAD_SECONDS + first + PAUSE_SECONDS - 0.3],
    lead: [0.3, LEAD_SECONDS - 0.3],
    seconds,
  };
}

/** The voice band's tones (400 Hz and 3 kHz) where the speech would be, same layout. */
function makeTones(dir: string, layout: Layout): void {
  const on = layout.speech.map(([a, b]) => `between(t,${a},${b})`).join("+");
  ffmpeg(
    [
      "-f",
      "lavfi",
      "-i",
      `aevalsrc='(0.1*sin(2*PI*400*t)+0.05*sin(2*PI*3000*t))*(${on})':s=${RATE}:d=${layout.seconds}`,
      "-af",
      "loudnorm=I=-23:TP=-2:linear=true",
      "-ar",
      String(RATE),
      "-c:a",
      "pcm_f32le",
      "clean-tones.wav",
    ],
    dir,
  );
}

/** Babble: four other talkers, looped and overlapped, as long as the recording. */
function makeBabble(dir: string, seconds: number): string {
  const inputs = BABBLE.flatMap(([voice, text], i) => {
    const file = path.join(dir, `babble-${i}.wav`);
    execFileSync("flite", ["-voice", voice, "-t", text, "-o", file]);
    return ["-stream_loop", "-1", "-i", file];
  });
  const delays = BABBLE.map((_, i) => `[${i}]aresample=${RATE},adelay=${i * 700}:all=1[t${i}]`).join(";");
  const labels = BABBLE.map((_, i) => `[t${i}]`).join("");
  ffmpeg(
    [
      ...inputs,
      "-filter_complex",
      `${delays};${labels}amix=inputs=${BABBLE.length}:normalize=0,atrim=0:${seconds}`,
      "-ac",
      "1",
      "-c:a",
      "pcm_f32le",
      "babble.wav",
    ],
    dir,
  );
  return path.join(dir, "babble.wav");
}

/** `clean` plus `noise` scaled so that the speech is `snr` dB above the noise (speech measured where it sounds). */
function mix(
  dir: string,
  clean: string,
  noise: string,
  layout: Layout,
  snr: number,
  babble: string,
  out: string,
): void {
  ffmpeg(
    [
      ...NOISES[noise]!(layout.seconds, babble),
      "-af",
      `atrim=0:${layout.seconds},aresample=${RATE}`,
      "-ac",
      "1",
      "-c:a",
      "pcm_f32le",
      "noise.wav",
    ],
    dir,
  );
  const cleanSamples = samplesOf(path.join(dir, clean), RATE);
  const speechDb =
    10 *
    Math.log10(
      layout.speech.reduce((sum, [a, b]) => sum + 10 ** (levelDb(cleanSamples, RATE, a, b) / 10) * (b - a), 0) /
        layout.speech.reduce((sum, [a, b]) => sum + (b - a), 0),
    );
  const noiseDb = levelDb(samplesOf(path.join(dir, "noise.wav"), RATE), RATE, 0, layout.seconds);
  const gain = speechDb - snr - noiseDb;
  ffmpeg(
    [
      "-i",
      clean,
      "-i",
      "noise.wav",
      "-filter_complex",
      `[1]volume=${gain.toFixed(2)}dB[n];[0][n]amix=inputs=2:normalize=0,alimiter=limit=0.99:level=0`,
      "-c:a",
      "pcm_s16le",
      out,
    ],
    dir,
  );
}

interface Measure {
  stoi?: number;
  pauseDb: number;
  leadDb: number;
  balanceDb: number;
}

const BANDS: [number, number][] = [
  [150, 500],
  [500, 2000],
  [2000, 6000],
];

/** Level of each voice band relative to the whole, where the voice sounds. */
function bandShape(file: string, layout: Layout): number[] {
  const whole = samplesOf(file, RATE);
  const speechLevel = (samples: Float32Array) =>
    10 * Math.log10(layout.speech.reduce((sum, [a, b]) => sum + 10 ** (levelDb(samples, RATE, a, b) / 10), 0));
  const total = speechLevel(whole);
  return BANDS.map(([low, high]) => {
    const band = execFileSync(
      FFMPEG,
      [
        "-v",
        "error",
        "-i",
        file,
        "-af",
        `highpass=f=${low}:p=2,lowpass=f=${high}:p=2`,
        "-ac",
        "1",
        "-ar",
        String(RATE),
        "-f",
        "f32le",
        "-",
      ],
      { maxBuffer: 1 << 30 },
    );
    return speechLevel(new Float32Array(band.buffer, band.byteOffset, band.byteLength / 4)) - total;
  });
}

function measure(file: string, clean: string, layout: Layout, speech: boolean): Measure {
  const out = samplesOf(file, RATE);
  const speechDb =
    10 *
    Math.log10(
      layout.speech.reduce((sum, [a, b]) => sum + 10 ** (levelDb(out, RATE, a, b) / 10), 0) / layout.speech.length,
    );
  const reference = bandShape(clean, layout);
  const shape = bandShape(file, layout);
  return {
    ...(speech ? { stoi: stoi(samplesOf(clean, STOI_RATE), samplesOf(file, STOI_RATE)) } : {}),
    pauseDb: levelDb(out, RATE, ...layout.pause) - speechDb,
    leadDb: levelDb(out, RATE, ...layout.lead) - speechDb,
    balanceDb: Math.max(...shape.map((db, i) => Math.abs(db - reference[i]!))),
  };
}

/** POST /api/v1/clean-audio on `file`, waits, downloads the result to `out`; seconds from call to the last byte. */
async function cleanThroughApi(stack: Stack, file: string, out: string): Promise<{ seconds: number; engine?: string }> {
  const uploadId = await uploadFile(stack, file);
  const started = performance.now();
  const response = await fetch(`${stack.base}/api/v1/clean-audio`, {
    method: "POST",
    headers: { ...stack.auth, "content-type": "application/json" },
    body: JSON.stringify({ uploadId }),
  });
  const { jobId } = (await response.json()) as { jobId: string };
  for (;;) {
    const job = (await (await fetch(`${stack.base}/api/v1/jobs/${jobId}?wait=50`, { headers: stack.auth })).json()) as {
      status: string;
      error?: string;
      result?: { url: string };
    };
    if (job.status === "failed") throw new Error(`clean-audio failed: ${job.error}`);
    if (job.status === "completed" && job.result) {
      const bytes = new Uint8Array(
        await (await fetch(new URL(job.result.url, stack.base), { headers: stack.auth })).arrayBuffer(),
      );
      await writeFile(out, bytes);
      return { seconds: (performance.now() - started) / 1000, engine: stack.routes.get(jobId) };
    }
  }
}

const fmt = (value: number | undefined, digits = 1) => (value === undefined ? "-" : value.toFixed(digits));

export async function runDenoiseBench(): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "bench-denoise-"));
  const engine = process.env.BENCH_DENOISE_ENGINE;
  const stack = await startStack(path.join(dir, "state"), engine ? { MEDIA_ENGINE: engine } : {});
  try {
    const layout = makeSpeech(dir);
    makeTones(dir, layout);
    const babble = makeBabble(dir, layout.seconds);
    const rows: string[] = [];
    const engines = new Set<string>();
    const sums: Record<string, { stoi: number; pause: number; n: number }> = {};
    for (const [signal, clean] of [
      ["speech", "clean-speech.wav"],
      ["tones", "clean-tones.wav"],
    ] as const) {
      for (const noise of Object.keys(NOISES)) {
        for (const snr of signal === "speech" ? SNRS : [10]) {
          const noisy = `noisy-${signal}-${noise}-${snr}.wav`;
          mix(dir, clean, noise, layout, snr, babble, noisy);
          const results: Record<string, Measure> = {};
          results.none = measure(path.join(dir, noisy), path.join(dir, clean), layout, signal === "speech");
          // afftdn delays the sound by its 1200-sample window: taken back, so STOI judges its cleaning, not the shift.
          ffmpeg(
            [
              "-i",
              noisy,
              "-af",
              "afftdn,atrim=start_sample=1200,apad=pad_len=1200",
              "-c:a",
              "pcm_s16le",
              `afftdn-${noisy}`,
            ],
            dir,
          );
          results.afftdn = measure(
            path.join(dir, `afftdn-${noisy}`),
            path.join(dir, clean),
            layout,
            signal === "speech",
          );
          ffmpeg(["-i", noisy, "-af", BEFORE_CHAIN, "-c:a", "pcm_s16le", `before-${noisy}`], dir);
          results.before = measure(
            path.join(dir, `before-${noisy}`),
            path.join(dir, clean),
            layout,
            signal === "speech",
          );
          const api = await cleanThroughApi(stack, path.join(dir, noisy), path.join(dir, `now-${noisy}`));
          if (api.engine) engines.add(api.engine);
          results.now = measure(path.join(dir, `now-${noisy}`), path.join(dir, clean), layout, signal === "speech");
          const cells = (key: keyof Measure, digits?: number) =>
            ["none", "afftdn", "before", "now"].map((chain) => fmt(results[chain]![key], digits)).join(" / ");
          rows.push(
            `| ${signal} | ${noise} | ${snr} | ${signal === "speech" ? cells("stoi", 3) : "-"} | ${cells("pauseDb")} | ${cells("leadDb")} | ${cells("balanceDb")} |`,
          );
          if (signal === "speech")
            for (const chain of ["none", "afftdn", "before", "now"]) {
              sums[chain] ??= { stoi: 0, pause: 0, n: 0 };
              sums[chain].stoi += results[chain]!.stoi!;
              sums[chain].pause += results[chain]!.pauseDb;
              sums[chain].n++;
            }
        }
      }
    }
    console.log(
      `\nDenoiser (clean-audio), ${layout.seconds.toFixed(1)} s per file, "now" on ${[...engines].join(", ") || "?"}`,
    );
    console.log("cells: none / afftdn alone / chain before RNNoise / now (RNNoise + chain, through the API)");
    console.log("| signal | noise | SNR dB | STOI | pause vs voice dB | lead vs voice dB | band balance change dB |");
    console.log("|---|---|---|---|---|---|---|");
    for (const row of rows) console.log(row);
    console.log(
      `speech means: ${Object.entries(sums)
        .map(([chain, s]) => `${chain} STOI ${(s.stoi / s.n).toFixed(3)}, pause ${(s.pause / s.n).toFixed(1)} dB`)
        .join("; ")}`,
    );

    // Cost: a 60 s recording (the speech file looped, babble at 10 dB) through the API, both engines
    // where they can run it, against native ffmpeg running the previous chain.
    const long = "long.wav";
    ffmpeg(["-stream_loop", "-1", "-i", "noisy-speech-babble-10.wav", "-t", "60", "-c:a", "pcm_s16le", long], dir);
    const t = performance.now();
    ffmpeg(["-i", long, "-af", BEFORE_CHAIN, "-f", "null", "-"], dir);
    const nativeSeconds = (performance.now() - t) / 1000;
    const rnnStarted = performance.now();
    const { RnnoiseStream } = await import("../packages/wire/src/rnnoise.ts");
    const module = new WebAssembly.Module(
      await readFile(path.join(import.meta.dirname, "../node_modules/@jitsi/rnnoise-wasm/dist/rnnoise.wasm")),
    );
    const stream = new RnnoiseStream(module, 1);
    stream.push(samplesOf(path.join(dir, long), RATE));
    stream.end();
    const rnnSeconds = (performance.now() - rnnStarted) / 1000;
    const lines = [
      `native ffmpeg, the previous chain: ${nativeSeconds.toFixed(2)} s (RTF ${(nativeSeconds / 60).toFixed(3)})`,
      `RNNoise alone in Node (decode included): ${rnnSeconds.toFixed(2)} s (RTF ${(rnnSeconds / 60).toFixed(3)})`,
    ];
    for (const pinned of ["wasm", "backend"]) {
      const pinnedStack =
        pinned === engine ? stack : await startStack(path.join(dir, `state-${pinned}`), { MEDIA_ENGINE: pinned });
      try {
        const run = await cleanThroughApi(pinnedStack, path.join(dir, long), path.join(dir, `long-${pinned}.m4a`));
        lines.push(
          `API on ${run.engine ?? pinned}${pinned === "wasm" ? " (the Worker, which has no RNNoise)" : ""}, call to downloaded result: ${run.seconds.toFixed(2)} s (RTF ${(run.seconds / 60).toFixed(3)}, ${(run.seconds / nativeSeconds).toFixed(1)}x native's previous chain)`,
        );
      } finally {
        if (pinnedStack !== stack) await pinnedStack.stop();
      }
    }
    console.log("\nDenoiser cost, 60 s mono:");
    for (const line of lines) console.log(`  ${line}`);
  } finally {
    await stack.stop();
    if (!process.env.BENCH_KEEP) await rm(dir, { recursive: true, force: true });
  }
}
