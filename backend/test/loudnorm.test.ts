/**
 * Two-pass loudnorm (protocol: FfmpegJobSchema.loudnorm): the request's checks, the argv of both
 * passes, and jobs through the backend process whose uploaded results are measured with ffmpeg's
 * own EBU R128 meter.
 */
import { execFile } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  gainArgs,
  linearGainDb,
  loudnessMeterArgs,
  loudnormApplyArgs,
  loudnormMeasureArgs,
  parseLoudnessMeasurement,
  parseLoudnormMeasurement,
  peakSafeGainDb,
} from "@media-credits/wire/loudness";
import { LOUDNORM_FILTER, parseJobRequest, type LoudnormTarget } from "@media-credits/wire/protocol";
import { Backend, ffmpeg, Fixture, jobBody, scratchDir, until, writeScratch } from "./helpers.ts";

const run = promisify(execFile);
const TARGET: LoudnormTarget = { integrated: -16, truePeak: -1.5, lra: 11 };
const CHAIN = "highpass=f=80,loudnorm=I=-16:TP=-1.5:LRA=11,aformat=sample_rates=48000";
const ARGS = ["-hide_banner", "-y", "-i", "in0.wav", "-af", CHAIN, "-c:a", "pcm_s16le", "-f", "wav", "out.wav"];

/** Integrated loudness (LUFS) and true peak (dBTP) of a file, by ffmpeg's ebur128 filter. */
async function loudness(file: string): Promise<{ integrated: number; truePeak: number }> {
  const { stderr } = await run("ffmpeg", [
    "-hide_banner",
    "-nostats",
    "-i",
    file,
    "-af",
    "ebur128=peak=true",
    "-f",
    "null",
    "-",
  ]);
  const summary = stderr.slice(stderr.lastIndexOf("Summary:"));
  return {
    integrated: Number(/I:\s+(-?[\d.]+) LUFS/.exec(summary)?.[1]),
    truePeak: Number(/Peak:\s+(-?[\d.]+) dBFS/.exec(summary)?.[1]),
  };
}

function wavJob(fixture: Fixture, key: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return jobBody(fixture, key, {
    args: ARGS,
    inputs: [{ name: "in0.wav", url: `${fixture.baseUrl}/media/${key}` }],
    output: { name: "out.wav", url: `${fixture.baseUrl}/upload/${key}`, contentType: "audio/wav" },
    loudnorm: TARGET,
    ...overrides,
  });
}

describe("the loudnorm field of an ffmpeg request", () => {
  const fixture = { baseUrl: "http://127.0.0.1:9" } as Fixture;

  it("finds loudnorm filters in filter graphs, not in names", () => {
    const count = (arg: string) => arg.match(LOUDNORM_FILTER)?.length ?? 0;
    expect(count("loudnorm")).toBe(1);
    expect(count(CHAIN)).toBe(1);
    expect(count("[a]asplit[b][c];[b]loudnorm=I=-23[d];[c][d]amix")).toBe(1);
    expect(count("loudnorm=I=-16,loudnorm")).toBe(2);
    expect(count("loudnorm.wav")).toBe(0);
    expect(count("myloudnorm=I=-16")).toBe(0);
  });

  it("is accepted with one loudnorm filter and the output last", () => {
    const parsed = parseJobRequest(wavJob(fixture, "ok"));
    expect(parsed).toMatchObject({ ok: true, job: { loudnorm: TARGET } });
    expect(parseJobRequest(wavJob(fixture, "none", { loudnorm: undefined }))).toMatchObject({ ok: true });
  });

  it("is refused without exactly one loudnorm filter, with the output elsewhere, or out of range", () => {
    const without = ARGS.map((arg) => (arg === CHAIN ? "highpass=f=80" : arg));
    expect(parseJobRequest(wavJob(fixture, "zero", { args: without }))).toMatchObject({
      ok: false,
      message: expect.stringMatching(/exactly one loudnorm filter \(found 0\)/),
    });
    const twice = ARGS.map((arg) => (arg === CHAIN ? `${CHAIN},loudnorm` : arg));
    expect(parseJobRequest(wavJob(fixture, "two", { args: twice }))).toMatchObject({
      ok: false,
      message: expect.stringMatching(/found 2/),
    });
    const outputFirst = ["-hide_banner", "-i", "in0.wav", "-af", CHAIN, "out.wav", "-y"];
    expect(parseJobRequest(wavJob(fixture, "order", { args: outputFirst }))).toMatchObject({
      ok: false,
      message: expect.stringMatching(/last arg must be the file the args write/),
    });
    expect(parseJobRequest(wavJob(fixture, "range", { loudnorm: { ...TARGET, integrated: -3 } }))).toMatchObject({
      ok: false,
      message: expect.stringMatching(/loudnorm\.integrated/),
    });
  });
});

