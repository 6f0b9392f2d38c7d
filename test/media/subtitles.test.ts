/**
 * The subtitles tool: SRT and word-timed cues, the ASS script, and burn-ins on ffmpeg.wasm
 * whose frames are read back as raw RGB to check where and how the captions were drawn.
 * All the ffmpeg-running tests live in this one file: each file loading the wasm pays 15-20 s.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { runFfmpegWasm } from "../../src/media-worker/ffmpeg-wasm";
import { loadFont } from "../../src/media-worker/font-data";
import {
  fontFamilyName,
  fontFiles,
  fontIds,
  scriptFaces,
  scripts,
  subtitleFonts,
  type FontId,
  type ScriptSubset,
} from "../../src/media/fonts";
import type { MediaInput } from "../../src/media/commands/command";
import { assColor, assTime, buildAss, escapeAssText, type SubtitleStyleParams } from "../../src/media/ass";
import { cuesFromSrt, cuesFromWords, SrtError, type Cue, type TimedWord } from "../../src/media/captions";
import { buildSubtitlesCommand } from "../../src/media/commands/subtitles";
import { SubtitlesParams } from "../../src/tools/subtitles";
import { createFfmpegCore } from "../../wasm/ffmpeg-core";

const MiB = 1024 * 1024;
const WIDTH = 320;
const HEIGHT = 240;
const VIDEO = { width: WIDTH, height: HEIGHT };

/** The contract's defaults, as the route hands them over after validation. */
const defaults = SubtitlesParams.parse({ uploadId: "upl_test" });
const params = (over: Partial<SubtitleStyleParams> = {}): SubtitleStyleParams => ({ ...defaults, ...over });

const oneCue = (text: string, start = 0, end = 2): Cue[] => [{ start, end, text }];
const styleLine = (ass: string) =>
  ass
    .split("\n")
    .find((line) => line.startsWith("Style: "))!
    .slice(7)
    .split(",");
const dialogues = (ass: string) => ass.split("\n").filter((line) => line.startsWith("Dialogue: "));
/** Text field of a Dialogue line (the 10th field; it may itself contain commas). */
const dialogueText = (line: string) => line.slice("Dialogue: ".length).split(",").slice(9).join(",");
const STYLE_FIELDS =
  "Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, Bold, Italic, Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, MarginV, Encoding".split(
    ", ",
  );
const styleField = (ass: string, name: string) => styleLine(ass)[STYLE_FIELDS.indexOf(name)]!;

/** (usWinAscent + usWinDescent) / unitsPerEm of a TrueType font: the height libass sizes it by. */
function lineHeightEm(font: Uint8Array): number {
  const view = new DataView(font.buffer, font.byteOffset, font.byteLength);
  const table = (tag: string) => {
    for (let i = 0; i < view.getUint16(4); i++) {
      if (String.fromCharCode(...font.subarray(12 + i * 16, 16 + i * 16)) === tag)
        return view.getUint32(12 + i * 16 + 8);
    }
    throw new Error(`no ${tag} table`);
  };
  const os2 = table("OS/2");
  return (view.getUint16(os2 + 74) + view.getUint16(os2 + 76)) / view.getUint16(table("head") + 18);
}

describe("cuesFromSrt", () => {
  it("keeps cues, timing and text (line breaks included) as they are", async () => {
    const cues = await cuesFromSrt(
      "1\n00:00:01,000 --> 00:00:03,500\nBonjour à tous,\nça va ?\n\n2\n00:01:02,250 --> 00:01:04,000\nÉté œuvre 5 €\n",
    );
    expect(cues.map(({ start, end, text }) => ({ start, end, text }))).toEqual([
      { start: 1, end: 3.5, text: "Bonjour à tous,\nça va ?" },
      { start: 62.25, end: 64, text: "Été œuvre 5 €" },
    ]);
  });

  it("accepts CRLF, a BOM, missing indexes, extra blank lines and SRT coordinates", async () => {
    const cues = await cuesFromSrt(
      "\uFEFF\r\n\r\n00:00:00,500 --> 00:00:01,000 X1:10 X2:200 Y1:10 Y2:50\r\nUn\r\n\r\n\r\n\r\n2\r\n00:00:02,000 --> 00:00:03,000\r\nDeux\r\n",
    );
    expect(cues.map(({ start, end, text }) => [start, end, text])).toEqual([
      [0.5, 1, "Un"],
      [2, 3, "Deux"],
    ]);
  });

  it("removes SRT formatting tags but keeps other text, braces and backslashes", async () => {
    const [cue] = await cuesFromSrt(
      '1\n00:00:00,000 --> 00:00:01,000\n<i>Bonjour</i> <font color="#ff0000">{\\b1}</font> a < b\n',
    );
    expect(cue!.text).toBe("Bonjour {\\b1} a < b");
  });

  it("times the words of a cue in proportion to their length", async () => {
    const [cue] = await cuesFromSrt("1\n00:00:10,000 --> 00:00:12,000\nÉté œuvre\n5 €\n");
    // 3 + 5 + 1 + 1 = 10 characters over 2 s.
    expect(cue!.words!.map((w) => w.text)).toEqual(["Été", "œuvre", "5", "€"]);
    const spans = cue!.words!.map((w) => [w.start, w.end]);
    [
      [10, 10.6],
      [10.6, 11.6],
      [11.6, 11.8],
      [11.8, 12],
    ].forEach(([start, end], i) => {
      expect(spans[i]![0]).toBeCloseTo(start!, 9);
      expect(spans[i]![1]).toBeCloseTo(end!, 9);
    });
  });

  it("skips cues without text", async () => {
    const cues = await cuesFromSrt("1\n00:00:00,000 --> 00:00:01,000\n\n2\n00:00:01,000 --> 00:00:02,000\nX\n");
    expect(cues.map((c) => c.text)).toEqual(["X"]);
  });

  it.each([
    ["an empty document", "", /contains no cue/],
    ["blank lines only", "\n \n\t\n", /contains no cue/],
    ["plain text", "hello world\nnot a subtitle", /line 1: expected a timing line/],
    [
      "a block without timing",
      "1\n00:00:00,000 --> 00:00:01,000\nOK\n\n2\nno timing here\n",
      /line 6: expected a timing line/,
    ],
    ["a malformed timestamp", "1\n00:00:0,000 --> 00:00:01,000\nHi\n", /line 2: .*timestamp/],
    ["letters as a timestamp", "1\nab:cd:ef,000 --> 00:00:01,000\nHi\n", /line 2:/],
    [
      "a cue ending before it starts",
      "1\n00:00:05,000 --> 00:00:02,000\nHi\n",
      /line 2: the cue ends before it starts/,
    ],
  ])("rejects %s", async (_name, srt, message) => {
    const error = await cuesFromSrt(srt).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SrtError);
    expect((error as Error).message).toMatch(/^srtContent is not valid SRT: /);
    expect((error as Error).message).toMatch(message);
  });
});

