/**
 * Routing calibration (src/media-worker/routing.ts CALIBRATION): every media case on the 720p 10 s
 * clip (and 10 s speech) through the API of a `wrangler dev` session twice, once with every
 * command forced onto ffmpeg.wasm in the media Worker (workerd) and once onto the native
 * backend, plus the same command on native ffmpeg directly; prints the work of each command
 * as the router counts it (routing.ts workloadOf) and the seconds per unit on each side.
 * `BENCH_ONLY=calibrate npm run bench` (`BENCH_API_CASES` to run some of the cases).
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { MediaInput } from "../src/media/commands/command";
import { workloadOf } from "../src/media-worker/routing";
import { apiCalls, callTool, makeInputs, nativeSeconds, startStack, uploadFile, type Uploads } from "./api";
import { benchCases } from "./cases";

export async function runCalibration(): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "bench-calibrate-"));
  try {
    const { inputs, files } = await makeInputs(dir, "720p");
    const byInput = new Map<MediaInput, string>([
      [inputs.clip, files.clip],
      [inputs.clip2, files.clip2],
      [inputs.logo, files.logo],
      [inputs.speech, files.speech],
    ]);
    const seconds: Record<string, { wasm?: number; backend?: number; native?: number }> = {};
    // Some of the cases by id, as for the API table (`BENCH_API_CASES=clean-audio`).
    const only = process.env.BENCH_API_CASES?.split(",").map((id) => id.trim());
    for (const engine of ["wasm", "backend"] as const) {
      const stack = await startStack(path.join(dir, `state-${engine}`), { MEDIA_ENGINE: engine });
      try {
        const uploads: Uploads = {
          clip: await uploadFile(stack, files.clip),
          clip2: "",
          logo: await uploadFile(stack, files.logo),
          speech: await uploadFile(stack, files.speech),
        };
        uploads.clip2 = uploads.clip;
        // A first job wakes the media Worker and compiles what it needs: not counted.
        await callTool(stack, "extract-audio", { uploadId: uploads.speech, format: "mp3" });
        for (const bench of benchCases(inputs)) {
          const call = apiCalls[bench.id];
          if (only && !only.includes(bench.id)) continue;
          if (!call || (engine === "wasm" && bench.id === "convert-webm")) continue; // libopus crashes this wasm build
          const { tool, body } = call(uploads);
          const run = await callTool(stack, tool, body);
          (seconds[bench.id] ??= {})[engine] = run.status === "completed" ? run.seconds : NaN;
        }
      } finally {
        await stack.stop();
      }
    }
    console.log(
      "\nrouting calibration (720p 10 s; API seconds = call to downloaded result, forced engine; native = ffmpeg directly)",
    );
    console.log(
      "| case | work | wasm API s | backend API s | native s | wasm per unit | native per unit | backend - native s |",
    );
    console.log("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for (const bench of benchCases(inputs)) {
      const s = seconds[bench.id];
      if (!s) continue;
      const command = await bench.build();
      const work = workloadOf(command, bench.inputs);
      s.native = await nativeSeconds(dir, bench.build, new Map(bench.inputs.map((i) => [i.name, byInput.get(i)!])));
      const unit =
        work.kind === "copy"
          ? work.inputBytes / 1e6
          : work.kind === "audio"
            ? work.mediaSeconds
            : work.megapixelSeconds;
      const unitName =
        work.kind === "copy"
          ? "MB"
          : work.kind === "audio"
            ? "media s"
            : `MP*s ${work.kind}${work.draws ? " draws" : ""}`;
      const per = (value?: number) =>
        value === undefined || !Number.isFinite(value) ? "-" : (value / unit).toFixed(3);
      console.log(
        `| ${bench.label} | ${unit.toFixed(1)} ${unitName} | ${s.wasm?.toFixed(2) ?? "-"} | ${s.backend?.toFixed(2) ?? "-"} | ${s.native.toFixed(2)} | ${per(s.wasm)} | ${per(s.native)} | ${s.backend !== undefined ? (s.backend - s.native).toFixed(2) : "-"} |`,
      );
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
