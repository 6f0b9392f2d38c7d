/**
 * watermark: an image (the second input) or a text mark over a video, as an H.264 MP4. `fixe`
 * tiles the mark over a grid, `flottant` moves one mark every `interval` seconds over a
 * low-discrepancy sequence. User text never enters the filter graph (`mark.txt`, expansion off).
 * Why these choices: docs/decisions/0008-watermark-output.md.
 */
import { DRAWTEXT_FONT, drawtextFontFor } from "../fonts";
import type { WatermarkInput } from "../../tools/watermark";
import { FONTS_DIR, type MediaCommand, type MediaInput, resultName } from "./command";
import { audioEncoderArgs, EVEN_SIZE_FILTER, videoEncoderArgs, wasmHeapEstimate } from "./encoders";

export type WatermarkParams = Pick<WatermarkInput, "watermarkText" | "type" | "opacity" | "interval"> & {
  /** Present when the mark is an image: the image is then `inputs[1]`. */
  watermarkUploadId?: string;
};

/**
 * The shipped font drawtext uses for a Latin, Cyrillic, Greek or Vietnamese text (Inter, every
 * script it has, in one file; drawtextFontFor picks a Noto face for Arabic, Hebrew and Thai); the
 * runner places it in the working directory.
 */
export const WATERMARK_FONT = DRAWTEXT_FONT;
/** The file the user's text is written to. */
export const WATERMARK_TEXT_FILE = "mark.txt";

/** Audio MP4 carries as is and every MP4 player decodes. */
const MP4_COPY_AUDIO = new Set(["aac", "mp3"]);
/** Average advance width of a glyph, in em, of a sans-serif font: enough to keep text inside its box. */
const AVERAGE_GLYPH_EM = 0.6;
/** Smallest text size drawn, in pixels. */
const MIN_TEXT_SIZE = 8;
/** Two decimals are plenty for positions, alphas and sizes in expressions. */
const fmt = (value: number) => String(Math.round(value * 100) / 100);

/** Characters as the user sees them (code points), and the user's lines. */
const lengthOf = (line: string) => [...line].length;
const splitLines = (text: string) => text.split(/\r\n|\r|\n/);

interface Placement {
  type: "fixe" | "flottant";
  interval: number;
}

interface Grid {
  columns: number;
  rows: number;
  cellWidth: number;
  cellHeight: number;
}

function gridFor(width: number, height: number): Grid {
  const columns = width >= height ? 4 : 3;
  const rows = width >= height ? 3 : 4;
  return { columns, rows, cellWidth: Math.ceil(width / columns), cellHeight: Math.ceil(height / rows) };
}

/**
 * Position of the k-th interval, k = floor(t / interval), as a fraction of the free space:
 * the R2 sequence (plastic number), offset so the first position is not a corner.
 */
function floatingPosition(interval: number, free: string, axis: "x" | "y"): string {
  const [step, offset] = axis === "x" ? [0.7548776662, 0.2] : [0.569840291, 0.7];
  return `'(${free})*mod(floor(t/${interval})*${step}+${offset},1)'`;
}

/** Image mark: scaled into its box, alpha applied, tiled or moving, then laid over the video. */
function imageGraph(p: Placement, width: number, height: number, alpha: string): string {
  if (p.type === "fixe") {
    const { columns, rows, cellWidth, cellHeight } = gridFor(width, height);
    const markWidth = Math.max(2, Math.floor(cellWidth / 2));
    const markHeight = Math.max(2, Math.floor(cellHeight / 2));
    return (
      `[1:v]scale=${markWidth}:${markHeight}:force_original_aspect_ratio=decrease,format=rgba,colorchannelmixer=aa=${alpha},` +
      `pad=${cellWidth}:${cellHeight}:(ow-iw)/2:(oh-ih)/2:color=black@0,` +
      // One image frame becomes columns*rows identical frames, which tile lays out as one layer.
      `loop=loop=${columns * rows - 1}:size=1:start=0,tile=${columns}x${rows}[mark];` +
      `[0:V:0][mark]overlay=0:0:format=auto,${EVEN_SIZE_FILTER},format=yuv420p[v]`
    );
  }
  const markWidth = Math.max(2, Math.floor(width / 5));
  const markHeight = Math.max(2, Math.floor(height / 5));
  return (
    `[1:v]scale=${markWidth}:${markHeight}:force_original_aspect_ratio=decrease,format=rgba,colorchannelmixer=aa=${alpha}[mark];` +
    `[0:V:0][mark]overlay=x=${floatingPosition(p.interval, "W-w", "x")}:y=${floatingPosition(p.interval, "H-h", "y")}:format=auto,${EVEN_SIZE_FILTER},format=yuv420p[v]`
  );
}