describe("cuesFromWords", () => {
  const words = (...spec: [string, number, number][]): TimedWord[] =>
    spec.map(([text, start, end]) => ({ text, start, end }));
  const transcript = words(
    ["Bonjour", 0, 0.4],
    ["à", 0.45, 0.5],
    ["tous", 0.55, 0.9],
    ["les", 0.95, 1.1],
    ["amis", 1.15, 1.5],
    ["du", 1.55, 1.7],
    ["cinéma", 3, 3.5], // after a 1.3 s pause
    ["français.", 3.55, 4],
    ["Merci", 4.1, 4.5],
  );

  it("groups up to N words, breaking on long pauses and at sentence ends", () => {
    expect(cuesFromWords(transcript, 4).map((c) => c.text)).toEqual([
      "Bonjour à tous les",
      "amis du",
      "cinéma français.",
      "Merci",
    ]);
    expect(cuesFromWords(transcript, 2).map((c) => c.text)).toEqual([
      "Bonjour à",
      "tous les",
      "amis du",
      "cinéma français.",
      "Merci",
    ]);
    expect(cuesFromWords(transcript, 1)).toHaveLength(transcript.length);
  });

  it("keeps word times and bridges short gaps between captions, not long pauses", () => {
    const cues = cuesFromWords(transcript, 4);
    expect(cues[0]).toMatchObject({ start: 0, end: 1.15 }); // extended to the next caption
    expect(cues[0]!.words).toEqual(transcript.slice(0, 4));
    expect(cues[1]).toMatchObject({ start: 1.15, end: 1.7 }); // the pause stays empty
    expect(cues[2]).toMatchObject({ start: 3, end: 4.1 });
    expect(cues[3]).toMatchObject({ start: 4.1, end: 4.5 });
  });

  it("ignores empty words", () => {
    expect(cuesFromWords(words(["  ", 0, 1], ["oui", 1, 2]), 4).map((c) => c.text)).toEqual(["oui"]);
  });
});

