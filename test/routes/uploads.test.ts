import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { resultName } from "../../src/media/commands/command";
import { call, expectError, fixtureBytes, newAccount, postJson, uploadBytes, uploadFixture } from "../helpers/api";
import { headersOnlyPng } from "../helpers/images";

async function objectCount(accountId: string): Promise<number> {
  const listed = await env.MEDIA.list({ prefix: `uploads/${accountId}/` });
  return listed.objects.length;
}

async function ffprobeDuration(name: string): Promise<number> {
  const response = await fetch(`${env.FIXTURE_BASE_URL}/${name}.ffprobe.json`);
  const probe = (await response.json()) as { format: { duration: string } };
  return Number(probe.format.duration);
}

describe("POST /api/v1/uploads (multipart)", () => {
  it.each([
    "clip.mp4",
    "clip-moov-end.mov",
    "clip.webm",
    "clip.mkv",
    "clip.avi",
    "tone.mp3",
    "tone.wav",
    "tone.m4a",
    "tone.ogg",
    "tone.flac",
  ])("stores %s and reports its probed duration", async (name) => {
    const account = await newAccount();
    const body = await uploadFixture(account, name);
    expect(Object.keys(body).sort()).toEqual(["durationSeconds", "expiresIn", "uploadId"]);
    expect(body.uploadId).toMatch(/^upl_/);
    expect(body.expiresIn).toBe(10800);
    expect(body.durationSeconds).toBeCloseTo(await ffprobeDuration(name), 1);
    // Millisecond precision.
    expect(Math.abs(Math.round(body.durationSeconds * 1000) - body.durationSeconds * 1000)).toBeLessThan(1e-6);
    expect(await objectCount(account.accountId)).toBe(1);
  });

  it.each(["logo.png", "logo.jpg", "logo.webp"])("accepts image %s with duration 0", async (name) => {
    const account = await newAccount();
    const body = await uploadFixture(account, name);
    expect(body.durationSeconds).toBe(0);
  });

  it("detects the type from the content, not the name", async () => {
    const account = await newAccount();
    const response = await uploadBytes(account, await fixtureBytes("tone.wav"), "movie.mp4");
    expect(response.status).toBe(200);
    const row = await env.DB.prepare("SELECT kind, container FROM uploads WHERE id = ?")
      .bind(((await response.json()) as { uploadId: string }).uploadId)
      .first();
    expect(row).toEqual({ kind: "audio", container: "wav" });
  });

  it("refuses what is not media, and leaves nothing behind", async () => {
    const account = await newAccount();
    const text = new TextEncoder().encode("hello, this is text\n".repeat(500));
    await expectError(await uploadBytes(account, text, "notes.mp4"), 400, "invalid_request", /file/);
    const clip = await fixtureBytes("clip.mp4");
    await expectError(
      await uploadBytes(account, clip.slice(0, Math.floor(clip.length * 0.3)), "cut.mp4"),
      400,
      "invalid_request",
      /file/,
    );
    await expectError(await uploadBytes(account, new Uint8Array(0), "empty.mp4"), 400, "invalid_request", /file/);
    await expectError(
      await uploadBytes(account, headersOnlyPng(60_000, 60_000), "logo.png"),
      400,
      "invalid_request",
      /60000x60000 pixels: images may be at most 16384 pixels a side/,
    );
    expect(await objectCount(account.accountId)).toBe(0);
    const rows = await env.DB.prepare("SELECT COUNT(*) AS n FROM uploads WHERE account_id = ?")
      .bind(account.accountId)
      .first<{ n: number }>();
    expect(rows!.n).toBe(0);
  });

  it("refuses a multipart body without a file field, or with a bad boundary", async () => {
    const account = await newAccount();
    const form = new FormData();
    form.append("other", "value");
    await expectError(
      await call("/api/v1/uploads", { method: "POST", headers: account.auth, body: form }),
      400,
      "invalid_request",
      /file/,
    );
    const broken = await call("/api/v1/uploads", {
      method: "POST",
      headers: { ...account.auth, "content-type": "multipart/form-data; boundary=xyz" },
      body: '--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.mp4"\r\n\r\nabc',
    });
    await expectError(broken, 400, "invalid_request");
    await expectError(
      await call("/api/v1/uploads", {
        method: "POST",
        headers: { ...account.auth, "content-type": "text/plain" },
        body: "x",
      }),
      400,
      "invalid_request",
    );
  });

  it("refuses two file fields (they used to race into one object) and keeps nothing", async () => {
    const account = await newAccount();
    const form = new FormData();
    form.append("file", new Blob([await fixtureBytes("tone.mp3")]), "tone.mp3");
    form.append("file", new Blob([await fixtureBytes("tone.wav")]), "tone.wav");
    await expectError(
      await call("/api/v1/uploads", { method: "POST", headers: account.auth, body: form }),
      400,
      "invalid_request",
      /^file: one file per upload; this request has 2 file fields\.$/,
    );
    expect(await objectCount(account.accountId)).toBe(0);
    const rows = await env.DB.prepare("SELECT COUNT(*) AS n FROM uploads WHERE account_id = ?")
      .bind(account.accountId)
      .first<{ n: number }>();
    expect(rows!.n).toBe(0);
  });

  it("streams a file larger than one part into R2 multipart parts", async () => {
    const account = await newAccount();
    // 20 MiB of a valid WAV (header + silence): three R2 parts.
    const seconds = (20 * 1024 * 1024) / (16000 * 2);
    const dataSize = Math.floor(seconds) * 16000 * 2;
    const wav = new Uint8Array(44 + dataSize);
    const view = new DataView(wav.buffer);
    const ascii = (offset: number, text: string) => [...text].forEach((c, i) => (wav[offset + i] = c.charCodeAt(0)));
    ascii(0, "RIFF");
    view.setUint32(4, 36 + dataSize, true);
    ascii(8, "WAVE");
    ascii(12, "fmt ");
    view.setUint32(16, 16, true);
    view.setUint16(20, 1, true);
    view.setUint16(22, 1, true);
    view.setUint32(24, 16000, true);
    view.setUint32(28, 32000, true);
    view.setUint16(32, 2, true);
    view.setUint16(34, 16, true);
    ascii(36, "data");
    view.setUint32(40, dataSize, true);
    const response = await uploadBytes(account, wav, "silence.wav");
    const body = (await response.json()) as { uploadId: string; durationSeconds: number };
    expect(response.status, JSON.stringify(body)).toBe(200);
    expect(body.durationSeconds).toBe(Math.floor(seconds));
    const row = await env.DB.prepare("SELECT object_key, size_bytes FROM uploads WHERE id = ?")
      .bind(body.uploadId)
      .first<{ object_key: string; size_bytes: number }>();
    expect(row!.size_bytes).toBe(wav.byteLength);
    const stored = await env.MEDIA.get(row!.object_key);
    expect(new Uint8Array(await stored!.arrayBuffer())).toEqual(wav);
  });
});