/**
 * The grid of a text mark: as many columns as copies of the text fit side by side at a
 * readable size (a third of a row's height), from 1 for a long sentence up to the image grid's.
 */
function textGridFor(text: string, width: number, height: number): Grid {
  const grid = gridFor(width, height);
  const size = grid.cellHeight * 0.35;
  const longest = Math.max(1, ...splitLines(text).map(lengthOf));
  const fit = Math.floor((width * 0.9) / (longest * AVERAGE_GLYPH_EM * size));
  const columns = Math.min(grid.columns, Math.max(1, fit));
  return { ...grid, columns, cellWidth: Math.ceil(width / columns) };
}

/** The size at which the lines fill the box, unrounded and unclamped (layouts compare on it). */
function fittingSize(lines: string[], boxWidth: number, boxHeight: number, maxSize: number): number {
  const longest = Math.max(1, ...lines.map(lengthOf));
  const byWidth = boxWidth / (longest * AVERAGE_GLYPH_EM);
  const byHeight = boxHeight / (lines.length * 1.25);
  return Math.min(maxSize, byWidth, byHeight);
}

/**
 * Greedy word wrap at `width` characters; the user's own line breaks are kept. With `cutWords`,
 * a word longer than a line (a URL, "AAAA...") is cut into line-long pieces.
 */
function wrap(text: string, width: number, cutWords = false): string[] {
  return splitLines(text).flatMap((paragraph) => {
    const lines: string[] = [];
    let line = "";
    const words = paragraph.split(/ +/).flatMap((word) => {
      const characters = [...word];
      if (!cutWords || characters.length <= width) return [word];
      const pieces: string[] = [];
      for (let i = 0; i < characters.length; i += width) pieces.push(characters.slice(i, i + width).join(""));
      return pieces;
    });
    for (const word of words) {
      if (line !== "" && lengthOf(line) + 1 + lengthOf(word) > width) {
        lines.push(line);
        line = word;
      } else {
        line = line === "" ? word : `${line} ${word}`;
      }
    }
    lines.push(line);
    return lines;
  });
}

/**
 * The text's lines and font size in a box: the user's lines as they are, or wrapped onto more
 * lines when that gives a larger font (a long sentence in a small frame).
 */
function layoutText(
  text: string,
  boxWidth: number,
  boxHeight: number,
  maxSize: number,
): { lines: string[]; size: number } {
  let best = { lines: splitLines(text), size: fittingSize(splitLines(text), boxWidth, boxHeight, maxSize) };
  const total = lengthOf(text);
  // Words are cut only when whole words cannot reach the 8 px floor.
  for (const cutWords of [false, true]) {
    if (cutWords && best.size >= MIN_TEXT_SIZE) break;
    for (let count = 2; count <= 8 && total / count >= 4; count++) {
      const lines = wrap(text, Math.ceil(total / count), cutWords);
      const size = fittingSize(lines, boxWidth, boxHeight, maxSize);
      // More lines only for a clearly larger text: one line reads better at about the same size.
      if (size > best.size * 1.1) best = { lines, size };
    }
  }
  // Compared before the floor: at the floor every layout ties, and the single line (the widest)
  // used to win in a small frame.
  return { lines: best.lines, size: Math.max(MIN_TEXT_SIZE, Math.floor(best.size)) };
}

/**
 * Text mark: white text with a dark outline (readable on any picture), tiled or moving. Returns
 * the graph and the text as laid out (line breaks added where a long text had to wrap).
 */