describe("buildAss", () => {
  it("sizes the script to the video and names the font family of fontId", () => {
    const ass = buildAss(params({ fontId: "archivo-black" }), oneCue("x"), { width: 1920, height: 1080 });
    expect(ass).toContain("PlayResX: 1920\nPlayResY: 1080");
    expect(styleField(ass, "Fontname")).toBe("Archivo Black");
  });

  it("converts #RRGGBB to ASS &HAABBGGRR", () => {
    expect(assColor("#112233")).toBe("&H00332211");
    expect(assColor("#ffd166", 0.75)).toBe("&H4066D1FF");
    expect(assColor("#000000", 0)).toBe("&HFF000000");
    const ass = buildAss(params({ color: "#12AB34" }), oneCue("x"), VIDEO);
    expect(styleField(ass, "PrimaryColour")).toBe("&H0034AB12");
  });

  it("classique: a drop shadow in effectColor whose opacity is shadowIntensity", () => {
    const ass = buildAss(
      params({ style: "classique", effectColor: "#102030", shadowIntensity: 60 }),
      oneCue("x"),
      VIDEO,
    );
    expect(styleField(ass, "BorderStyle")).toBe("1");
    expect(styleField(ass, "Outline")).toBe("0");
    expect(Number(styleField(ass, "Shadow"))).toBeGreaterThan(0);
    expect(styleField(ass, "BackColour")).toBe("&H66302010"); // 40 % transparent
    const none = buildAss(params({ style: "classique", shadowIntensity: 0 }), oneCue("x"), VIDEO);
    expect(styleField(none, "Shadow")).toBe("0");
  });

  it("impact: one box behind the text in effectColor, opacity boxOpacity", () => {
    const ass = buildAss(params({ style: "impact", effectColor: "#0000FF", boxOpacity: 75 }), oneCue("x"), VIDEO);
    expect(styleField(ass, "BorderStyle")).toBe("4");
    expect(styleField(ass, "BackColour")).toBe("&H40FF0000");
    expect(Number(styleField(ass, "Shadow"))).toBeGreaterThan(0); // the box's padding
  });

  it("contour: an outline in effectColor whose width follows contourThickness", () => {
    const outline = (contourThickness: number) =>
      Number(styleField(buildAss(params({ style: "contour", contourThickness }), oneCue("x"), VIDEO), "Outline"));
    const ass = buildAss(params({ style: "contour", effectColor: "#FF0000" }), oneCue("x"), VIDEO);
    expect(styleField(ass, "OutlineColour")).toBe("&H000000FF");
    expect(styleField(ass, "Shadow")).toBe("0");
    expect(outline(0)).toBe(0);
    expect(outline(50)).toBeGreaterThan(0);
    expect(outline(100)).toBeCloseTo(2 * outline(50), 1);
    expect(outline(100)).toBeLessThanOrEqual(0.1 * Number(styleField(ass, "Fontsize")));
  });

  it("ignores the options of the other styles", () => {
    const a = buildAss(params({ style: "impact", shadowIntensity: 0, contourThickness: 0 }), oneCue("x"), VIDEO);
    const b = buildAss(params({ style: "impact", shadowIntensity: 100, contourThickness: 100 }), oneCue("x"), VIDEO);
    expect(a).toBe(b);
  });

  it("scales the font with the video and the size option", () => {
    const size = (s: SubtitleStyleParams["size"], video = VIDEO) =>
      Number(styleField(buildAss(params({ size: s }), oneCue("x"), video), "Fontsize"));
    expect(size("petite")).toBeLessThan(size("normale"));
    expect(size("normale")).toBeLessThan(size("grande"));
    expect(size("normale", { width: 1920, height: 1080 })).toBeCloseTo(4.5 * size("normale"), 5);
    // Portrait: sized on the shorter side, so four words still fit on a line.
    expect(size("normale", { width: 1080, height: 1920 })).toBe(size("normale", { width: 1920, height: 1080 }));
  });

  it("places captions by position: bottom-anchored in the lower half, top-anchored above, always on screen", () => {
    const place = (position: number) => {
      const ass = buildAss(params({ position }), oneCue("x"), VIDEO);
      return { alignment: styleField(ass, "Alignment"), marginV: Number(styleField(ass, "MarginV")) };
    };
    expect(place(82).alignment).toBe("2");
    expect(place(10).alignment).toBe("8");
    // The middle of a line sits at `position` % of the height.
    const fontSize = Number(styleField(buildAss(params(), oneCue("x"), VIDEO), "Fontsize"));
    expect(place(82).marginV).toBe(Math.round(HEIGHT - 0.82 * HEIGHT - fontSize / 2));
    expect(place(10).marginV).toBe(Math.round(0.1 * HEIGHT - fontSize / 2));
    expect(place(100).marginV).toBeGreaterThan(0);
    expect(place(0).marginV).toBeGreaterThan(0);
    expect(place(95).marginV).toBe(place(100).marginV);
  });

  it("writes one event per cue with ASS times", () => {
    const ass = buildAss(
      params(),
      [
        { start: 1.234, end: 3725.5, text: "a" },
        { start: 4, end: 5, text: "b" },
      ],
      VIDEO,
    );
    expect(dialogues(ass)).toEqual([
      "Dialogue: 0,0:00:01.23,1:02:05.50,Caption,,0,0,0,,a",
      "Dialogue: 0,0:00:04.00,0:00:05.00,Caption,,0,0,0,,b",
    ]);
    expect(assTime(59.999)).toBe("0:01:00.00");
  });

  it("escapes user text: override blocks, backslash sequences and line breaks stay literal", () => {
    expect(escapeAssText("{\\b1}gras{\\pos(0,0)}")).toBe("\\{\\b1\\}gras\\{\\pos(0,0)\\}");
    expect(escapeAssText("a\\Nb\\nc\\hd\\e")).toBe("a\\\u200BNb\\\u200Bnc\\\u200Bhd\\e");
    expect(escapeAssText("ligne 1\nligne 2\r\nligne 3")).toBe("ligne 1\\Nligne 2\\Nligne 3");
    // Characters the latin subsets lack are mapped to ones they have.
    expect(escapeAssText("Quoi\u202F?\u00AD")).toBe("Quoi\u00A0?");
    const [line] = dialogues(
      buildAss(params(), oneCue("{\\b1}x}\nDialogue: 0,0:00:00.00,9:00:00.00,Caption,,0,0,0,,pwned"), VIDEO),
    );
    expect(dialogueText(line!)).toBe("\\{\\b1\\}x\\}\\NDialogue: 0,0:00:00.00,9:00:00.00,Caption,,0,0,0,,pwned");
    expect(dialogueText(line!)).not.toMatch(/(^|[^\\])\{/);
  });

  it("switches runs of Arabic, Hebrew, Devanagari and Thai to their face at the family's em, lines take their direction from their text", () => {
    const ass = buildAss(params(), oneCue("مرحبا بالعالم. Hello שלום עולם!\nनमस्ते, สวัสดี"), VIDEO);
    // 14.4 px (normale at 240 px) on Inter, whose line is 1.43 em; Noto Sans Arabic's is 2.169 em.
    expect(dialogueText(dialogues(ass)[0]!)).toBe(
      "{\\fnNoto Sans Arabic\\fs21.84}مرحبا بالعالم{\\fnInter\\fs14.4}. Hello {\\fnNoto Sans Hebrew\\fs13.7}שלום עולם{\\fnInter\\fs14.4}!\\N" +
        "{\\fnNoto Sans Devanagari\\fs19.19}नमस्ते{\\fnInter\\fs14.4}, {\\fnNoto Sans Thai\\fs15.22}สวัสดี{\\fnInter\\fs14.4}",
    );
    expect(styleField(ass, "Encoding")).toBe("-1");
    // Joiners stay inside a run (Persian می‌خواهم, Devanagari half forms) and go elsewhere.
    const joined = dialogueText(
      dialogues(buildAss(params({ fontId: "anton" }), oneCue("می\u200Cخواهم a\u200Db"), VIDEO))[0]!,
    );
    expect(joined).toBe("{\\fnNoto Sans Arabic\\fs18.02}می\u200Cخواهم{\\fnAnton\\fs14.4} ab");
    // Karaoke: each word carries its own switch inside the spoken word's tags.
    const karaoke = dialogues(buildAss(params({ karaokeMode: "couleur" }), oneCue("שלום עולם"), VIDEO)).map(
      dialogueText,
    );
    expect(karaoke[1]).toBe(
      "{\\fnNoto Sans Hebrew\\fs13.7}שלום{\\fnInter\\fs14.4} {\\1c&H66D1FF&}{\\fnNoto Sans Hebrew\\fs13.7}עולם{\\fnInter\\fs14.4}{\\r}",
    );
  });

  it("switches emoji to Noto Emoji at the family's em, each sequence whole; ©, ™ and arrows stay in the family", () => {
    const text = (cue: string) => dialogueText(dialogues(buildAss(params(), oneCue(cue), VIDEO))[0]!);
    const emoji = "{\\fnNoto Emoji\\fs11.8}"; // 14.4 px x 1.172 / 1.43: Inter's em
    const back = "{\\fnInter\\fs14.4}";
    expect(text("On y va 🔥🔥 !")).toBe(`On y va ${emoji}🔥🔥${back} !`);
    // A skin tone, a ZWJ family, a flag, a keycap and a variation selector stay with their emoji.
    expect(text("Bravo 👍🏽 👩\u200D👩\u200D👧 🇫🇷 1\uFE0F\u20E3 ❤\uFE0F")).toBe(
      `Bravo ${emoji}👍🏽 👩\u200D👩\u200D👧 🇫🇷 1\uFE0F\u20E3 ❤\uFE0F${back}`,
    );
    // The family draws these; a variation selector after one has nothing to select and goes.
    expect(text("© 2026 ™ ↔ #1 ©\uFE0F")).toBe("© 2026 ™ ↔ #1 ©");
  });

  it("switches Japanese, Chinese and Korean runs to their face; Han takes Japanese forms only where the captions hold kana", () => {
    const texts = (cues: Cue[]) => dialogues(buildAss(params(), cues, VIDEO)).map(dialogueText);
    const jp = "{\\fnNoto Sans JP Thin\\fs14.58}";
    const sc = "{\\fnNoto Sans SC Thin\\fs14.58}";
    const kr = "{\\fnNoto Sans KR Thin\\fs14.58}";
    // CJK punctuation is shared: a Chinese sentence with 。、「」 stays Chinese.
    expect(texts(oneCue("你好，「世界」、再见。"))[0]).toBe(`${sc}你好，「世界」、再见。{\\fnInter\\fs14.4}`);
    const back = "{\\fnInter\\fs14.4}";
    // Kana in one cue makes the other cue's kanji Japanese too; full-width punctuation stays in the run.
    expect(
      texts([
        { start: 0, end: 1, text: "東京へ「ようこそ」！" },
        { start: 1, end: 2, text: "Tokyo 東京 2026" },
      ]),
    ).toEqual([`${jp}東京へ「ようこそ」！${back}`, `Tokyo ${jp}東京${back} 2026`]);
    expect(texts([{ start: 0, end: 1, text: "你好，世界" }])).toEqual([`${sc}你好，世界${back}`]);
    // Hangul and Han are separate runs: the Korean face has no Han.
    expect(texts([{ start: 0, end: 1, text: "한국어 자막 漢字" }])).toEqual([
      `${kr}한국어 자막${back} ${sc}漢字${back}`,
    ]);
  });

  it.each(["couleur", "taille", "halo"] as const)(
    "karaoke %s: one event per word, tiling the cue, the spoken word tagged",
    (karaokeMode) => {
      const cues: Cue[] = [
        { start: 0, end: 2, text: "Été œuvre\n5 €" },
        { start: 3, end: 4, text: "{x}", words: [{ text: "{x}", start: 3.2, end: 3.9 }] },
      ];
      const events = dialogues(buildAss(params({ karaokeMode, highlightColor: "#FFD166" }), cues, VIDEO));
      expect(events).toHaveLength(5);
      expect(events.map((e) => e.split(",").slice(1, 3).join("-"))).toEqual([
        "0:00:00.00-0:00:00.60",
        "0:00:00.60-0:00:01.60",
        "0:00:01.60-0:00:01.80",
        "0:00:01.80-0:00:02.00",
        "0:00:03.00-0:00:04.00",
      ]);
      const tag = { couleur: "\\1c&H66D1FF&", taille: "\\fscx125\\fscy125", halo: "\\3c&H66D1FF&" }[karaokeMode];
      const texts = events.map(dialogueText);
      texts.forEach((text) => expect(text.split(tag).length - 1).toBe(1));
      expect(texts[0]).toMatch(/^\{[^}]*\}Été\{\\r\} œuvre\\N5 €$/);
      expect(texts[1]).toMatch(/^Été \{[^}]*\}œuvre\{\\r\}\\N5 €$/);
      expect(texts[3]).toMatch(/^Été œuvre\\N5 \{[^}]*\}€\{\\r\}$/);
      expect(texts[4]).toMatch(/^\{[^}]*\}\\\{x\\\}\{\\r\}$/);
    },
  );

  it("karaoke in Chinese and Japanese: one event per word although no space separates them", async () => {
    // An SRT line: its words found by the word segmenter, punctuation kept with the word before.
    const [srtCue] = await cuesFromSrt("1\n00:00:00,000 --> 00:00:02,000\n你好，世界！\n");
    expect(srtCue!.words!.map((w) => w.text)).toEqual(["你好，", "世界！"]);
    const sc = (text: string) => `{\\fnNoto Sans SC Thin\\fs14.58}${text}{\\fnInter\\fs14.4}`;
    expect(dialogues(buildAss(params({ karaokeMode: "couleur" }), [srtCue!], VIDEO)).map(dialogueText)).toEqual([
      `{\\1c&H66D1FF&}${sc("你好，")}{\\r}${sc("世界！")}`,
      `${sc("你好，")}{\\1c&H66D1FF&}${sc("世界！")}{\\r}`,
    ]);
    // A transcript's words, joined without spaces, each highlighted in its own time.
    const cues = cuesFromWords(
      [
        { text: "東京", start: 0, end: 0.5 },
        { text: "へ", start: 0.5, end: 0.7 },
        { text: "ようこそ", start: 0.7, end: 1.4 },
      ],
      4,
    );
    expect(cues[0]!.text).toBe("東京へようこそ");
    const events = dialogues(buildAss(params({ karaokeMode: "taille" }), cues, VIDEO));
    expect(events.map((e) => e.split(",").slice(1, 3).join("-"))).toEqual([
      "0:00:00.00-0:00:00.50",
      "0:00:00.50-0:00:00.70",
      "0:00:00.70-0:00:01.40",
    ]);
    expect(dialogueText(events[1]!)).toBe(
      "{\\fnNoto Sans JP Thin\\fs14.58}東京{\\fnInter\\fs14.4}{\\fscx125\\fscy125}{\\fnNoto Sans JP Thin\\fs14.58}へ{\\fnInter\\fs14.4}{\\r}{\\fnNoto Sans JP Thin\\fs14.58}ようこそ{\\fnInter\\fs14.4}",
    );
  });

  it("breaks long Chinese and Japanese lines between characters, about equally, never before 。 or after 「", async () => {
    const LONG_ZH = "这是一个很长的中文句子用来测试字幕是否能够自动换行而不是超出画面的边缘我们希望它能正确显示。";
    const lines = (text: string, over: Partial<SubtitleStyleParams> = {}) =>
      dialogueText(dialogues(buildAss(params(over), oneCue(text), VIDEO))[0]!)
        .replace(/\{[^}]*\}/g, "")
        .split("\\N");
    // 320 px wide, grande on Inter: about 16 full-width characters fit between the margins.
    const zh = lines(LONG_ZH, { size: "grande" });
    expect(zh.length).toBeGreaterThanOrEqual(3);
    expect(zh.join("")).toBe(LONG_ZH);
    expect(Math.max(...zh.map((l) => [...l].length)) - Math.min(...zh.map((l) => [...l].length))).toBeLessThanOrEqual(
      3,
    );
    const ja = lines("日本語の字幕は、「とても長い」文でも画面の外に出ないように改行されます。", { size: "grande" });
    expect(ja.length).toBeGreaterThan(1);
    for (const line of ja.slice(1)) expect(line).not.toMatch(/^[、。」）ゃゅょっー]/u);
    for (const line of ja.slice(0, -1)) expect(line).not.toMatch(/[「（]$/u);
    // Short lines, a line break of the cue and Latin text (which libass wraps at its spaces) stay.
    expect(lines("短句。\n你好")).toEqual(["短句。", "你好"]);
    expect(lines("Only latin words that are quite long and wrapped by libass at their spaces")).toHaveLength(1);
    // Karaoke: every event of the cue breaks at the same places.
    const [cue] = await cuesFromSrt(`1\n00:00:00,000 --> 00:00:04,000\n${LONG_ZH}\n`);
    const events = dialogues(buildAss(params({ karaokeMode: "couleur", size: "grande" }), [cue!], VIDEO)).map((e) =>
      dialogueText(e).replace(/\{[^}]*\}/g, ""),
    );
    expect(events.length).toBeGreaterThan(3);
    for (const event of events) expect(event).toBe(zh.join("\\N"));
  });

  it("karaoke none: the cue once, without tags", () => {
    const events = dialogues(buildAss(params({ karaokeMode: "none" }), oneCue("Été œuvre 5 €"), VIDEO));
    expect(events).toEqual(["Dialogue: 0,0:00:00.00,0:00:02.00,Caption,,0,0,0,,Été œuvre 5 €"]);
  });
});