/** A job whose measuring pass filters once into `mid.nut`, which the final pass normalises. */
const MEASURE_PASS = {
  args: [
    "-hide_banner",
    "-y",
    "-i",
    "in0.wav",
    "-filter_complex",
    "[0:a:0]highpass=f=80,asplit[c][m];[m]loudnorm,anullsink",
    "-map",
    "[c]",
    "-c:a",
    "pcm_f32le",
    "-f",
    "nut",
    "mid.nut",
  ],
  writes: "mid.nut",
};
const FINAL_ARGS = [
  "-hide_banner",
  "-y",
  "-i",
  "mid.nut",
  "-af",
  "loudnorm,aformat=sample_rates=48000",
  "-c:a",
  "pcm_s16le",
  "-f",
  "wav",
  "out.wav",
];

describe("a measuring pass of its own (measurePass)", () => {
  const fixture = { baseUrl: "http://127.0.0.1:9" } as Fixture;

  it("is accepted when it writes the file the final args read", () => {
    expect(parseJobRequest(wavJob(fixture, "mp", { args: FINAL_ARGS, measurePass: MEASURE_PASS }))).toMatchObject({
      ok: true,
      job: { measurePass: MEASURE_PASS },
    });
  });

  it("is refused without loudnorm, without exactly one loudnorm filter, or when it does not end with what it writes", () => {
    const job = (measurePass: unknown, extra: Record<string, unknown> = {}) =>
      parseJobRequest(wavJob(fixture, "mp", { args: FINAL_ARGS, measurePass, ...extra }));
    expect(job(MEASURE_PASS, { loudnorm: undefined })).toMatchObject({
      ok: false,
      message: "measurePass: measurePass needs loudnorm",
    });
    const noFilter = MEASURE_PASS.args.map((arg) => arg.replace("loudnorm", "anull"));
    expect(job({ ...MEASURE_PASS, args: noFilter })).toMatchObject({
      ok: false,
      message: expect.stringMatching(/measuring pass must hold exactly one loudnorm filter \(found 0\)/),
    });
    expect(job({ ...MEASURE_PASS, args: [...MEASURE_PASS.args, "-y"] })).toMatchObject({
      ok: false,
      message: expect.stringMatching(/last arg must be the file it writes/),
    });
  });

  it("is refused when it reads its own intermediate or an undeclared file, or writes over an input", () => {
    const job = (measurePass: unknown) => parseJobRequest(wavJob(fixture, "mp", { args: FINAL_ARGS, measurePass }));
    const readsItself = ["-i", "mid.nut", "-af", "loudnorm", "mid.nut"];
    expect(job({ args: readsItself, writes: "mid.nut" })).toMatchObject({
      ok: false,
      message: expect.stringMatching(/^measurePass: .*'mid\.nut' is not one of the declared/),
    });
    expect(job({ args: ["-i", "secret.wav", "-af", "loudnorm", "mid.nut"], writes: "mid.nut" })).toMatchObject({
      ok: false,
      message: expect.stringMatching(/'secret\.wav' is not one of the declared/),
    });
    expect(job({ args: ["-i", "in0.wav", "-af", "loudnorm", "in0.wav"], writes: "in0.wav" })).toMatchObject({
      ok: false,
      message: expect.stringMatching(/'in0\.wav' is used twice/),
    });
    // Without a measuring pass the final args cannot read the intermediate either.
    expect(parseJobRequest(wavJob(fixture, "mp", { args: FINAL_ARGS }))).toMatchObject({
      ok: false,
      message: expect.stringMatching(/'mid\.nut' is not one of the declared/),
    });
  });

  it("runs as pass 1 with the meter in the filter's place", () => {
    expect(loudnessMeterArgs(FINAL_ARGS, MEASURE_PASS.args)).toEqual([
      "-nostats",
      ...MEASURE_PASS.args.map((arg) => arg.replace("loudnorm", "ebur128=peak=true:framelog=verbose")),
    ]);
  });
});

