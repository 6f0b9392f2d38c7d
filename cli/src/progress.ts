/**
 * Progress on stderr (stdout stays for results, so `id=$(media-credits upload f.mp4)` works): bars
 * from cli-progress on a terminal; a line at the start and at the end otherwise (CI logs, pipes).
 */
import cliProgress from "cli-progress";

export interface Progress {
  update(value: number, status?: string): void;
  stop(summary: string): void;
}

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;

function interactive(): boolean {
  return Boolean(process.stderr.isTTY) && process.env.MEDIA_CREDITS_PROGRESS !== "plain";
}

/** A bar counting bytes up to `total`. */
export function byteProgress(label: string, total: number, quiet = false): Progress {
  if (quiet) return { update() {}, stop() {} };
  if (!interactive()) {
    process.stderr.write(`${label}: ${mb(total)}\n`);
    return { update() {}, stop: (summary) => process.stderr.write(`${label}: ${summary}\n`) };
  }
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format: `${label} [{bar}] {percentage}% | {done} / {size} | {rate} MB/s | eta {eta_formatted}`,
      hideCursor: true,
      barsize: 30,
    },
    cliProgress.Presets.shades_classic,
  );
  const started = Date.now();
  const payload = (value: number) => ({
    done: mb(value),
    size: mb(total),
    rate: (value / 1e6 / Math.max(0.001, (Date.now() - started) / 1000)).toFixed(1),
  });
  bar.start(total, 0, payload(0));
  return {
    update: (value) => bar.update(value, payload(value)),
    stop(summary) {
      bar.stop();
      process.stderr.write(`${label}: ${summary}\n`);
    },
  };
}

/** Waiting for a job: its status and the time elapsed (the API reports no percentage). */
export function waitProgress(label: string, quiet = false): Progress {
  if (quiet) return { update() {}, stop() {} };
  if (!interactive()) {
    process.stderr.write(`${label}: waiting\n`);
    let last = "";
    return {
      update(_value, status) {
        if (status && status !== last) process.stderr.write(`${label}: ${(last = status)}\n`);
      },
      stop: (summary) => process.stderr.write(`${label}: ${summary}\n`),
    };
  }
  const bar = new cliProgress.SingleBar(
    { stream: process.stderr, format: `${label} {spinner} {status} | {elapsed} s`, hideCursor: true },
    cliProgress.Presets.shades_classic,
  );
  const frames = ["|", "/", "-", "\\"];
  let tick = 0;
  const started = Date.now();
  let current = "queued";
  bar.start(1, 0, { spinner: frames[0], status: current, elapsed: "0.0" });
  return {
    update(_value, status) {
      current = status ?? current;
      bar.update(0, {
        spinner: frames[++tick % frames.length],
        status: current,
        elapsed: ((Date.now() - started) / 1000).toFixed(1),
      });
    },
    stop(summary) {
      bar.stop();
      process.stderr.write(`${label}: ${summary}\n`);
    },
  };
}
