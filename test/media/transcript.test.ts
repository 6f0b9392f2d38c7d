import { parseText } from "media-captions";
import { describe, expect, it } from "vitest";
import { transcriptToSrt, transcriptToText, type Transcript } from "../../src/media/transcript";
import { guessTextLanguage } from "../../src/media/text-language";
import { parseBackendJobId } from "../../src/backend-client/stage-ids";
import { cuesFromWords } from "../../src/media/captions";
import { joinWords } from "../../src/media/words";

const words = (spec: [string, number, number][]) => spec.map(([text, start, end]) => ({ text, start, end }));

const unpunctuated: Transcript = {
  language: "en",
  text: "",
  words: words([
    ["the", 0.1, 0.3],
    ["quick", 0.3, 0.6],
    ["brown", 0.6, 0.9],
    ["fox", 0.9, 1.2],
    ["jumps", 2.0, 2.3],
    ["over", 2.3, 2.5],
    ["the", 2.5, 2.6],
    ["dog", 2.6, 3.0],
  ]),
};

describe("transcript files", () => {
  it("cuts phrases at pauses when the engine gives no punctuation, as valid SRT", async () => {
    const srt = transcriptToSrt(unpunctuated, "phrase");
    const { cues, errors } = await parseText(srt, { type: "srt", strict: true });
    expect(errors).toEqual([]);
    expect(cues.map((c) => c.text)).toEqual(["the quick brown fox", "jumps over the dog"]);
    expect(cues[0].startTime).toBeCloseTo(0.1, 3);
    expect(cues[1].endTime).toBeCloseTo(3.0, 3);
  });

  it("cuts phrases at sentence ends and keeps text as recognised", async () => {
    const punctuated: Transcript = {
      language: "fr",
      text: "Bonjour. Ça va ?",
      words: words([
        ["Bonjour.", 0, 0.5],
        ["Ça", 0.6, 0.8],
        ["va ?", 0.8, 1.1],
      ]),
    };
    const { cues } = await parseText(transcriptToSrt(punctuated, "phrase"), { type: "srt", strict: true });
    expect(cues.map((c) => c.text)).toEqual(["Bonjour.", "Ça va ?"]);
    expect(transcriptToText(punctuated)).toBe("Bonjour. Ça va ?\n");
  });

  it("marks every cue and every line of a test key's transcript, the timing untouched", async () => {
    for (const mode of ["phrase", "mot"] as const) {
      const plain = (await parseText(transcriptToSrt(unpunctuated, mode), { type: "srt", strict: true })).cues;
      const { cues, errors } = await parseText(transcriptToSrt(unpunctuated, mode, "TEST"), {
        type: "srt",
        strict: true,
      });
      expect(errors).toEqual([]);
      expect(cues.map((c) => [c.text, c.startTime, c.endTime])).toEqual(
        plain.map((c) => [`[TEST] ${c.text}`, c.startTime, c.endTime]),
      );
    }
    expect(transcriptToText(unpunctuated, "TEST")).toBe("[TEST] the quick brown fox\n[TEST] jumps over the dog\n");
    expect(transcriptToText({ language: "en", text: "a line\nanother", words: [] }, "TEST")).toBe(
      "[TEST] a line\n[TEST] another\n",
    );
  });

  it("gives one cue per complete sentence when the engine punctuates, however long or paused", async () => {
    const long = "This sentence runs on well past fourteen words and seven seconds, with a pause in the middle of it.";
    const spoken = long
      .split(" ")
      .map((text, i): [string, number, number] => [
        text,
        i * 0.6 + (i >= 10 ? 2 : 0),
        i * 0.6 + 0.5 + (i >= 10 ? 2 : 0),
      ]);
    const last = spoken.at(-1)![2];
    const punctuated: Transcript = {
      language: "en",
      text: "",
      words: words([...spoken, ["Short", last + 0.1, last + 0.4], ["one!", last + 0.4, last + 0.8]]),
    };
    const { cues } = await parseText(transcriptToSrt(punctuated, "phrase"), { type: "srt", strict: true });
    expect(cues.map((c) => c.text)).toEqual([long, "Short one!"]);
  });

  it("gives one cue per word in mot mode, monotonic", async () => {
    const { cues } = await parseText(transcriptToSrt(unpunctuated, "mot"), { type: "srt", strict: true });
    expect(cues).toHaveLength(8);
    expect(cues.every((c) => !c.text.includes(" "))).toBe(true);
    for (let i = 1; i < cues.length; i++) expect(cues[i].startTime).toBeGreaterThanOrEqual(cues[i - 1].startTime);
  });

  it("caps a long unbroken phrase at a readable length", async () => {
    const long: Transcript = {
      language: "en",
      text: "",
      words: Array.from({ length: 40 }, (_, i) => ({ text: `w${i}`, start: i * 0.3, end: i * 0.3 + 0.25 })),
    };
    const { cues } = await parseText(transcriptToSrt(long, "phrase"), { type: "srt", strict: true });
    expect(cues.length).toBeGreaterThanOrEqual(3);
    expect(cues.every((c) => c.text.split(" ").length <= 14 && c.endTime - c.startTime <= 7.01)).toBe(true);
  });

  it("writes plain text from words when the engine gives no text", () => {
    expect(transcriptToText(unpunctuated)).toBe("the quick brown fox\njumps over the dog\n");
  });
});

