import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { balanceOf, callTool, expectError, newAccount, newKey, uploadFixture, type TestAccount } from "../helpers/api";

let account: TestAccount;
let video: string;
let audio: string;
let image: string;
let silent: string;

beforeAll(async () => {
  account = await newAccount({ credits: 1000 });
  video = (await uploadFixture(account, "clip.mp4")).uploadId;
  audio = (await uploadFixture(account, "tone.mp3")).uploadId;
  image = (await uploadFixture(account, "logo.png")).uploadId;
  silent = (await uploadFixture(account, "silent.mp4")).uploadId;
});

/** One cue of 3,000 words: shown once per word, 27 million characters. */
const HUGE_CUE = `1\n00:00:00,000 --> 00:00:02,000\n${"mot ".repeat(3_000).trim()}\n`;

type Case = [tool: string, body: () => Record<string, unknown>, field: string];

const cases: Case[] = [
  ["subtitles", () => ({}), "uploadId"],
  ["subtitles", () => ({ uploadId: 42 }), "uploadId"],
  ["subtitles", () => ({ uploadId: video, style: "bold" }), "style"],
  ["subtitles", () => ({ uploadId: video, color: "white" }), "color"],
  ["subtitles", () => ({ uploadId: video, color: "#FFF" }), "color"],
  ["subtitles", () => ({ uploadId: video, effectColor: "#12345G" }), "effectColor"],
  ["subtitles", () => ({ uploadId: video, position: 101 }), "position"],
  ["subtitles", () => ({ uploadId: video, position: -1 }), "position"],
  ["subtitles", () => ({ uploadId: video, position: "50" }), "position"],
  ["subtitles", () => ({ uploadId: video, size: "huge" }), "size"],
  ["subtitles", () => ({ uploadId: video, captionWords: 3 }), "captionWords"],
  ["subtitles", () => ({ uploadId: video, captionWords: "4" }), "captionWords"],
  ["subtitles", () => ({ uploadId: video, fontId: "arial" }), "fontId"],
  ["subtitles", () => ({ uploadId: video, karaokeMode: "disco" }), "karaokeMode"],
  ["subtitles", () => ({ uploadId: video, highlightColor: "yellow" }), "highlightColor"],
  ["subtitles", () => ({ uploadId: video, shadowIntensity: 101 }), "shadowIntensity"],
  ["subtitles", () => ({ uploadId: video, style: "impact", shadowIntensity: -5 }), "shadowIntensity"],
  ["subtitles", () => ({ uploadId: video, contourThickness: 200 }), "contourThickness"],
  ["subtitles", () => ({ uploadId: video, boxOpacity: "75" }), "boxOpacity"],
  ["subtitles", () => ({ uploadId: video, srtContent: "this is not srt" }), "srtContent"],
  ["subtitles", () => ({ uploadId: video, srtContent: "" }), "srtContent"],
  [
    "subtitles",
    () => ({ uploadId: video, srtContent: "1\n00:00:00,500 --> 00:00:03,500\n   \n" }),
    "srtContent is not valid SRT: no cue has text to show",
  ],
  ["subtitles", () => ({ uploadId: video, srtContent: "x".repeat(2_000_001) }), "srtContent"],
  [
    "subtitles",
    () => ({ uploadId: video, karaokeMode: "couleur", srtContent: HUGE_CUE }),
    "srtContent: too long for karaoke",
  ],
  ["subtitles", () => ({ uploadId: audio }), "uploadId"],
  ["subtitles", () => ({ uploadId: image }), "uploadId"],
  ["transcribe", () => ({ uploadId: video, language: "french" }), "language"],
  ["transcribe", () => ({ uploadId: video, language: "xx" }), "language"],
  ["transcribe", () => ({ uploadId: video, language: "fr-FR" }), "language"],
  ["transcribe", () => ({ uploadId: video, format: "vtt" }), "format"],
  ["transcribe", () => ({ uploadId: video, format: "txt", srtSplitMode: "ligne" }), "srtSplitMode"],
  ["transcribe", () => ({ uploadId: image }), "uploadId"],
  ["clean-audio", () => ({}), "uploadId"],
  ["clean-audio", () => ({ uploadId: "upl_unknown" }), "uploadId"],
  ["clean-audio", () => ({ uploadId: audio, targetLufs: -5 }), "targetLufs"],
  ["clean-audio", () => ({ uploadId: audio, targetLufs: -40 }), "targetLufs"],
  ["clean-audio", () => ({ uploadId: audio, targetLufs: "-16" }), "targetLufs"],
  ["clean-audio", () => ({ uploadId: audio, truePeak: 1 }), "truePeak"],
  ["clean-audio", () => ({ uploadId: audio, truePeak: -12 }), "truePeak"],
  ["extract-audio", () => ({ uploadId: video, format: "flac" }), "format"],
  ["extract-audio", () => ({ uploadId: image }), "uploadId"],
  ["convert", () => ({ uploadId: video, format: "gif" }), "format"],
  ["convert", () => ({ uploadId: image }), "uploadId"],
  ["merge", () => ({ uploadIds: [video] }), "uploadIds"],
  ["merge", () => ({ uploadIds: video }), "uploadIds"],
  ["merge", () => ({ uploadIds: Array(21).fill(video) }), "uploadIds"],
  ["merge", () => ({ uploadIds: [video, audio] }), "uploadIds.1"],
  ["merge", () => ({ uploadIds: [video, "upl_missing"] }), "uploadIds.1"],
  // The inputs are looked up side by side; the first bad one in field order is named.
  ["merge", () => ({ uploadIds: [video, "upl_missing", "upl_gone"] }), "uploadIds.1: upload upl_missing is unknown"],
  ["merge", () => ({ uploadIds: [video, audio, "upl_gone"] }), "uploadIds.1: this tool needs video"],
  [
    "watermark",
    () => ({ uploadId: "upl_missing", watermarkUploadId: "upl_gone" }),
    "uploadId: upload upl_missing is unknown",
  ],
  ["watermark", () => ({ uploadId: video }), "watermarkText"],
  ["watermark", () => ({ uploadId: video, watermarkText: "" }), "watermarkText"],
  ["watermark", () => ({ uploadId: video, watermarkText: "  \t " }), "watermarkText: must not be empty"],
  ["watermark", () => ({ uploadId: video, watermarkText: "x", opacity: 9 }), "opacity"],
  ["watermark", () => ({ uploadId: video, watermarkText: "x", opacity: 101 }), "opacity"],
  ["watermark", () => ({ uploadId: video, watermarkText: "x", opacity: 50.5 }), "opacity"],
  ["watermark", () => ({ uploadId: video, watermarkText: "x", type: "mobile" }), "type"],
  ["watermark", () => ({ uploadId: video, watermarkText: "x", interval: 4 }), "interval"],
  ["watermark", () => ({ uploadId: video, watermarkText: "x", type: "fixe", interval: 10 }), "interval"],
  ["watermark", () => ({ uploadId: video, watermarkUploadId: video }), "watermarkUploadId"],
  ["watermark", () => ({ uploadId: audio, watermarkText: "x" }), "uploadId"],
  ["trim", () => ({ uploadId: video, end: 1 }), "start"],
  ["trim", () => ({ uploadId: video, start: 0 }), "end"],
  ["trim", () => ({ uploadId: video, start: -1, end: 1 }), "start"],
  ["trim", () => ({ uploadId: video, start: 2, end: 1 }), "end"],
  ["trim", () => ({ uploadId: video, start: 1, end: 1 }), "end"],
  ["trim", () => ({ uploadId: video, start: "0", end: 1 }), "start"],
  ["trim", () => ({ uploadId: video, start: 0, end: 99 }), "end"],
  ["text-to-speech", () => ({}), "text"],
  ["text-to-speech", () => ({ text: "" }), "text"],
  ["text-to-speech", () => ({ text: "   " }), "text"],
  ["text-to-speech", () => ({ text: "😀".repeat(201) }), "text: has nothing to speak"],
  ["text-to-speech", () => ({ text: "... !? --" }), "text: has nothing to speak"],
  ["text-to-speech", () => ({ text: "x".repeat(100_001) }), "text"],
  ["text-to-speech", () => ({ text: "Bonjour", voice: "marie" }), "voice"],
  ["text-to-speech", () => ({ text: "Bonjour", voice: "clone" }), "voice"],
  ["voice-change", () => ({ uploadId: video, voice: "clone" }), "voice"],
  ["voice-change", () => ({ uploadId: video, language: "français" }), "language"],
  ["voice-change", () => ({ uploadId: video, language: "xx" }), "language"],
  ["voice-change", () => ({ uploadId: video, language: "fr-" }), "language"],
  ["voice-change", () => ({ uploadId: audio }), "uploadId"],
  ["voice-change", () => ({ uploadId: silent }), "uploadId: the upload has no audio track"],
  // Automatic subtitles need speech; with srtContent a silent video is fine (next test).
  ["subtitles", () => ({ uploadId: silent }), "uploadId: the upload has no audio track"],
];

