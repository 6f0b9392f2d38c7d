import { describe, expect, it } from "vitest";
import { cjkLineBreaks, insertLineBreaks } from "../../src/media/wrap";

const LINE = "这是一个很长的中文句子用来测试字幕是否能够自动换行而不是超出画面的边缘我们希望它能正确显示。";

describe("cjkLineBreaks", () => {
  it("cuts a long line into lines of at most maxEm, about equal, the text unchanged", () => {
    const lines = insertLineBreaks(LINE, cjkLineBreaks(LINE, 16)).split("\n");
    expect(lines.join("")).toBe(LINE);
    expect(lines).toHaveLength(3);
    for (const line of lines) expect([...line].length).toBeLessThanOrEqual(16);
  });

  it("leaves short lines, Latin lines and lines that fit alone; counts each line of the text apart", () => {
    expect(cjkLineBreaks("短句。", 16)).toEqual([]);
    expect(cjkLineBreaks("a".repeat(200), 16)).toEqual([]);
    const twoLines = `短句。\n${LINE}`;
    const breaks = cjkLineBreaks(twoLines, 16);
    expect(breaks.every((offset) => offset > 4)).toBe(true);
    expect(insertLineBreaks(twoLines, breaks).split("\n")[0]).toBe("短句。");
  });

  it("breaks after a space in mixed text, dropping the space", () => {
    const text = "中中中中中中 中中中中中中";
    expect(insertLineBreaks(text, cjkLineBreaks(text, 8)).split("\n")).toEqual(["中中中中中中", "中中中中中中"]);
  });

  it("breaks between words when that fits, and inside a word only when it is longer than a line", () => {
    const words = [...new Intl.Segmenter("zh", { granularity: "word" }).segment(LINE)].map((s) => s.segment);
    expect(words).toContain("是否"); // the runtime's ICU dictionary knows the words
    const starts = new Set<number>();
    let at = 0;
    for (const word of words) {
      starts.add(at);
      at += word.length;
    }
    for (const maxEm of [8, 12, 16, 20, 30]) {
      const breaks = cjkLineBreaks(LINE, maxEm);
      expect(breaks.length).toBeGreaterThan(0);
      for (const offset of breaks) expect(starts.has(offset), `break at ${offset} for ${maxEm} em`).toBe(true);
      for (const line of insertLineBreaks(LINE, breaks).split("\n"))
        expect([...line].length).toBeLessThanOrEqual(maxEm);
    }
    // One word of three characters, on lines 2 em wide: cut inside it.
    const name = "共和国";
    expect([...new Intl.Segmenter("zh", { granularity: "word" }).segment(name)]).toHaveLength(1);
    expect(insertLineBreaks(name, cjkLineBreaks(name, 2)).split("\n")).toEqual(["共和", "国"]);
  });

  it("keeps a very long line linear and a line without any place to break whole", () => {
    const long = LINE.repeat(20_000); // 920,000 characters
    const breaks = cjkLineBreaks(long, 16);
    expect(breaks.length).toBeGreaterThanOrEqual(Math.ceil(long.length / 16) - 1);
    expect(breaks).toEqual([...breaks].sort((a, b) => a - b));
    expect(cjkLineBreaks(`中${"、".repeat(100_000)}`, 16)).toEqual([]);
  });
});

describe("insertLineBreaks", () => {
  it("puts each break once when the text is cut into pieces (karaoke)", () => {
    const breaks = cjkLineBreaks(LINE, 16);
    const whole = insertLineBreaks(LINE, breaks);
    let offset = 0;
    const pieces = [
      "这是一个",
      "很长的中文句子用来测试字",
      "幕是否能够自动换行而不是超出画",
      "面的边缘我们希望它能正确显示。",
    ].map((piece) => {
      const out = insertLineBreaks(piece, breaks, offset);
      offset += piece.length;
      return out;
    });
    expect(pieces.join("")).toBe(whole);
  });
});