function textGraph(
  p: Placement,
  text: string,
  width: number,
  height: number,
  alpha: number,
  font: string,
): { graph: string; text: string } {
  const draw = (size: number, x: string, y: string) =>
    `drawtext=fontfile=${FONTS_DIR}/${font}:textfile=${WATERMARK_TEXT_FILE}:expansion=none:fontsize=${size}:` +
    `fontcolor=white@${fmt(alpha)}:borderw=${Math.max(1, Math.round(size / 16))}:bordercolor=black@${fmt(alpha * 0.6)}:` +
    `x=${x}:y=${y}`;
  const finish = (filters: string[], lines: string[]) => ({
    graph: `[0:V:0]${filters.join(",")},${EVEN_SIZE_FILTER},format=yuv420p[v]`,
    text: lines.join("\n"),
  });
  if (p.type === "fixe") {
    const { columns, rows, cellWidth, cellHeight } = textGridFor(text, width, height);
    const { lines, size } = layoutText(text, cellWidth * 0.9, cellHeight * 0.8, cellHeight * 0.35);
    const draws: string[] = [];
    for (let row = 0; row < rows; row++) {
      for (let column = 0; column < columns; column++) {
        const cx = Math.round((column + 0.5) * cellWidth);
        const cy = Math.round((row + 0.5) * cellHeight);
        draws.push(draw(size, `${cx}-tw/2`, `${cy}-th/2`));
      }
    }
    return finish(draws, lines);
  }
  const { lines, size } = layoutText(text, width * 0.9, height * 0.5, height / 10);
  return finish(
    [draw(size, floatingPosition(p.interval, "w-tw", "x"), floatingPosition(p.interval, "h-th", "y"))],
    lines,
  );
}

/** Pixels of the watermark image; images probed before their size was recorded count as 1080p. */
function imagePixels(image: MediaInput | undefined): number {
  if (image === undefined) return 0;
  return (image.probe.width ?? 1920) * (image.probe.height ?? 1080);
}

export function buildWatermarkCommand(params: WatermarkParams, inputs: MediaInput[]): MediaCommand {
  const video = inputs[0];
  if (video === undefined) throw new TypeError("watermark takes a video input");
  const image = params.watermarkUploadId !== undefined ? inputs[1] : undefined;
  if (params.watermarkUploadId !== undefined && image === undefined)
    throw new TypeError("the watermark image must be the second input");
  const text = params.watermarkText;
  if (image === undefined && (text === undefined || text.length === 0))
    throw new TypeError("watermark needs an image or a text");

  const { probe } = video;
  const width = probe.width ?? 1280;
  const height = probe.height ?? 720;
  // Validated upstream; only numbers ever reach the filter graph, whatever the caller passes.
  const opacity = Number.isFinite(params.opacity) ? Math.min(100, Math.max(10, params.opacity)) : 80;
  const alpha = opacity / 100;
  const placement = {
    type: params.type === "flottant" ? "flottant" : "fixe",
    interval: [3, 5, 8].includes(params.interval) ? params.interval : 5,
  } as const;

  const files: Record<string, Uint8Array> = {};
  const font = text !== undefined ? drawtextFontFor(text) : WATERMARK_FONT;
  let graph: string;
  if (image !== undefined) {
    graph = imageGraph(placement, width, height, fmt(alpha));
  } else {
    const laid = textGraph(placement, text!, width, height, alpha, font);
    files[WATERMARK_TEXT_FILE] = new TextEncoder().encode(laid.text);
    graph = laid.graph;
  }

  const audioArgs = !probe.hasAudio
    ? []
    : probe.audioCodec !== undefined && MP4_COPY_AUDIO.has(probe.audioCodec)
      ? ["-c:a", "copy"]
      : audioEncoderArgs("aac");
  const outputName = "out.mp4";
  return {
    args: [
      "-hide_banner",
      "-y",
      "-i",
      video.name,
      ...(image !== undefined ? ["-i", image.name] : []),
      "-filter_complex",
      graph,
      "-map",
      "[v]",
      "-map",
      "0:a:0?",
      ...videoEncoderArgs("x264", width, height),
      ...audioArgs,
      "-movflags",
      "+faststart",
      "-f",
      "mp4",
      outputName,
    ],
    files,
    fonts: image !== undefined ? [] : [font],
    outputName,
    resultFilename: resultName(video.filename, "mp4", "-watermark"),
    contentType: "video/mp4",
    wasmCapable: true,
    // The image decoded (RGBA) and converted once more before it is scaled to the video.
    wasmHeapBytes: wasmHeapEstimate("x264", width, height, width * height * 16 + imagePixels(image) * 8),
  };
}