describe("fonts", () => {
  it.each(fontIds)("%s: every shipped face's family name is the one the ASS style uses", async (fontId) => {
    const font = subtitleFonts[fontId];
    const files = fontFiles(font);
    expect(files).toHaveLength(1 + font.subsets.length);
    for (const file of files) {
      const bytes = await loadFont(env.FONTS, file);
      expect(bytes.byteLength, file).toBeGreaterThan(2_000);
      expect(new TextDecoder().decode(bytes.subarray(0, 4)), file).toBe("\u0000\u0001\u0000\u0000"); // TrueType sfnt
      expect(fontFamilyName(bytes), file).toBe(font.family);
    }
  });

  it.each(scripts)("%s: the script face's family and line height are the ones the ASS uses", async (script) => {
    const face = scriptFaces[script];
    const bytes = await loadFont(env.FONTS, face.file);
    expect(fontFamilyName(bytes)).toBe(face.family);
    expect(lineHeightEm(bytes)).toBeCloseTo(face.lineHeightEm, 3);
    for (const fontId of fontIds) {
      const family = subtitleFonts[fontId];
      expect(lineHeightEm(await loadFont(env.FONTS, family.file)), fontId).toBeCloseTo(family.lineHeightEm, 3);
    }
  });

  it("refuses unknown font files", async () => {
    await expect(loadFont(env.FONTS, "../secrets.ttf")).rejects.toThrow(/unknown font file/);
  });
});