describe("upload file names", () => {
  /** The name an upload of the WebM fixture under `name` is stored with. */
  async function storedFilename(name: string): Promise<string> {
    const account = await newAccount();
    const response = await uploadBytes(account, await fixtureBytes("clip.webm"), name);
    const body = (await response.json()) as { uploadId: string };
    expect(response.status, JSON.stringify(body)).toBe(200);
    const row = await env.DB.prepare("SELECT filename FROM uploads WHERE id = ?")
      .bind(body.uploadId)
      .first<{ filename: string }>();
    return row!.filename;
  }

  it("folds accents instead of cutting the letter in two, and results are named after it", async () => {
    const filename = await storedFilename("Vidéo d’été 日本.webm");
    expect(filename).toBe("Video_d_ete_.webm");
    expect(resultName(filename, "mp3")).toBe("Video_d_ete.mp3");
  });

  it("reads back the quotes a form writes as %22 in a file name", async () => {
    expect(await storedFilename('my "best" clip.webm')).toBe("my_best_clip.webm");
  });
});

describe("POST /api/v1/uploads (URL)", () => {
  it("downloads a URL when private addresses are allowed (local development)", async () => {
    // The test server is on loopback, so this goes through the app with ALLOW_PRIVATE_URLS on.
    const { buildApp } = await import("../../src/app");
    const account = await newAccount();
    const response = await buildApp().request(
      "/api/v1/uploads",
      {
        method: "POST",
        headers: { ...account.auth, "content-type": "application/json" },
        body: JSON.stringify({ url: `${env.FIXTURE_BASE_URL}/clip.webm` }),
      },
      { ...env, ALLOW_PRIVATE_URLS: "true" },
    );
    const body = (await response.json()) as { uploadId: string; durationSeconds: number };
    expect(response.status, JSON.stringify(body)).toBe(200);
    expect(body.durationSeconds).toBeCloseTo(await ffprobeDuration("clip.webm"), 1);
    const row = await env.DB.prepare("SELECT filename, container FROM uploads WHERE id = ?")
      .bind(body.uploadId)
      .first();
    expect(row).toEqual({ filename: "clip.webm", container: "webm" });
  });

  it("keeps a URL path that is not valid UTF-8 as sent for the file name (a Latin-1 escape was a 500)", async () => {
    const { buildApp } = await import("../../src/app");
    const account = await newAccount();
    const response = await buildApp().request(
      "/api/v1/uploads",
      {
        method: "POST",
        headers: { ...account.auth, "content-type": "application/json" },
        body: JSON.stringify({ url: `${env.FIXTURE_BASE_URL}/any-name/clip.webm/caf%E9.webm` }),
      },
      { ...env, ALLOW_PRIVATE_URLS: "true" },
    );
    const body = (await response.json()) as { uploadId: string };
    expect(response.status, JSON.stringify(body)).toBe(200);
    const row = await env.DB.prepare("SELECT filename FROM uploads WHERE id = ?")
      .bind(body.uploadId)
      .first<{ filename: string }>();
    expect(row!.filename).toMatch(/^caf.*\.webm$/);
  });

  it("refuses a file announced over 5 GB and non-media URLs", async () => {
    const { buildApp } = await import("../../src/app");
    const account = await newAccount();
    const send = (url: string) =>
      buildApp().request(
        "/api/v1/uploads",
        {
          method: "POST",
          headers: { ...account.auth, "content-type": "application/json" },
          body: JSON.stringify({ url }),
        },
        { ...env, ALLOW_PRIVATE_URLS: "true" },
      );
    await expectError(await send(`${env.FIXTURE_BASE_URL}/announce-huge`), 400, "invalid_request", /5 GB/);
    // The message names the field that was sent: url, not file.
    await expectError(await send(`${env.FIXTURE_BASE_URL}/text.txt`), 400, "invalid_request", /^url: /);
    await expectError(await send(`${env.FIXTURE_BASE_URL}/missing.mp4`), 400, "invalid_request", /404/);
    expect(await objectCount(account.accountId)).toBe(0);
  });

  it.each([
    ["loopback IPv4", (port: string) => `http://127.0.0.1:${port}/clip.mp4`],
    ["loopback elsewhere in 127/8", (port: string) => `http://127.1.2.3:${port}/clip.mp4`],
    ["decimal IPv4", (port: string) => `http://2130706433:${port}/clip.mp4`],
    ["hex IPv4", (port: string) => `http://0x7f000001:${port}/clip.mp4`],
    ["short IPv4", (port: string) => `http://127.1:${port}/clip.mp4`],
    ["IPv6 loopback", (port: string) => `http://[::1]:${port}/clip.mp4`],
    ["IPv4-mapped IPv6", (port: string) => `http://[::ffff:127.0.0.1]:${port}/clip.mp4`],
    ["IPv4-compatible IPv6", (port: string) => `http://[::127.0.0.1]:${port}/clip.mp4`],
    ["localhost", (port: string) => `http://localhost:${port}/clip.mp4`],
    ["sub.localhost", (port: string) => `http://media.localhost:${port}/clip.mp4`],
    ["unspecified", (port: string) => `http://0.0.0.0:${port}/clip.mp4`],
    [
      "redirect to loopback",
      (port: string) => `http://127.0.0.1:${port}/redirect/${encodeURIComponent(`http://127.0.0.1:${port}/clip.mp4`)}`,
    ],
    ["name resolving to loopback", (port: string) => `http://rebind.test:${port}/clip.mp4`],
    ["name resolving to a private range", () => `http://intranet.test/clip.mp4`],
    ["file scheme", () => "file:///etc/passwd"],
    ["ftp scheme", () => "ftp://example.com/a.mp4"],
    ["not a URL", () => "clip.mp4"],
  ])("refuses %s (SSRF) with 400 and stores nothing", async (_name, build) => {
    const account = await newAccount();
    const port = new URL(env.FIXTURE_BASE_URL).port;
    const response = await postJson("/api/v1/uploads", { url: build(port) }, account.auth);
    await expectError(response, 400, "invalid_request", /url/);
    expect(await objectCount(account.accountId)).toBe(0);
  });

  it("refuses link-local metadata, private and unique-local addresses", async () => {
    const { assertPublicUrl } = await import("../../src/lib/public-url");
    await expect(assertPublicUrl("http://169.254.169.254/latest/meta-data", { allowPrivate: false })).rejects.toThrow(
      /not public/,
    );
    await expect(assertPublicUrl("http://10.1.2.3/", { allowPrivate: false })).rejects.toThrow(/not public/);
    await expect(assertPublicUrl("http://[fd00::1]/", { allowPrivate: false })).rejects.toThrow(/not public/);
    // IPv4 inside IPv6: compatible (::/96), NAT64 (64:ff9b::/96), 6to4 (2002::/16).
    for (const host of ["::a9fe:a9fe", "::7f00:1", "64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::1"]) {
      await expect(assertPublicUrl(`http://[${host}]/`, { allowPrivate: false }), host).rejects.toThrow(/not public/);
    }
    await expect(assertPublicUrl("http://[2606:4700::1111]/", { allowPrivate: false })).resolves.toBeInstanceOf(URL);
  });

  it("validates the body", async () => {
    const account = await newAccount();
    await expectError(await postJson("/api/v1/uploads", {}, account.auth), 400, "invalid_request", /url/);
    await expectError(await postJson("/api/v1/uploads", { url: 5 }, account.auth), 400, "invalid_request", /url/);
    await expectError(await postJson("/api/v1/uploads", {}), 401, "unauthorized");
  });
});
