import { describe, expect, it } from "vitest";
import { env } from "cloudflare:workers";
import { BASE, balanceOf, call, expectError, fixtureBytes, newAccount } from "../helpers/api";

describe("tool bodies", () => {
  it("refuses a body that is not JSON with 400, and an empty body with 400 naming the field", async () => {
    const account = await newAccount({ credits: 100 });
    await expectError(
      await call("/api/v1/trim", {
        method: "POST",
        headers: { ...account.auth, "content-type": "text/plain" },
        body: "start=1",
      }),
      400,
      "invalid_request",
    );
    await expectError(await call("/api/v1/trim", { method: "POST", headers: account.auth }), 400, "invalid_request");
    const array = await call("/api/v1/convert", {
      method: "POST",
      headers: { ...account.auth, "content-type": "application/json" },
      body: "[1,2]",
    });
    await expectError(array, 400, "invalid_request");
    const missing = await call("/api/v1/convert", {
      method: "POST",
      headers: { ...account.auth, "content-type": "application/json" },
      body: "{}",
    });
    const body = await expectError(missing, 400, "invalid_request");
    expect(body.error.message).toMatch(/uploadId/);
  });

  it("refuses a JSON body over 16 MiB before parsing it, stated length or streamed, and a page form over 64 KiB; nothing is charged", async () => {
    const account = await newAccount({ credits: 100 });
    // A valid call padded with spaces past the limit: refused for its size alone.
    const padded = `{"uploadId": "upl_x", "format": "mp3"${" ".repeat(16 * 1024 * 1024)}}`;
    const headers = { ...account.auth, "content-type": "application/json" };
    await expectError(
      await call("/api/v1/extract-audio", { method: "POST", headers, body: padded }),
      400,
      "invalid_request",
      /^The request body is larger than 16 MiB\.$/,
    );
    const bytes = new TextEncoder().encode(padded);
    const streamed = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < bytes.length; at += 1024 * 1024) controller.enqueue(bytes.subarray(at, at + 1024 * 1024));
        controller.close();
      },
    });
    await expectError(
      await call("/api/v1/extract-audio", { method: "POST", headers, body: streamed }),
      400,
      "invalid_request",
      /16 MiB/,
    );
    // The key is checked first: no key is still a 401.
    expect(
      (
        await call("/api/v1/extract-audio", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: padded,
        })
      ).status,
    ).toBe(401);
    const form = `email=a%40b.c&password=${"x".repeat(64 * 1024)}`;
    const login = await call("/app/login", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: BASE },
      body: form,
    });
    expect(login.status).toBe(413);
    expect(await login.json()).toEqual({
      error: { code: "invalid_request", message: "The request body is larger than 64 KiB." },
    });
    // The same form sent by a browser (it asks for HTML) is refused with a page.
    const page = await call("/app/login", {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        origin: BASE,
        accept: "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8",
      },
      body: form,
    });
    expect(page.status).toBe(413);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    const html = await page.text();
    expect(html).toContain("Request refused");
    expect(html).toContain("The request body is larger than 64 KiB. Nothing was changed.");
    expect(html).toContain("Back to the developer area");
    // A page opened by a link names itself instead.
    const review = await call("/review/any-token", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: BASE, accept: "text/html" },
      body: form,
    });
    expect(review.status).toBe(413);
    const reviewHtml = await review.text();
    expect(reviewHtml).toContain("· post review</span>");
    expect(reviewHtml).not.toContain("developer area");
    // An API path keeps the contract's JSON whatever it accepts.
    const api = await call("/api/v1/extract-audio", {
      method: "POST",
      headers: { ...headers, accept: "text/html" },
      body: padded,
    });
    await expectError(api, 400, "invalid_request", /16 MiB/);
    expect(await balanceOf(account)).toBe(100);
    const jobs = await env.DB.prepare("SELECT COUNT(*) AS n FROM jobs WHERE account_id = ?")
      .bind(account.accountId)
      .first<{ n: number }>();
    expect(jobs!.n).toBe(0);
  });

  it("reads media types case-insensitively (RFC 9110): Multipart/Form-Data uploads, Application/JSON calls", async () => {
    const account = await newAccount({ credits: 100 });
    const form = new FormData();
    form.append("file", new File([await fixtureBytes("clip.mp4")], "clip.mp4"));
    const encoded = new Request("http://x/", { method: "POST", body: form });
    const type = encoded.headers
      .get("content-type")!
      .replace("multipart/form-data", "Multipart/Form-Data")
      .replace("boundary", "Boundary");
    const upload = await call("/api/v1/uploads", {
      method: "POST",
      headers: { ...account.auth, "content-type": type },
      body: await encoded.arrayBuffer(),
    });
    const uploaded = (await upload.json()) as { uploadId: string };
    expect(upload.status, JSON.stringify(uploaded)).toBe(200);
    const tool = await call("/api/v1/extract-audio", {
      method: "POST",
      headers: { ...account.auth, "content-type": "Application/JSON; Charset=UTF-8" },
      body: JSON.stringify({ uploadId: uploaded.uploadId }),
    });
    expect(tool.status, await tool.clone().text()).toBe(200);
  });
});