describe("buildSubtitlesCommand", () => {
  const input = (over: Partial<MediaInput["probe"]> = {}, sizeBytes = 1000): MediaInput => ({
    name: "in0.mp4",
    filename: "Mon clip.mov",
    sizeBytes,
    probe: {
      kind: "video",
      container: "mov",
      mimeType: "video/quicktime",
      durationMs: 2000,
      hasAudio: true,
      hasVideo: true,
      audioCodec: "aac",
      width: 1280,
      height: 720,
      ...over,
    },
  });

  it("burns subs.ass with the chosen font, x264 without lookahead, audio copied", () => {
    const ass = buildAss(params({ fontId: "anton" }), oneCue("Été"), VIDEO);
    const command = buildSubtitlesCommand(params({ fontId: "anton" }), [input()], ass);
    expect(command.args.join(" ")).toBe(
      "-hide_banner -y -i in0.mp4 -map 0:V:0 -map 0:a:0? -vf subtitles=filename=subs.ass:fontsdir=fonts,scale=trunc(iw/2)*2:trunc(ih/2)*2 -c:v libx264 -preset veryfast " +
        "-x264-params rc-lookahead=0:bframes=0 -crf 23 -pix_fmt yuv420p -fps_mode:v vfr -enc_time_base:v -1 -c:a copy -movflags +faststart -f mp4 out.mp4",
    );
    expect(new TextDecoder().decode(command.files["subs.ass"])).toBe(ass);
    expect(command).toMatchObject({
      fonts: ["Anton-Regular.ttf", "Anton-Regular.latin-ext.ttf", "Anton-Regular.vietnamese.ttf"],
      outputName: "out.mp4",
      resultFilename: "Mon_clip-subtitles.mp4",
      contentType: "video/mp4",
      wasmCapable: true,
    });
    expect(command.wasmHeapBytes).toBe(55 * MiB);
  });

  it("adds the face of each script the captions switch to, and only those", () => {
    const fonts = (text: string) =>
      buildSubtitlesCommand(
        params({ fontId: "poppins" }),
        [input()],
        buildAss(params({ fontId: "poppins" }), oneCue(text), VIDEO),
      ).fonts;
    expect(fonts("Été")).toEqual(["Poppins-Regular.ttf", "Poppins-Regular.latin-ext.ttf"]);
    expect(fonts("سلام שלום")).toEqual([
      "Poppins-Regular.ttf",
      "Poppins-Regular.latin-ext.ttf",
      "NotoSansArabic-Regular.ttf",
      "NotoSansHebrew-Regular.ttf",
    ]);
    expect(fonts("नमस्ते สวัสดี")).toEqual([
      "Poppins-Regular.ttf",
      "Poppins-Regular.latin-ext.ttf",
      "NotoSansDevanagari-Regular.ttf",
      "NotoSansThai-Regular.ttf",
    ]);
    expect(fonts("Top 🔥")).toEqual(["Poppins-Regular.ttf", "Poppins-Regular.latin-ext.ttf", "NotoEmoji-Regular.ttf"]);
    expect(fonts("© 2026")).toEqual(["Poppins-Regular.ttf", "Poppins-Regular.latin-ext.ttf"]);
  });

  it("ships a CJK face only for captions that need it, and counts the faces in the heap estimate", () => {
    const command = (text: string) =>
      buildSubtitlesCommand(params(), [input()], buildAss(params(), oneCue(text), VIDEO));
    const latin = command("Été");
    expect(latin.wasmHeapBytes).toBe(55 * MiB);
    // Measured at 720p: any script face took the heap from 55.4 to 66.5 MiB.
    expect(command("שלום").wasmHeapBytes).toBe(67 * MiB);
    const cjk = command("こんにちは 你好 안녕");
    expect(cjk.fonts.slice(latin.fonts.length)).toEqual(["NotoSansJP-Regular.ttf", "NotoSansKR-Regular.ttf"]);
    expect(cjk.wasmHeapBytes).toBe(72 * MiB);
  });

  it("re-encodes audio MP4 cannot carry, and maps no audio when there is none", () => {
    expect(buildSubtitlesCommand(params(), [input({ audioCodec: "opus" })], "").args.join(" ")).toContain(
      "-c:a aac -b:a 192k",
    );
    expect(buildSubtitlesCommand(params(), [input({ audioCodec: "pcm_s16le" })], "").args.join(" ")).toContain(
      "-c:a aac",
    );
    const silent = buildSubtitlesCommand(params(), [input({ hasAudio: false, audioCodec: undefined })], "").args;
    expect(silent).not.toContain("-c:a");
  });

  it("estimates more heap above 720p", () => {
    expect(buildSubtitlesCommand(params(), [input({ width: 1920, height: 1080 }, 0)], "").wasmHeapBytes).toBe(
      100 * MiB,
    );
  });
});

// ---------------------------------------------------------------------------------------
// Burn-ins on ffmpeg.wasm

interface Frame {
  rgb: Uint8Array;
  log: string;
  peakWasmBytes: number;
  burnMs: number;
}

type Pixel = [number, number, number];
type Predicate = (p: Pixel) => boolean;

