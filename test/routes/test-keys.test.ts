/**
 * Test-mode keys (mk_test_) through the Worker: the same API, nothing spent, data apart from
 * live keys', bounded work, and results marked TEST (drawn on video, in the metadata of all).
 * Jobs really run on ffmpeg.wasm (this test Worker has no backend).
 */
import { env } from "cloudflare:workers";
import { parseBuffer } from "music-metadata";
import { describe, expect, it, vi } from "vitest";
import type { Env } from "../../src/env";
import { signWebhook } from "../../src/services/webhooks/signing";
import { runFfmpegWasm } from "../../src/media-worker/ffmpeg-wasm";
import { makeWav, monoSamples, parseWav, toneLevelDb } from "../helpers/audio-checks";
import {
  ADMIN,
  balanceOf,
  call,
  callTool,
  expectError,
  expectLedgerConsistent,
  newAccount,
  postJson,
  uploadBytes,
  uploadFixture,
  waitForJob,
  type TestAccount,
} from "../helpers/api";

async function testKey(account: TestAccount): Promise<TestAccount> {
  const response = await call(`/api/admin/accounts/${account.accountId}/keys?mode=test`, {
    method: "POST",
    headers: ADMIN,
  });
  const body = (await response.json()) as { keyId: string; apiKey: string; mode: string };
  expect(response.status, JSON.stringify(body)).toBe(200);
  expect(body.mode).toBe("test");
  return { ...account, keyId: body.keyId, apiKey: body.apiKey, auth: { authorization: `Bearer ${body.apiKey}` } };
}

async function resultOf(
  account: TestAccount,
  tool: string,
  body: unknown,
): Promise<{ bytes: Uint8Array; jobId: string; envelope: { creditsUsed: number; creditsRemaining: number } }> {
  const response = await callTool(account, tool, body);
  const envelope = (await response.json()) as { jobId: string; creditsUsed: number; creditsRemaining: number };
  expect(response.status, JSON.stringify(envelope)).toBe(200);
  const job = await waitForJob(account, envelope.jobId, 120_000);
  expect(job.status, job.error).toBe("completed");
  return { bytes: new Uint8Array(await (await call(job.result!.url)).arrayBuffer()), jobId: envelope.jobId, envelope };
}

const WIDTH = 320;
const HEIGHT = 240;

/**
 * Frame number `index`, picked by count rather than time: a test result's finish pass re-encodes
 * its sound, and Matroska shifts the copied picture's timestamps by the AAC priming (23 ms).
 */
async function frameAt(bytes: Uint8Array, name: string, index: number): Promise<Uint8Array> {
  const run = await runFfmpegWasm({
    args: [
      "-i",
      name,
      "-vf",
      `select=eq(n\\,${index})`,
      "-frames:v",
      "1",
      "-f",
      "rawvideo",
      "-pix_fmt",
      "rgb24",
      "out.rgb",
    ],
    inputs: { [name]: bytes },
    outputs: ["out.rgb"],
  });
  return run.outputs["out.rgb"]!;
}

/** The first `seconds` of a result's sound as a mono WAV, decoded by ffmpeg.wasm. */
async function soundOf(bytes: Uint8Array, name: string, seconds = 2) {
  const run = await runFfmpegWasm({
    args: ["-i", name, "-t", String(seconds), "-vn", "-ac", "1", "-c:a", "pcm_s16le", "out.wav"],
    inputs: { [name]: bytes },
    outputs: ["out.wav"],
  });
  return parseWav(run.outputs["out.wav"]!);
}

/** Pixels that differ by more than codec noise, in the top-right corner (the mark) and elsewhere. */
function differences(a: Uint8Array, b: Uint8Array) {
  let corner = 0;
  let elsewhere = 0;
  for (let y = 0; y < HEIGHT; y++) {
    for (let x = 0; x < WIDTH; x++) {
      const i = (y * WIDTH + x) * 3;
      if (Math.abs(a[i] - b[i]) + Math.abs(a[i + 1] - b[i + 1]) + Math.abs(a[i + 2] - b[i + 2]) <= 90) continue;
      if (x >= WIDTH / 2 && y < HEIGHT / 4) corner++;
      else elsewhere++;
    }
  }
  return { corner, elsewhere };
}