describe("the passes' arguments", () => {
  it("pass 1 meters into the null muxer", () => {
    expect(loudnessMeterArgs(ARGS)).toEqual([
      "-nostats",
      "-hide_banner",
      "-y",
      "-i",
      "in0.wav",
      "-af",
      "highpass=f=80,ebur128=peak=true:framelog=verbose,aformat=sample_rates=48000",
      "-c:a",
      "pcm_s16le",
      "-f",
      "wav",
      "-f",
      "null",
      "-",
    ]);
  });

  it("pass 2 applies one gain when it keeps the peak and range within the target, nothing without a measurement", () => {
    const quiet = { integrated: -27.5, truePeak: -19.25, lra: 3.1 };
    expect(linearGainDb(TARGET, quiet)).toBeCloseTo(11.5, 6);
    expect(gainArgs(ARGS, linearGainDb(TARGET, quiet))[5]).toBe(
      "highpass=f=80,volume=11.50dB,aformat=sample_rates=48000",
    );
    // +11.5 dB would put a -9.25 dBTP peak at +2.25: over the -1.5 target.
    expect(linearGainDb(TARGET, { ...quiet, truePeak: -9.25 })).toBeNull();
    // A range wider than the target's is loudnorm's to compress.
    expect(linearGainDb(TARGET, { ...quiet, lra: 14 })).toBeNull();
    // A peak printed at the limit may be 0.05 dB over it.
    expect(linearGainDb(TARGET, { ...quiet, truePeak: -13 })).toBeNull();
    expect(linearGainDb(TARGET, { ...quiet, truePeak: -13.05 })).toBeCloseTo(11.5, 6);
    expect(gainArgs(ARGS, null)[5]).toBe("highpass=f=80,anull,aformat=sample_rates=48000");
    expect(gainArgs(["-af", "[a]loudnorm[b]", "out.wav"], null)).toEqual(["-af", "[a]anull[b]", "out.wav"]);
  });

  it("ffmpeg.wasm's one gain: the linear gain when it fits, else up to the true peak, never past it", () => {
    const quiet = { integrated: -27.5, truePeak: -19.25, lra: 3.1 };
    expect(peakSafeGainDb(TARGET, quiet)).toBeCloseTo(11.5, 6);
    // Peaky: +11.5 dB would pass -1.5 dBTP; +7.7 dB puts the peak at -1.55 and the loudness at -19.8.
    expect(peakSafeGainDb(TARGET, { ...quiet, truePeak: -9.25 })).toBeCloseTo(7.7, 6);
    // A wide range is kept as it is (no dynamic mode on the Worker).
    expect(peakSafeGainDb(TARGET, { ...quiet, lra: 14 })).toBeCloseTo(11.5, 6);
    // Loud: a cut to the target, whatever the peak.
    expect(peakSafeGainDb(TARGET, { integrated: -13.4, truePeak: -1.4, lra: 5 })).toBeCloseTo(-2.6, 6);
  });

  it("otherwise loudnorm measures into the null muxer and applies its measurement in its dynamic mode", () => {
    expect(loudnormMeasureArgs(ARGS, { integrated: -23, truePeak: -2, lra: 7 })).toEqual([
      "-nostats",
      "-hide_banner",
      "-y",
      "-i",
      "in0.wav",
      "-af",
      "highpass=f=80,loudnorm=I=-23:TP=-2:LRA=7:print_format=json,aformat=sample_rates=48000",
      "-c:a",
      "pcm_s16le",
      "-f",
      "wav",
      "-f",
      "null",
      "-",
    ]);
    const measured = { inputI: -27.5, inputTp: -9.25, inputLra: 3.1, inputThresh: -37.8, targetOffset: 0.4 };
    expect(loudnormApplyArgs(ARGS, TARGET, measured)[5]).toBe(
      "highpass=f=80,loudnorm=I=-16:TP=-1.5:LRA=11:measured_I=-27.5:measured_TP=-9.25:measured_LRA=3.1:measured_thresh=-37.8:offset=0.4:linear=true,aformat=sample_rates=48000",
    );
    expect(loudnormApplyArgs(ARGS, TARGET, null)[5]).toBe("highpass=f=80,anull,aformat=sample_rates=48000");
  });

  it("reads ebur128's summary as ffmpeg prints it; silence and short input measure nothing", async () => {
    const meter = (source: string) =>
      run("ffmpeg", [
        "-hide_banner",
        "-f",
        "lavfi",
        "-i",
        source,
        ...loudnessMeterArgs(["-af", "loudnorm", "out.wav"]),
      ]);
    // A 997 Hz sine at full scale reads -3.01 LUFS per channel, so 0.1 (-20 dBFS) on two channels reads -20 LUFS.
    const { stderr } = await meter("aevalsrc=0.1*sin(2*PI*997*t)|0.1*sin(2*PI*997*t):s=48000:d=5");
    const measured = parseLoudnessMeasurement(stderr);
    expect(measured?.integrated).toBeCloseTo(-20, 0);
    expect(measured?.truePeak).toBeCloseTo(-20, 0);
    expect(measured?.lra).toBeLessThan(1);
    expect(parseLoudnessMeasurement((await meter("anullsrc=r=48000:cl=mono:d=3")).stderr)).toBeNull();
    expect(parseLoudnessMeasurement((await meter("sine=d=0.2")).stderr)).toBeNull();
    expect(parseLoudnessMeasurement("ffmpeg exited")).toBeNull();
  });

  it("reads loudnorm's JSON from the end of stderr; -inf means nothing was measured", () => {
    const printed = (i: string) =>
      `size=N/A time=00:00:12.00 bitrate=N/A speed= 100x\n[Parsed_loudnorm_1 @ 0x5560] \n{\n\t"input_i" : "${i}",\n\t"input_tp" : "-9.25",\n\t"input_lra" : "3.10",\n\t"input_thresh" : "-37.80",\n\t"output_i" : "-16.02",\n\t"output_tp" : "-1.50",\n\t"output_lra" : "2.90",\n\t"output_thresh" : "-26.20",\n\t"normalization_type" : "dynamic",\n\t"target_offset" : "0.40"\n}\n`;
    expect(parseLoudnormMeasurement(printed("-27.50"))).toEqual({
      inputI: -27.5,
      inputTp: -9.25,
      inputLra: 3.1,
      inputThresh: -37.8,
      targetOffset: 0.4,
    });
    expect(parseLoudnormMeasurement(printed("-inf"))).toBeNull();
    expect(parseLoudnormMeasurement("ffmpeg exited")).toBeNull();
  });
});

