import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { balanceOf, call, callTool, expectError, newAccount, postJson, uploadFixture } from "../helpers/api";

describe("/api/v1/voices/clone", () => {
  it("registers a sample of at least 10 s, shows it, makes voice clone usable, and removes it", async () => {
    const account = await newAccount({ credits: 500 });
    await expectError(await call("/api/v1/voices/clone", { headers: account.auth }), 404, "not_found");
    const short = await uploadFixture(account, "tone.mp3");
    await expectError(
      await postJson("/api/v1/voices/clone", { uploadId: short.uploadId }, account.auth),
      400,
      "invalid_request",
      /10 s/,
    );
    const image = await uploadFixture(account, "logo.png");
    await expectError(
      await postJson("/api/v1/voices/clone", { uploadId: image.uploadId }, account.auth),
      400,
      "invalid_request",
      /uploadId/,
    );
    await expectError(await postJson("/api/v1/voices/clone", {}, account.auth), 400, "invalid_request", /uploadId/);

    const sample = await uploadFixture(account, "long-61s.mp3");
    const registered = await postJson("/api/v1/voices/clone", { uploadId: sample.uploadId }, account.auth);
    expect(registered.status).toBe(200);
    const body = (await registered.json()) as { voice: string; status: string; createdAt: string };
    expect(body.voice).toBe("clone");
    expect(body.status).toBe("ready");
    expect(new Date(body.createdAt).toString()).not.toBe("Invalid Date");
    expect(await balanceOf(account)).toBe(500);
    expect(await (await call("/api/v1/voices/clone", { headers: account.auth })).json()).toEqual(body);

    // The voice outlives the 3-hour upload: its sample is a copy of its own.
    const row = await env.DB.prepare("SELECT object_key FROM cloned_voices WHERE account_id = ?")
      .bind(account.accountId)
      .first<{ object_key: string }>();
    expect(await env.MEDIA.head(row!.object_key)).not.toBeNull();

    // With a cloned voice, voice clone is accepted and priced at the clone rate.
    const tts = (await (
      await callTool(account, "text-to-speech", { text: "x".repeat(1000), voice: "clone" })
    ).json()) as { creditsUsed: number };
    expect(tts.creditsUsed).toBe(40);

    const removed = await call("/api/v1/voices/clone", { method: "DELETE", headers: account.auth });
    expect(await removed.json()).toEqual({ voice: "clone", status: "deleted" });
    expect(await env.MEDIA.head(row!.object_key)).toBeNull();
    await expectError(
      await callTool(account, "text-to-speech", { text: "Bonjour", voice: "clone" }),
      400,
      "invalid_request",
      /voice/,
    );
  });

  it("needs a key", async () => {
    await expectError(await call("/api/v1/voices/clone"), 401, "unauthorized");
  });
});

describe("speech tools without a speech backend", () => {
  it("refuses transcription and automatic subtitles with 400 and no debit", async () => {
    const account = await newAccount({ credits: 100 });
    const clip = await uploadFixture(account, "clip.mp4");
    await expectError(
      await callTool(account, "transcribe", { uploadId: clip.uploadId }),
      400,
      "invalid_request",
      /transcription/,
    );
    await expectError(
      await callTool(account, "subtitles", { uploadId: clip.uploadId }),
      400,
      "invalid_request",
      /srtContent/,
    );
    expect(await balanceOf(account)).toBe(100);
  });
});