describe("test-mode keys", () => {
  it("are mk_test_ keys that authenticate and list as test keys", async () => {
    const account = await newAccount();
    const key = await testKey(account);
    expect(key.apiKey).toMatch(/^mk_test_[A-Za-z0-9_-]{32}$/);
    expect((await call("/api/v1/account", { headers: key.auth })).status).toBe(200);
    const row = await env.DB.prepare("SELECT mode, key_hash FROM api_keys WHERE id = ?")
      .bind(key.keyId)
      .first<{ mode: string; key_hash: string }>();
    expect(row!.mode).toBe("test");
    expect(row!.key_hash).not.toContain(key.apiKey.slice(8));
    await expectError(
      await call(`/api/admin/accounts/${account.accountId}/keys?mode=sandbox`, { method: "POST", headers: ADMIN }),
      400,
      "invalid_request",
      /mode/,
    );
  });

  it("count their resumable uploads apart: a test key's open sessions never block the live key", async () => {
    const account = await newAccount({ credits: 100 });
    const key = await testKey(account);
    for (let i = 0; i < 20; i++)
      expect(
        (await postJson("/api/v1/uploads/multipart", { filename: `t${i}.wav`, size: 1000 }, key.auth)).status,
      ).toBe(200);
    await expectError(
      await postJson("/api/v1/uploads/multipart", { filename: "more.wav", size: 1000 }, key.auth),
      400,
      "invalid_request",
      /Too many resumable uploads/,
    );
    expect(
      (await postJson("/api/v1/uploads/multipart", { filename: "live.wav", size: 1000 }, account.auth)).status,
    ).toBe(200);
  });

  it("keep test and live uploads apart", async () => {
    const account = await newAccount({ credits: 100 });
    const key = await testKey(account);
    const testUpload = await uploadFixture(key, "tone.mp3");
    const liveUpload = await uploadFixture(account, "tone.mp3");
    await expectError(
      await callTool(account, "extract-audio", { uploadId: testUpload.uploadId }),
      400,
      "invalid_request",
      /^uploadId: upload upl_\w+ is unknown or expired/,
    );
    await expectError(
      await callTool(key, "extract-audio", { uploadId: liveUpload.uploadId }),
      400,
      "invalid_request",
      /^uploadId: upload upl_\w+ is unknown or expired/,
    );
    expect(await balanceOf(account)).toBe(100);
    // The cloned voice is live account data.
    await expectError(
      await postJson("/api/v1/voices/clone", { uploadId: testUpload.uploadId }, key.auth),
      400,
      "invalid_request",
      /live key/,
    );

    // Idempotency-Keys too: a live job is never replayed to a test key, and the other way round.
    const idem = { "idempotency-key": "same-key" };
    const liveCall = await callTool(account, "extract-audio", { uploadId: liveUpload.uploadId }, idem);
    expect(liveCall.status).toBe(200);
    await expectError(
      await callTool(key, "extract-audio", { uploadId: liveUpload.uploadId }, idem),
      400,
      "invalid_request",
      /^uploadId: upload upl_\w+ is unknown or expired/,
    );
    const testCall = (await (await callTool(key, "extract-audio", { uploadId: testUpload.uploadId }, idem)).json()) as {
      jobId: string;
      creditsUsed: number;
    };
    expect(testCall.creditsUsed).toBe(0);
    const replayed = (await (await callTool(key, "extract-audio", { uploadId: testUpload.uploadId }, idem)).json()) as {
      jobId: string;
    };
    expect(replayed.jobId).toBe(testCall.jobId);
    expect(testCall.jobId).not.toBe(((await liveCall.json()) as { jobId: string }).jobId);
  });

  it("spend nothing, even on an empty balance, and mark video results TEST where a live key's are not", async () => {
    const account = await newAccount({ credits: 0 });
    const key = await testKey(account);
    const testClip = await uploadFixture(key, "clip.mp4");
    const marked = await resultOf(key, "convert", { uploadId: testClip.uploadId, format: "mkv" });
    expect(marked.envelope).toMatchObject({ creditsUsed: 0, creditsRemaining: 0 });
    // A result marked TEST is never published: a post cannot take it as media.
    const brand = (await (
      await postJson("/api/v1/brands", { name: "Test brand", timeZone: "Europe/Paris" }, account.auth)
    ).json()) as { brandId: string };
    await expectError(
      await postJson(
        "/api/v1/posts",
        { brandId: brand.brandId, text: "hello", media: { jobId: marked.jobId } },
        account.auth,
      ),
      400,
      "invalid_request",
      /media\.jobId/,
    );
    expect(await balanceOf(account)).toBe(0);
    await expectLedgerConsistent(account);

    const live = await newAccount({ credits: 100 });
    const liveClip = await uploadFixture(live, "clip.mp4");
    const plain = await resultOf(live, "convert", { uploadId: liveClip.uploadId, format: "mkv" });
    expect(plain.envelope.creditsUsed).toBeGreaterThan(0);

    const diff = differences(await frameAt(marked.bytes, "in.mkv", 25), await frameAt(plain.bytes, "in.mkv", 25));
    // The mark: a box of about 90 x 40 pixels in the corner; the rest is the same picture.
    expect(diff.corner).toBeGreaterThan(1000);
    expect(diff.elsewhere).toBeLessThan(WIDTH * HEIGHT * 0.01);
    // Its sound beeps too, so neither track of a test result is usable alone.
    const beep = async (bytes: Uint8Array) => {
      const wav = await soundOf(bytes, "in.mkv");
      return toneLevelDb(monoSamples(wav), wav.sampleRate, 1000, 0.05, 0.25);
    };
    expect(await beep(marked.bytes)).toBeGreaterThan(-20);
    expect(await beep(plain.bytes)).toBeLessThan(-40);

    // Trim draws it too (its -vf chain), and the file says TEST.
    const trimmed = await resultOf(key, "trim", { uploadId: testClip.uploadId, start: 0.5, end: 1.5 });
    const meta = await parseBuffer(trimmed.bytes, { mimeType: "video/mp4" }, { duration: true });
    expect(JSON.stringify(meta.common.comment)).toContain("TEST");
    expect(await balanceOf(account)).toBe(0);
  });

  it("mark the video of every tool that makes one: filter graphs, subtitle chains and re-encoded copies", async () => {
    const account = await newAccount({ credits: 0 });
    const key = await testKey(account);
    const clip = await uploadFixture(key, "clip.mp4");
    const source = await frameAt(
      new Uint8Array(await (await fetch(`${env.FIXTURE_BASE_URL}/clip.mp4`)).arrayBuffer()),
      "in.mp4",
      25,
    );
    const srt = "1\n00:00:00,000 --> 00:00:03,000\nBonjour\n";
    for (const [tool, body] of [
      ["merge", { uploadIds: [clip.uploadId, clip.uploadId] }],
      ["clean-audio", { uploadId: clip.uploadId }],
      ["subtitles", { uploadId: clip.uploadId, srtContent: srt }],
    ] as const) {
      const { bytes, envelope } = await resultOf(key, tool, body);
      expect(envelope.creditsUsed, tool).toBe(0);
      const diff = differences(await frameAt(bytes, "in.mp4", 25), source);
      expect(diff.corner, `${tool}: the mark`).toBeGreaterThan(1000);
    }
    expect(await balanceOf(account)).toBe(0);
  });

  it("mark audio results with an audible beep every 3 s and in their metadata", async () => {
    const account = await newAccount({ credits: 100 });
    const key = await testKey(account);
    const tone = await uploadFixture(key, "tone.mp3");
    const { bytes, envelope } = await resultOf(key, "extract-audio", { uploadId: tone.uploadId, format: "mp3" });
    expect(envelope.creditsUsed).toBe(0);
    const meta = await parseBuffer(bytes, { mimeType: "audio/mpeg" }, { duration: true });
    // ffmpeg writes an MP3's comment as an ID3v2 user text frame (TXXX:comment).
    expect(meta.native["ID3v2.4"]).toContainEqual({ id: "TXXX:comment", value: "TEST" });
    expect(meta.format.duration).toBeGreaterThan(2.9);
    // The same file as WAV from a test key and from a live key: only the test one beeps at 1 kHz,
    // in its first 0.3 s and again from 3 s; between beeps both carry the 440 Hz tone alone.
    const marked = parseWav((await resultOf(key, "extract-audio", { uploadId: tone.uploadId, format: "wav" })).bytes);
    const liveTone = await uploadFixture(account, "tone.mp3");
    const live = parseWav(
      (await resultOf(account, "extract-audio", { uploadId: liveTone.uploadId, format: "wav" })).bytes,
    );
    const beep = (wav: ReturnType<typeof parseWav>, from: number, to: number) =>
      toneLevelDb(monoSamples(wav), wav.sampleRate, 1000, from, to);
    expect(beep(marked, 0.05, 0.25)).toBeGreaterThan(-20);
    expect(beep(live, 0.05, 0.25)).toBeLessThan(-50);
    expect(beep(marked, 1, 2)).toBeLessThan(-50);
    expect(toneLevelDb(monoSamples(marked), marked.sampleRate, 440, 1, 2)).toBeGreaterThan(-30);
  });

  it("cannot read or change brands and posts, which are live data, and change nothing", async () => {
    const account = await newAccount({ credits: 0 });
    const key = await testKey(account);
    const refusal =
      /Brands and posts are live data \(a post reaches real networks\): test keys cannot read or change them/;
    const brand = {
      name: "Acme",
      timeZone: "Europe/Paris",
      channels: [{ network: "webhook", url: "http://127.0.0.1:9/hook" }],
    };
    await expectError(await postJson("/api/v1/brands", brand, key.auth), 400, "invalid_request", refusal);
    const live = await postJson("/api/v1/brands", brand, account.auth);
    expect(live.status).toBe(200);
    const { brandId } = (await live.json()) as { brandId: string };
    await expectError(await call("/api/v1/brands", { headers: key.auth }), 400, "invalid_request", refusal);
    await expectError(await call(`/api/v1/brands/${brandId}`, { headers: key.auth }), 400, "invalid_request", refusal);
    await expectError(
      await postJson("/api/v1/posts", { brandId, text: "hello" }, key.auth),
      400,
      "invalid_request",
      refusal,
    );
    await expectError(await call("/api/v1/posts", { headers: key.auth }), 400, "invalid_request", refusal);
    await expectError(
      await call("/api/v1/approval-links/x", { method: "DELETE", headers: key.auth }),
      400,
      "invalid_request",
      refusal,
    );
    const rows = await env.DB.prepare(
      "SELECT (SELECT COUNT(*) FROM brands WHERE account_id = ?1) AS brands, (SELECT COUNT(*) FROM posts WHERE account_id = ?1) AS posts",
    )
      .bind(account.accountId)
      .first();
    expect(rows).toEqual({ brands: 1, posts: 0 });
    // The live key is unaffected.
    expect((await call("/api/v1/brands", { headers: account.auth })).status).toBe(200);
  });

  it("have webhook settings of their own: their jobs notify the test URL, signed with the test secret, never the live endpoint", async () => {
    const account = await newAccount({ credits: 10 });
    const key = await testKey(account);
    const json = (who: TestAccount, method: string, path: string, body?: unknown) =>
      call(path, {
        method,
        headers: { ...who.auth, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    // Public names do not resolve here: the URLs are stored as a PUT would store them (e2e sets them through the API).
    await env.DB.prepare(
      "UPDATE accounts SET webhook_url = 'https://live.test/hooks', test_webhook_url = 'https://sandbox.test/hooks' WHERE id = ?",
    )
      .bind(account.accountId)
      .run();
    const live = (await (await json(account, "GET", "/api/v1/account/webhook")).json()) as {
      url: string;
      secret: string;
    };
    const test = (await (await json(key, "GET", "/api/v1/account/webhook")).json()) as { url: string; secret: string };
    expect(live.url).toBe("https://live.test/hooks");
    expect(test.url).toBe("https://sandbox.test/hooks");
    expect(test.secret).toMatch(/^whsec_/);
    expect(test.secret).not.toBe(live.secret);
    // Rotating the test secret leaves the live one alone; a refused URL changes neither.
    await expectError(
      await json(key, "PUT", "/api/v1/account/webhook", { url: "https://127.0.0.1/hook" }),
      400,
      "invalid_request",
      /^url: /,
    );
    const rotated = (await (await json(key, "POST", "/api/v1/account/webhook/rotate-secret")).json()) as {
      secret: string;
      secretVersion: number;
    };
    expect(rotated.secretVersion).toBe(2);
    expect(((await (await json(account, "GET", "/api/v1/account/webhook")).json()) as { secret: string }).secret).toBe(
      live.secret,
    );

    // A test key's job takes the test URL; a live key's the live one.
    const testClip = await uploadFixture(key, "clip.mp4");
    const liveClip = await uploadFixture(account, "clip.mp4");
    const testJob = (await (await callTool(key, "extract-audio", { uploadId: testClip.uploadId })).json()) as {
      jobId: string;
    };
    const liveJob = (await (await callTool(account, "extract-audio", { uploadId: liveClip.uploadId })).json()) as {
      jobId: string;
    };
    const urlOf = async (jobId: string) =>
      (await env.DB.prepare("SELECT webhook_url FROM jobs WHERE id = ?").bind(jobId).first<{ webhook_url: string }>())!
        .webhook_url;
    expect(await urlOf(testJob.jobId)).toBe("https://sandbox.test/hooks");
    expect(await urlOf(liveJob.jobId)).toBe("https://live.test/hooks");

    // The delivery of the test job, signed by the service: only the test secret verifies it.
    expect((await waitForJob(key, testJob.jobId)).status).toBe("completed");
    const delivery = await env.DB.prepare("SELECT id FROM job_webhooks WHERE job_id = ?")
      .bind(testJob.jobId)
      .first<{ id: string }>();
    await env.DB.prepare(
      "UPDATE job_webhooks SET token = 'test-token', url = 'http://127.0.0.1:9/sandbox' WHERE id = ?",
    )
      .bind(delivery!.id)
      .run();
    const received: Request[] = [];
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      received.push(new Request(input as string, init));
      return new Response(null, { status: 204 });
    });
    const { attemptDelivery } = await import("../../src/services/webhooks/delivery");
    const testEnv = { ...(env as Env), ALLOW_PRIVATE_URLS: "true" } as Env;
    expect(await attemptDelivery(testEnv, { deliveryId: delivery!.id, token: "test-token" }, Date.now())).toBe(
      "delivered",
    );
    vi.restoreAllMocks();
    const body = await received[0]!.text();
    expect(JSON.parse(body)).toMatchObject({ type: "job.completed", livemode: false, data: { jobId: testJob.jobId } });
    const signatures = received[0]!.headers.get("webhook-signature")!.split(" ");
    const sign = async (secret: string) =>
      (await signWebhook(secret, delivery!.id, Number(received[0]!.headers.get("webhook-timestamp")), body))[
        "webhook-signature"
      ];
    const currentTest = ((await (await json(key, "GET", "/api/v1/account/webhook")).json()) as { secret: string })
      .secret;
    expect(signatures).toContain(await sign(currentTest));
    expect(signatures).not.toContain(await sign(live.secret));
    // A live key's Idempotency-Key can never name a test key's scope.
    await expectError(
      await callTool(key, "extract-audio", { uploadId: "upl_x" }, { "idempotency-key": "a\tb" }),
      400,
      "invalid_request",
      /^Idempotency-Key: /,
    );
  });

  it("refuse work over their bounds and change nothing", async () => {
    const account = await newAccount({ credits: 0 });
    const key = await testKey(account);
    const response = await uploadBytes(key, makeWav({ seconds: 130, sampleRate: 8000, channels: 1 }), "long.wav");
    expect(response.status).toBe(200);
    const { uploadId } = (await response.json()) as { uploadId: string };
    await expectError(
      await callTool(key, "extract-audio", { uploadId }),
      400,
      "invalid_request",
      /Test keys process at most 2 minutes of media per call; this call bills 130 s/,
    );
    // Within the bounds the same upload is fine: 2 s of it.
    expect((await callTool(key, "trim", { uploadId, start: 0, end: 2 })).status).toBe(200);
    const jobs = await env.DB.prepare("SELECT COUNT(*) AS n, SUM(cost) AS cost FROM jobs WHERE account_id = ?")
      .bind(account.accountId)
      .first<{ n: number; cost: number }>();
    expect(jobs).toEqual({ n: 1, cost: 0 });
    expect(await balanceOf(account)).toBe(0);
    await expectLedgerConsistent(account);
  });
});