describe("loudness-normalised jobs on the backend", () => {
  let backend: Backend;
  let fixture: Fixture;
  let scratch: string;

  beforeAll(async () => {
    scratch = scratchDir();
    fixture = await new Fixture().start();
    backend = await Backend.start();
  });

  afterAll(async () => {
    await backend?.stop();
    await fixture?.stop();
    rmSync(scratch, { recursive: true, force: true });
  });

  /** 12 s: a 1 kHz tone at about -35 dBFS with white noise 20 dB under it, and a pause. */
  async function quietToneOverNoise(name: string): Promise<string> {
    const input = path.join(scratch, name);
    await ffmpeg([
      "-f",
      "lavfi",
      "-i",
      "aevalsrc='0.025*sin(2*PI*1000*t)*(between(t,2,6)+between(t,8,12))':s=48000:d=12",
      "-f",
      "lavfi",
      "-i",
      "anoisesrc=a=0.004:c=white:r=48000:d=12:seed=3",
      "-filter_complex",
      "[0][1]amix=inputs=2:normalize=0",
      "-c:a",
      "pcm_s16le",
      input,
    ]);
    return input;
  }

  /** Runs a job over `input` and returns the uploaded result (as a scratch file) and the job's log line. */
  async function runJob(key: string, input: string, overrides: Record<string, unknown> = {}) {
    fixture.media.set(key, readFileSync(input));
    expect((await backend.postJob(wavJob(fixture, key, overrides))).status).toBe(202);
    const [callback] = await fixture.waitForCallback(key, 1, 60_000);
    const payload = JSON.parse(callback!.body.toString("utf8")) as { status: string; error?: string };
    expect(payload.error).toBeUndefined();
    expect(payload.status).toBe("completed");
    const [put] = fixture.of("PUT", `/upload/${key}`);
    const output = writeScratch(scratch, `${key}-out.wav`, put!.body);
    // The job's log line follows its callback.
    const logOf = () => backend.jobLogs().find((line) => line.jobId === `job_${key}`);
    await until(() => logOf() !== undefined, 10_000, `the log line of job_${key}`);
    return { output, log: logOf()! };
  }

  it("brings a quiet tone over noise to the target (one linear gain) and measures first", async () => {
    const input = await quietToneOverNoise("quiet.wav");
    expect((await loudness(input)).integrated).toBeLessThan(-33);
    const { output, log } = await runJob("tone", input);
    const measured = await loudness(output);
    expect(Math.abs(measured.integrated - -16)).toBeLessThanOrEqual(0.5);
    expect(measured.truePeak).toBeLessThanOrEqual(-1.5 + 0.2);
    expect(log).toMatchObject({ status: "completed", loudnormLinear: 1 });
    expect(log.loudnormMeasureMs).toBeGreaterThan(0);
    // The target is the request's, not the args' own options.
    const other = await runJob("tone-23", input, { loudnorm: { integrated: -23, truePeak: -2, lra: 7 } });
    expect(Math.abs((await loudness(other.output)).integrated - -23)).toBeLessThanOrEqual(0.5);
  });

  it("keeps loudnorm's dynamic mode within the target when one gain would pass the true-peak limit", async () => {
    // Clicks 1 dB under full scale over a quiet tone: -16 LUFS with one gain would clip them.
    const input = path.join(scratch, "peaky.wav");
    await ffmpeg([
      "-f",
      "lavfi",
      "-i",
      "aevalsrc='0.02*sin(2*PI*440*t)+0.89*lt(mod(t,1),0.0005)':s=48000:d=10",
      "-c:a",
      "pcm_s16le",
      input,
    ]);
    // Plain args, and a measuring pass of its own whose intermediate loudnorm then measures again.
    for (const [key, overrides] of [
      ["peaky", {}],
      ["peaky-mp", { args: FINAL_ARGS, measurePass: MEASURE_PASS }],
    ] as const) {
      const { output, log } = await runJob(key, input, overrides);
      const measured = await loudness(output);
      expect(Math.abs(measured.integrated - -16)).toBeLessThanOrEqual(1);
      expect(measured.truePeak).toBeLessThanOrEqual(-1.5 + 0.5);
      expect(log).toMatchObject({ status: "completed", loudnormLinear: 0 });
    }
  });

  it("runs a measuring pass of its own, whose intermediate the final pass normalises", async () => {
    const input = await quietToneOverNoise("quiet-mp.wav");
    const { output, log } = await runJob("measure-pass", input, { args: FINAL_ARGS, measurePass: MEASURE_PASS });
    const measured = await loudness(output);
    expect(Math.abs(measured.integrated - -16)).toBeLessThanOrEqual(0.5);
    expect(log).toMatchObject({ status: "completed", loudnormLinear: 1 });
    const { stdout } = await run("ffprobe", [
      "-v",
      "error",
      "-show_entries",
      "format=duration",
      "-of",
      "csv=p=0",
      output,
    ]);
    expect(Number(stdout)).toBeCloseTo(12, 1);
    expect(backend.leftovers()).toEqual([]);
  });

  it("completes on silence, where there is nothing to measure", async () => {
    const input = path.join(scratch, "silence.wav");
    await ffmpeg(["-f", "lavfi", "-i", "anullsrc=r=48000:cl=mono", "-t", "3", "-c:a", "pcm_s16le", input]);
    const { output, log } = await runJob("silence", input);
    const { stdout } = await run("ffprobe", [
      "-v",
      "error",
      "-show_entries",
      "format=duration",
      "-of",
      "csv=p=0",
      output,
    ]);
    expect(Number(stdout)).toBeCloseTo(3, 1);
    expect(log.loudnormLinear).toBeUndefined();
  });
});