const isWhite: Predicate = ([r, g, b]) => r > 200 && g > 200 && b > 200;
const isLit: Predicate = ([r, g, b]) => r + g + b > 240;
/** #FFD166 after yuv420p (chroma is shared by 2x2 pixels, so thin strokes drift a little). */
const isYellow: Predicate = ([r, g, b]) => r > 150 && g > 100 && b < r - 70;
const isBlue: Predicate = ([r, g, b]) => b > 150 && r < 80 && g < 80;

function pixels(frame: Frame, predicate: Predicate): { x: number; y: number }[] {
  const found: { x: number; y: number }[] = [];
  for (let y = 0; y < HEIGHT; y++) {
    for (let x = 0; x < WIDTH; x++) {
      const i = (y * WIDTH + x) * 3;
      if (predicate([frame.rgb[i]!, frame.rgb[i + 1]!, frame.rgb[i + 2]!])) found.push({ x, y });
    }
  }
  return found;
}

function bounds(points: { x: number; y: number }[]) {
  return {
    top: Math.min(...points.map((p) => p.y)),
    bottom: Math.max(...points.map((p) => p.y)),
    left: Math.min(...points.map((p) => p.x)),
    right: Math.max(...points.map((p) => p.x)),
  };
}

/** Pixels that differ between two masks. */
function maskDifference(a: Frame, b: Frame, predicate: Predicate): number {
  const key = (p: { x: number; y: number }) => p.y * WIDTH + p.x;
  const setA = new Set(pixels(a, predicate).map(key));
  const setB = new Set(pixels(b, predicate).map(key));
  let differ = 0;
  for (const k of setA) if (!setB.has(k)) differ++;
  for (const k of setB) if (!setA.has(k)) differ++;
  return differ;
}

const srtOf = (text: string) => `1\n00:00:00,000 --> 00:00:02,000\n${text}\n`;
const SAMPLE = srtOf("Été œuvre 5 €");

