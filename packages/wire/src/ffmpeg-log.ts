/**
 * What a failed ffmpeg run tells its user, from its log: the last meaningful lines, or, when the
 * decoders rejected the input's data, that the file is damaged. No Node API here: both engines use
 * it (native ffmpeg on the backend, ffmpeg.wasm in the media Worker, src/media-worker/ffmpeg-wasm.ts).
 */

/** Lines that explain nothing about a failure: progress, banners, listings, encoders' statistics. */
const NOISE = [
  /^(frame|size)=/, // progress (written with \r)
  /^Press \[q\]/,
  /^(Input|Output) #\d+/,
  /^Stream mapping:/,
  /^Stream #\d+:\d+ -> #\d+:\d+/,
  /^ffmpeg version /,
  /^(built with|configuration:|lib\w+\s+\d)/,
  /^\[(out|in)#/, // per-file summaries of newer ffmpeg
  /^video:\S+ audio:\S+/, // final size summary
  // x264's settings and end-of-run statistics, the AAC encoder's quality average: printed by every
  // run that opened the encoder, failed or not (and the settings show the service's internals).
  /^\[libx264\] (frame [IPB]:|mb [IPB] |264 - core|final ratefactor|ref [PB] |coded y|i(16|8|4) |8x8 transform|Weighted P|kb\/s:|using (SAR|cpu)|profile |consecutive B|direct mvs)/,
  /^\[aac\] Qavg:/,
];

/** A decoder's complaint about the data it was given (h264, hevc, aac, mp3, demuxers). */
const DECODE_ERROR =
  /Error while decoding stream|Invalid data found when processing input|Error splitting the input into NAL units|Invalid NAL unit size|error while decoding MB|concealing \d+ DC|channel element \d+\.\d+ is not allocated|Reserved bit set|Prediction is not allowed|Number of scalefactor bands|invalid band type|decode_slice_header error|non-existing PPS|Header missing|Packet corrupt|corrupt (input|packet|frame)/i;
/** Fewer complaints than this in a failed run may be incidental (a stream cut between keyframes). */
const DAMAGED_MIN_ERRORS = 3;

function meaningfulLines(log: string): string[] {
  return (
    log
      .split(/\r\n|\r|\n/)
      .filter((line) => line.trim() !== "" && !/^\s/.test(line))
      // Any URL left (a streamed input's, backend/src/job-runner.ts) would carry its signature: never shown.
      .map((line) =>
        line
          .trim()
          .replace(/ @ 0x[0-9a-f]+\]/g, "]")
          .replace(/\b(?:https?|tcp|tls):\/\/[^\s'"]+/gi, (url) => (url.endsWith(":") ? "<url>:" : "<url>")),
      )
      .filter((line) => !NOISE.some((re) => re.test(line)))
  );
}

/**
 * The last meaningful lines of ffmpeg's log, on one line: progress, banners, stream listings,
 * indented metadata and encoder statistics are dropped, repeated lines are kept once.
 */
export function summarizeFfmpegLog(log: string, maxLines = 4, maxChars = 1000): string {
  const lines = meaningfulLines(log);
  const picked: string[] = [];
  for (let i = lines.length - 1; i >= 0 && picked.length < maxLines; i--) {
    const line = lines[i]!;
    if (/^Last message repeated/.test(line)) continue;
    if (!picked.includes(line)) picked.unshift(line);
  }
  const text = picked.join(" | ");
  return text.length > maxChars ? `…${text.slice(text.length - maxChars + 1)}` : text;
}

/**
 * Why a failed run failed, for its user: "the input is damaged" with the decoders' first
 * complaints when they rejected its data, else `head` and the last meaningful lines.
 */
export function describeFfmpegLog(head: string, log: string): string {
  const complaints = meaningfulLines(log).filter((line) => DECODE_ERROR.test(line));
  if (complaints.length >= DAMAGED_MIN_ERRORS) {
    const first = [...new Set(complaints)].slice(0, 2).join(" | ");
    return `the input file looks damaged: its audio or video data could not be decoded (${first.slice(0, 300)})`;
  }
  const summary = summarizeFfmpegLog(log);
  return summary ? `${head}: ${summary}` : head;
}