/**
 * Keys of the account taken in turn: the file's calls stay under each key's rate limit, and the
 * account holds at most 20 unrevoked keys (src/services/accounts/limits.ts).
 */
const pool: TestAccount[] = [];
let turn = 0;
async function pooledKey(): Promise<TestAccount> {
  if (pool.length < 8) pool.push(await newKey(account));
  return pool[turn++ % pool.length]!;
}

describe("tool validation: every bad value is a 400 naming the field, and changes nothing", () => {
  it.each(cases)("%s %j -> 400 on %s", async (tool, body, field) => {
    // Three calls per case, on keys taken in turn: the file stays under a key's rate limit.
    const caller = await pooledKey();
    const before = await balanceOf(caller);
    const jobsBefore = await env.DB.prepare("SELECT COUNT(*) AS n FROM jobs WHERE account_id = ?")
      .bind(account.accountId)
      .first<{ n: number }>();
    const response = await callTool(caller, tool, body());
    const error = await expectError(response, 400, "invalid_request");
    expect(error.error.message).toContain(field);
    expect(await balanceOf(caller)).toBe(before);
    const jobsAfter = await env.DB.prepare("SELECT COUNT(*) AS n FROM jobs WHERE account_id = ?")
      .bind(account.accountId)
      .first<{ n: number }>();
    expect(jobsAfter!.n).toBe(jobsBefore!.n);
  });

  it("says one thing per field: an empty text is not both 'too small' and 'must not be empty'", async () => {
    for (const [tool, body, field] of [
      ["text-to-speech", { text: "" }, "text"],
      ["watermark", { uploadId: video, watermarkText: "" }, "watermarkText"],
    ] as const) {
      const error = await expectError(await callTool(await pooledKey(), tool, body), 400, "invalid_request");
      expect(error.error.message.split(`${field}:`)).toHaveLength(2);
    }
  });

  it("ignores unknown fields and accepts a field that does not apply to the mode once validated", async () => {
    const response = await callTool(account, "watermark", {
      uploadId: video,
      watermarkText: "x",
      type: "fixe",
      interval: 8,
      extra: true,
    });
    expect(response.status).toBe(200);
  });

  it("takes any ISO 639-1 language in any case, with a region for voice-change", async () => {
    for (const language of ["fr", "DE", "fr-CA", "pt_BR"]) {
      const response = await callTool(account, "voice-change", { uploadId: video, language });
      expect(response.status, `${language}: ${await response.clone().text()}`).toBe(200);
    }
  });

  it("takes the cue that is too long for karaoke without karaoke", async () => {
    const response = await callTool(account, "subtitles", { uploadId: video, srtContent: HUGE_CUE });
    expect(response.status).toBe(200);
  });

  it("burns given subtitles into a video without sound", async () => {
    const response = await callTool(account, "subtitles", {
      uploadId: silent,
      srtContent: "1\n00:00:00,000 --> 00:00:01,000\nHello\n",
    });
    expect(response.status).toBe(200);
  });

  it("refuses an upload of another account as unknown (400 naming the field)", async () => {
    const other = await newAccount({ credits: 100 });
    await expectError(await callTool(other, "convert", { uploadId: video }), 400, "invalid_request", /uploadId/);
  });

  it("answers 400 before 402 when both apply", async () => {
    const poor = await newAccount({ credits: 0 });
    await expectError(await callTool(poor, "convert", { uploadId: "upl_x", format: "gif" }), 400, "invalid_request");
  });
});