describe("burn-in on ffmpeg.wasm (320x240 black, 2 s)", () => {
  let background: Uint8Array;

  beforeAll(async () => {
    await createFfmpegCore(); // pays the 32 MB wasm transfer under the hook timeout
    const run = await runFfmpegWasm({
      args: [
        "-hide_banner",
        "-f",
        "lavfi",
        "-i",
        `color=c=black:s=${WIDTH}x${HEIGHT}:r=25:d=2`,
        "-f",
        "lavfi",
        "-i",
        "anullsrc=r=44100:cl=mono",
        "-t",
        "2",
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        "-pix_fmt",
        "yuv420p",
        "-c:a",
        "aac",
        "-shortest",
        "bg.mp4",
      ],
      inputs: {},
      outputs: ["bg.mp4"],
    });
    background = run.outputs["bg.mp4"]!;
  });

  /** Burns `srt` with these options and returns the frame at `at` seconds as raw RGB. */
  async function burn(over: Partial<SubtitleStyleParams>, srt = SAMPLE, at = 1): Promise<Frame> {
    const p = params(over);
    const input: MediaInput = {
      name: "in0.mp4",
      filename: "clip.mp4",
      sizeBytes: background.byteLength,
      probe: {
        kind: "video",
        container: "mp4",
        mimeType: "video/mp4",
        durationMs: 2000,
        hasAudio: true,
        hasVideo: true,
        audioCodec: "aac",
        width: WIDTH,
        height: HEIGHT,
      },
    };
    const command = buildSubtitlesCommand(p, [input], buildAss(p, await cuesFromSrt(srt), VIDEO));
    const inputs: Record<string, Uint8Array> = { [input.name]: background.slice(), ...command.files };
    for (const font of command.fonts) inputs[`fonts/${font}`] = await loadFont(env.FONTS, font);
    const started = Date.now();
    const burned = await runFfmpegWasm({ args: command.args, inputs, outputs: [command.outputName] });
    const burnMs = Date.now() - started;
    const frame = await runFfmpegWasm({
      args: [
        "-hide_banner",
        "-ss",
        String(at),
        "-i",
        "video.mp4",
        "-frames:v",
        "1",
        "-f",
        "rawvideo",
        "-pix_fmt",
        "rgb24",
        "frame.rgb",
      ],
      inputs: { "video.mp4": burned.outputs[command.outputName]! },
      outputs: ["frame.rgb"],
    });
    const rgb = frame.outputs["frame.rgb"]!;
    expect(rgb.byteLength).toBe(WIDTH * HEIGHT * 3);
    return { rgb, log: burned.log, peakWasmBytes: burned.peakWasmBytes, burnMs };
  }

  it("draws the caption in `color` around `position`, nowhere else; the MP4 keeps its audio", async () => {
    const low = await burn({ position: 82 });
    const lowWhite = pixels(low, isWhite);
    expect(lowWhite.length).toBeGreaterThan(20);
    expect(pixels(low, isLit).every((p) => p.y > HEIGHT * 0.7 && p.y < HEIGHT * 0.95)).toBe(true);
    expect(lowWhite.every((p) => p.y > HEIGHT * 0.7 && p.y < HEIGHT * 0.95)).toBe(true);
    const lowBox = bounds(lowWhite);
    expect((lowBox.top + lowBox.bottom) / 2).toBeCloseTo(0.82 * HEIGHT, -1.2); // within ~8 px
    expect(Math.abs((lowBox.left + lowBox.right) / 2 - WIDTH / 2)).toBeLessThan(8); // centred
    expect(low.log).toMatch(/Stream #0:1 -> #0:1 \(copy\)/);
    expect(low.log).toContain("fontselect: (Inter, 400, 0) -> Inter-Regular");

    const high = await burn({ position: 10 });
    const highWhite = pixels(high, isWhite);
    expect(highWhite.length).toBeGreaterThan(20);
    expect(pixels(high, isLit).every((p) => p.y < HEIGHT * 0.25)).toBe(true);
    expect((bounds(highWhite).top + bounds(highWhite).bottom) / 2).toBeCloseTo(0.1 * HEIGHT, -1.2);

    const red = await burn({ color: "#FF0000", size: "grande" });
    expect(pixels(red, isWhite)).toHaveLength(0);
    expect(pixels(red, ([r, g, b]) => r > 150 && g < 80 && b < 80).length).toBeGreaterThan(20);

    console.info(
      `subtitles burn-in, 320x240 2 s on ffmpeg.wasm: ${low.burnMs} ms, peak wasm heap ${(low.peakWasmBytes / MiB).toFixed(1)} MiB`,
    );
    expect(low.peakWasmBytes).toBeLessThan(64 * MiB);
  });

  it("burns into a video of odd width and height (4:4:4, 321x241), written 320x240 with the caption on it", async () => {
    const odd = await runFfmpegWasm({
      args: [
        "-hide_banner",
        "-f",
        "lavfi",
        "-i",
        "color=c=black:s=321x241:r=25:d=2",
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        "-pix_fmt",
        "yuv444p",
        "odd.mp4",
      ],
      inputs: {},
      outputs: ["odd.mp4"],
    });
    const p = params({ position: 50 });
    const input: MediaInput = {
      name: "in0.mp4",
      filename: "odd.mp4",
      sizeBytes: odd.outputs["odd.mp4"]!.byteLength,
      probe: {
        kind: "video",
        container: "mp4",
        mimeType: "video/mp4",
        durationMs: 2000,
        hasAudio: false,
        hasVideo: true,
        width: 321,
        height: 241,
      },
    };
    const command = buildSubtitlesCommand(
      p,
      [input],
      buildAss(p, await cuesFromSrt(SAMPLE), { width: 321, height: 241 }),
    );
    const inputs: Record<string, Uint8Array> = { [input.name]: odd.outputs["odd.mp4"]!, ...command.files };
    for (const font of command.fonts) inputs[`fonts/${font}`] = await loadFont(env.FONTS, font);
    const burned = await runFfmpegWasm({ args: command.args, inputs, outputs: [command.outputName] });
    expect(burned.exitCode).toBe(0);
    const frame = await runFfmpegWasm({
      args: [
        "-hide_banner",
        "-ss",
        "1",
        "-i",
        "video.mp4",
        "-frames:v",
        "1",
        "-f",
        "rawvideo",
        "-pix_fmt",
        "rgb24",
        "frame.rgb",
      ],
      inputs: { "video.mp4": burned.outputs[command.outputName]! },
      outputs: ["frame.rgb"],
    });
    expect(frame.log).toMatch(/Stream #0:0.*: Video: h264 \(High\).*yuv420p.*, 320x240/);
    const shown: Frame = { rgb: frame.outputs["frame.rgb"]!, log: "", peakWasmBytes: 0, burnMs: 0 };
    expect(shown.rgb.byteLength).toBe(WIDTH * HEIGHT * 3);
    const text = bounds(pixels(shown, isWhite));
    expect(pixels(shown, isWhite).length).toBeGreaterThan(20);
    expect(Math.abs((text.top + text.bottom) / 2 - HEIGHT / 2)).toBeLessThan(12);
  });

  it("impact draws a box of effectColor around the text", async () => {
    const frame = await burn({ style: "impact", effectColor: "#0000FF", boxOpacity: 100 });
    const box = bounds(pixels(frame, isBlue));
    const text = bounds(pixels(frame, isWhite));
    expect(pixels(frame, isBlue).length).toBeGreaterThan(500);
    expect(box.left).toBeLessThan(text.left);
    expect(box.right).toBeGreaterThan(text.right);
    expect(box.top).toBeLessThan(text.top);
    expect(box.bottom).toBeGreaterThan(text.bottom);
    // A box, not an outline: the area between the lines of glyphs is filled.
    const filled = pixels(frame, isBlue).length / ((box.right - box.left + 1) * (box.bottom - box.top + 1));
    expect(filled).toBeGreaterThan(0.6);

    const translucent = await burn({ style: "impact", effectColor: "#0000FF", boxOpacity: 30 });
    expect(pixels(translucent, isBlue)).toHaveLength(0);
    expect(pixels(translucent, ([r, g, b]) => b > 40 && b > r + 30 && b > g + 30).length).toBeGreaterThan(500);
  });

  it("contour draws an outline of effectColor; classique a shadow", async () => {
    const contour = await burn({ style: "contour", effectColor: "#FF0000", contourThickness: 100, size: "grande" });
    expect(pixels(contour, ([r, g, b]) => r > 120 && g < 90 && b < 90).length).toBeGreaterThan(100);
    const shadow = await burn({ style: "classique", effectColor: "#00FF00", shadowIntensity: 100, size: "grande" });
    const green = bounds(pixels(shadow, ([r, g, b]) => g > 120 && r < 100 && b < 100));
    const white = bounds(pixels(shadow, isWhite));
    expect(green.right).toBeGreaterThan(white.right); // offset down and right
    expect(green.bottom).toBeGreaterThan(white.bottom);
  });

  it("renders each of the six fonts, each differently, with every glyph of the French sample", async () => {
    const frames = new Map<FontId, Frame>();
    for (const fontId of fontIds) {
      const frame = await burn({ fontId, size: "grande" });
      expect(pixels(frame, isLit).length, fontId).toBeGreaterThan(100);
      expect(frame.log, fontId).toContain(`fontselect: (${subtitleFonts[fontId].family}, 400, 0) ->`);
      expect(frame.log, fontId).not.toMatch(/Glyph 0x[0-9A-F]+ not found/);
      frames.set(fontId, frame);
    }
    for (const [i, a] of fontIds.entries()) {
      for (const b of fontIds.slice(i + 1)) {
        expect(maskDifference(frames.get(a)!, frames.get(b)!, isLit), `${a} vs ${b}`).toBeGreaterThan(100);
      }
    }
  });

  it("renders Latin Extended, Cyrillic, Greek and Vietnamese from the family's other faces, where it has them", async () => {
    // One letter per subset, in none of the `latin` faces; each must be drawn, not the box a
    // missing glyph gets (the one a private-use code point, in no face, is drawn with).
    const letters: Record<ScriptSubset, string> = {
      "latin-ext": "Ł",
      cyrillic: "Ж",
      "cyrillic-ext": "Ґ",
      greek: "Ω",
      "greek-ext": "ἀ",
      vietnamese: "ệ",
    };
    for (const fontId of fontIds) {
      const missing = await burn({ fontId, size: "grande" }, srtOf("\uE000\uE000\uE000"));
      expect(pixels(missing, isLit).length, `${fontId}: the missing-glyph box`).toBeGreaterThan(30);
      for (const subset of subtitleFonts[fontId].subsets) {
        const letter = letters[subset];
        const drawn = await burn({ fontId, size: "grande" }, srtOf(letter.repeat(3)));
        expect(maskDifference(drawn, missing, isLit), `${fontId} ${subset} ${letter}`).toBeGreaterThan(60);
      }
    }
  });

  it("renders Arabic, Hebrew, Devanagari and Thai with their faces: shaped, right to left where the script is", async () => {
    const missing = await burn({ size: "grande" }, srtOf("\uE000\uE000\uE000"));
    for (const [script, text] of [
      ["arabic", "سلام"],
      ["hebrew", "שלום"],
      ["devanagari", "क्षत्रिय"],
      ["thai", "สวัสดี"],
    ] as const) {
      const drawn = await burn({ size: "grande" }, srtOf(text));
      expect(maskDifference(drawn, missing, isLit), script).toBeGreaterThan(60);
      expect(drawn.log, script).toContain(`fontselect: (${scriptFaces[script].family}, 400, 0) ->`);
      expect(drawn.log, script).not.toMatch(/Glyph 0x[0-9A-F]+ not found/);
    }
    // Joining: the same three letters, once joined and once kept apart by zero-width non-joiners.
    const joined = await burn({ size: "grande" }, srtOf("ببب"));
    const apart = await burn({ size: "grande" }, srtOf("ب\u200Cب\u200Cب"));
    expect(maskDifference(joined, apart, isLit)).toBeGreaterThan(40);
    // Direction: a line's trailing bars ("|" reaches below the baseline, which none of these
    // letters does, so the lowest lit pixels are the bars') sit at its left end in Hebrew, at its
    // right end in Latin.
    const barsSide = (frame: Frame) => {
      const lit = pixels(frame, isLit);
      const line = bounds(lit);
      const bars = lit.filter((p) => p.y >= line.bottom - 1);
      const x = bars.reduce((sum, p) => sum + p.x, 0) / bars.length;
      return x < (line.left + line.right) / 2 ? "left" : "right";
    };
    expect(barsSide(await burn({ size: "grande" }, srtOf("שלום||")))).toBe("left");
    expect(barsSide(await burn({ size: "grande" }, srtOf("Shalom||")))).toBe("right");
  });

  it("renders Japanese, Chinese and Korean with their faces", async () => {
    const missing = await burn({ size: "grande" }, srtOf("\uE000\uE000\uE000"));
    for (const [script, text] of [
      ["japanese", "日本語です"],
      ["chinese", "你好世界"],
      ["korean", "안녕하세요"],
    ] as const) {
      const drawn = await burn({ size: "grande" }, srtOf(text));
      expect(maskDifference(drawn, missing, isLit), script).toBeGreaterThan(60);
      expect(drawn.log, script).toContain(`fontselect: (${scriptFaces[script].family}, 400, 0) ->`);
      expect(drawn.log, script).not.toMatch(/Glyph 0x[0-9A-F]+ not found/);
    }
  });

  it("renders emoji with Noto Emoji, past U+FFFF too, in the caption's colour", async () => {
    const missing = await burn({ size: "grande" }, srtOf("\uE000\uE000\uE000"));
    const emoji = await burn({ size: "grande", color: "#FFD166" }, srtOf("🔥😀👍🏽 ❤\uFE0F ⭐"));
    expect(maskDifference(emoji, missing, isLit)).toBeGreaterThan(60);
    expect(emoji.log).toContain(`fontselect: (${scriptFaces.emoji.family}, 400, 0) ->`);
    expect(emoji.log).not.toMatch(/Glyph 0x[0-9A-F]+ not found/);
    expect(pixels(emoji, isYellow).length).toBeGreaterThan(40);
  });

  it("keeps a long Chinese line inside the frame, on several lines", async () => {
    const frame = await burn(
      { size: "grande" },
      srtOf("这是一个很长的中文句子用来测试字幕是否能够自动换行而不是超出画面的边缘我们希望它能正确显示。"),
    );
    const lit = bounds(pixels(frame, isLit));
    expect(lit.left).toBeGreaterThan(4);
    expect(lit.right).toBeLessThan(WIDTH - 5);
    const oneLine = bounds(pixels(await burn({ size: "grande" }, srtOf("这是一个")), isLit));
    expect(lit.bottom - lit.top).toBeGreaterThan(2.5 * (oneLine.bottom - oneLine.top));
  });

  it("renders accents: Été differs from Ete, its É reaches above the E", async () => {
    const accented = await burn({ size: "grande" }, srtOf("Été"));
    const plain = await burn({ size: "grande" }, srtOf("Ete"));
    expect(maskDifference(accented, plain, isLit)).toBeGreaterThan(6); // two small accents
    expect(bounds(pixels(accented, isLit)).top).toBeLessThan(bounds(pixels(plain, isLit)).top - 1);
  });

  it("shows escaped override tags as text instead of applying them", async () => {
    const injected = await burn({}, srtOf("{\\pos(10,10)\\fs80}x"));
    const plain = await burn({}, srtOf("x"));
    const lit = bounds(pixels(injected, isLit));
    expect(lit.top).toBeGreaterThan(HEIGHT / 2); // not moved to (10,10)
    expect(lit.right - lit.left).toBeGreaterThan(
      3 * (bounds(pixels(plain, isLit)).right - bounds(pixels(plain, isLit)).left),
    );
  });

  it("karaoke couleur: the spoken word is in highlightColor, the others in color", async () => {
    // "Été œuvre 5 €" over 0-2 s: Été 0-0.6 s, œuvre 0.6-1.6 s.
    const first = await burn({ karaokeMode: "couleur", size: "grande" }, SAMPLE, 0.3);
    const second = await burn({ karaokeMode: "couleur", size: "grande" }, SAMPLE, 1.1);
    const yellowFirst = pixels(first, isYellow);
    const yellowSecond = pixels(second, isYellow);
    expect(yellowFirst.length).toBeGreaterThan(20);
    expect(yellowSecond.length).toBeGreaterThan(20);
    expect(bounds(yellowFirst).right).toBeLessThan(bounds(yellowSecond).left);
    expect(pixels(second, isWhite).some((p) => p.x < bounds(yellowSecond).left)).toBe(true); // Été back in white
    const none = await burn({ karaokeMode: "none", size: "grande" }, SAMPLE, 1.1);
    expect(pixels(none, isYellow)).toHaveLength(0);
  });

  it("karaoke taille and halo change the spoken word only", async () => {
    const plain = await burn({ size: "grande" }, SAMPLE, 1.1);
    const taille = await burn({ karaokeMode: "taille", size: "grande" }, SAMPLE, 1.1);
    const width = (frame: Frame) => bounds(pixels(frame, isLit)).right - bounds(pixels(frame, isLit)).left;
    expect(width(taille)).toBeGreaterThan(width(plain) + 3); // œuvre at 125 % widens the line
    const halo = await burn({ karaokeMode: "halo", size: "grande" }, SAMPLE, 1.1);
    const glow = pixels(halo, isYellow);
    expect(glow.length).toBeGreaterThan(50);
    const word = bounds(glow);
    // The glow surrounds œuvre, the second word: none left of the middle of the caption's left half.
    expect(word.left).toBeGreaterThan(bounds(pixels(plain, isLit)).left + 10);
  });
});