describe("words of scripts written without spaces", () => {
  it("joins Chinese, Japanese and Thai words without spaces, others with one", () => {
    expect(joinWords(["你好", "，", "世界", "。"])).toBe("你好，世界。");
    expect(joinWords(["東京", "は", "2026", "年"])).toBe("東京は2026年");
    expect(joinWords(["สวัสดี", "ครับ"])).toBe("สวัสดีครับ");
    expect(joinWords(["안녕하세요", "여러분"])).toBe("안녕하세요 여러분");
    expect(joinWords(["Hello", "東京", "world"])).toBe("Hello東京world");
    expect(joinWords(["Ça", "va", "?"])).toBe("Ça va ?");
  });

  it("writes Chinese phrases, text and captions without spaces between words, cut after 。", async () => {
    const chinese: Transcript = {
      language: "zh",
      text: "",
      words: words([
        ["你好", 0, 0.4],
        ["世界", 0.4, 0.8],
        ["。", 0.8, 0.9],
        ["欢迎", 1.0, 1.4],
        ["使用", 1.4, 1.8],
        ["！", 1.8, 1.9],
      ]),
    };
    const { cues } = await parseText(transcriptToSrt(chinese, "phrase"), { type: "srt", strict: true });
    expect(cues.map((c) => c.text)).toEqual(["你好世界。", "欢迎使用！"]);
    expect(transcriptToText(chinese)).toBe("你好世界。\n欢迎使用！\n");
    expect(cuesFromWords(chinese.words, 4).map((cue) => cue.text)).toEqual(["你好世界。", "欢迎使用！"]);
  });
});

describe("speech stage helpers", () => {
  it.each([
    ["Bonjour à tous", "fr"],
    ["Le chat est sur la table", "fr"],
    ["Réunion demain.", "fr"],
    ["Bonjour, ceci est un essai de voix.", "fr"],
    ["Où est la gare ? Je voudrais un billet pour Lyon, s'il vous plaît.", "fr"],
    ["12345", "fr"],
    ["The cat is on the table and it is happy", "en"],
    // The audit's texts, all spoken by French Pico before (any accent meant French; no German, Spanish or Italian).
    ["Yesterday we went to the café downtown and the waiter was very friendly with all of us.", "en"],
    ["Please send me your résumé by Friday so that we can review it with the team.", "en"],
    ["Guten Morgen, wie geht es Ihnen heute? Ich möchte gerne einen Kaffee und ein Brötchen bestellen.", "de"],
    ["Buenos días, ¿cómo está usted hoy? Quiero un café con leche, por favor.", "es"],
    ["Buongiorno, come sta oggi? Vorrei un caffè e un cornetto, grazie.", "it"],
  ])("guesses the language of %j among the five the engines speak, French when nothing tells", (text, language) => {
    expect(guessTextLanguage(text)).toBe(language);
  });

  it("maps backend job ids to the job and its stage", () => {
    const id = "job_01M810SVW3EDS9TVQRRK8HGJ5F";
    expect(parseBackendJobId(id)).toEqual({ jobId: id, stage: "ffmpeg" });
    expect(parseBackendJobId(`${id}-transcribe`)).toEqual({ jobId: id, stage: "transcribe" });
    expect(parseBackendJobId(`${id}-nope`)).toBeNull();
  });
});
