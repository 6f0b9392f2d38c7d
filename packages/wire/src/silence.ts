/**
 * Silence removal's ffmpeg runs, shared by both engines and by the backend's check of a job
 * (protocol.ts parseJobRequest builds the cut args to vet them): find the pauses with
 * silencedetect, plan the spans to cut, cut them from picture and sound at the same instants.
 * No Node API here.
 */
import type { SilenceCut, SilencePass } from "./protocol.ts";

/** The most pauses one result loses: past it, the longest are cut and the rest kept. */
export const MAX_CUTS = 1_000;

/** The run that lists the pauses of `pass.input` (silencedetect at the pass's threshold and shortest pause). */
export function silenceDetectArgs(pass: SilencePass): string[] {
  return [
    "-hide_banner",
    "-nostats",
    "-i",
    pass.input,
    "-map",
    "0:a:0",
    "-af",
    `silencedetect=noise=${pass.thresholdDb}dB:duration=${pass.minPauseSeconds}`,
    "-f",
    "null",
    "-",
  ];
}

/** The pauses silencedetect printed; one still open at the end of the file ends there (end null). */
export function parseSilences(stderr: string): { start: number; end: number | null }[] {
  const silences: { start: number; end: number | null }[] = [];
  for (const line of stderr.split("\n")) {
    const start = /silence_start: (-?[\d.]+)/.exec(line);
    if (start) {
      silences.push({ start: Math.max(0, Number(start[1])), end: null });
      continue;
    }
    const end = /silence_end: (-?[\d.]+)/.exec(line);
    const open = silences.at(-1);
    if (end && open && open.end === null) open.end = Number(end[1]);
  }
  return silences.filter((s) => Number.isFinite(s.start) && (s.end === null || Number.isFinite(s.end)));
}

const round3 = (seconds: number) => Math.round(seconds * 1000) / 1000;

/**
 * The spans to cut, in the cleaned file's time: each pause keeps `keepSeconds` (half before the
 * next word, half after the last one), and a pause open at the end keeps half of it after the
 * last word. With a frame rate, each edge moves to the nearest frame, so the picture and the sound
 * lose the same frames' worth of time. At most MAX_CUTS: the longest.
 */
export function planCuts(
  silences: { start: number; end: number | null }[],
  pass: Pick<SilencePass, "keepSeconds" | "frameRate">,
  durationSeconds: number,
): SilenceCut[] {
  const half = pass.keepSeconds / 2;
  const onFrame = (t: number) => (pass.frameRate ? Math.round(t * pass.frameRate) / pass.frameRate : t);
  const cuts: SilenceCut[] = [];
  for (const silence of silences) {
    const end = silence.end ?? durationSeconds;
    // A pause at the very start keeps half the pause in front of the first word too.
    const start = onFrame(silence.start + half);
    const stop = onFrame(silence.end === null ? durationSeconds : end - half);
    if (stop - start >= 0.05) cuts.push({ start: round3(start), end: round3(stop) });
  }
  if (cuts.length <= MAX_CUTS) return cuts;
  return [...cuts]
    .sort((a, b) => b.end - b.start - (a.end - a.start))
    .slice(0, MAX_CUTS)
    .sort((a, b) => a.start - b.start);
}

/** The seconds the cuts take away. */
export const removedSeconds = (cuts: SilenceCut[]) => round3(cuts.reduce((sum, c) => sum + (c.end - c.start), 0));

/**
 * The run that writes `pass.output` without the cuts: each kept span trimmed from picture and
 * sound at the same instants and the spans joined (concat), timestamps made continuous. Without
 * cuts the streams are copied.
 */
export function silenceCutArgs(pass: SilencePass, cuts: SilenceCut[]): string[] {
  const head = ["-hide_banner", "-y", "-i", pass.input];
  if (cuts.length === 0) return [...head, ...pass.copyArgs, pass.output];
  const spans: { start: number; end?: number }[] = [];
  let from = 0;
  for (const c of cuts) {
    if (c.start > from) spans.push({ start: from, end: c.start });
    from = c.end;
  }
  spans.push({ start: from });
  const range = (s: { start: number; end?: number }) => `start=${s.start}${s.end === undefined ? "" : `:end=${s.end}`}`;
  const n = spans.length;
  const graph: string[] = [];
  const names = spans.map((_s, i) => (pass.video ? `[v${i}][a${i}]` : `[a${i}]`)).join("");
  graph.push(`[0:a:0]asplit=${n}${spans.map((_s, i) => `[as${i}]`).join("")}`);
  if (pass.video) graph.push(`[0:v:0]split=${n}${spans.map((_s, i) => `[vs${i}]`).join("")}`);
  spans.forEach((s, i) => {
    graph.push(`[as${i}]atrim=${range(s)},asetpts=PTS-STARTPTS[a${i}]`);
    if (pass.video) graph.push(`[vs${i}]trim=${range(s)},setpts=PTS-STARTPTS[v${i}]`);
  });
  const joinedPicture = pass.videoFilter ? "[vj]" : "[v]";
  graph.push(`${names}concat=n=${n}:v=${pass.video ? 1 : 0}:a=1${pass.video ? joinedPicture : ""}[a]`);
  if (pass.video && pass.videoFilter) graph.push(`[vj]${pass.videoFilter}[v]`);
  const maps = pass.video ? ["-map", "[v]", "-map", "[a]"] : ["-map", "[a]"];
  return [...head, "-filter_complex", graph.join(";"), ...maps, ...pass.encodeArgs, pass.output];
}
