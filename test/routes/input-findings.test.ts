/**
 * Regressions for findings of tries made from outside: bodies that are not objects, huge ids,
 * and a wrong type reported as "Required". Every answer names the field (or says the body must be
 * an object), echoes at most a short prefix, and charges nothing.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { balanceOf, call, callTool, expectError, newAccount, postJson, uploadFixture } from "../helpers/api";

describe("input findings", () => {
  it("an array or a scalar body says the body must be a JSON object", async () => {
    const account = await newAccount({ credits: 100 });
    for (const body of [[], [{ uploadId: "x" }], 5, "text", null]) {
      const response = await callTool(account, "convert", body);
      const error = await expectError(response, 400, "invalid_request");
      expect(error.error.message).toBe("The body must be a JSON object.");
    }
    expect(await balanceOf(account)).toBe(100);
  });

  it("caps ids at 64 characters and never echoes a huge one", async () => {
    const account = await newAccount({ credits: 100 });
    const huge = "u".repeat(100_000);
    const response = await callTool(account, "convert", { uploadId: huge });
    const error = await expectError(response, 400, "invalid_request", /^uploadId: /);
    expect(error.error.message.length).toBeLessThan(200);
    const job = await call(`/api/v1/jobs/${"j".repeat(5000)}`, { headers: account.auth });
    // Job ids stay the contract's 404 (unknown job), with a short echo.
    expect(job.status).toBe(404);
    expect(JSON.stringify(await job.json()).length).toBeLessThan(300);
  });

  it("fuzzing findings: a lone surrogate is no text to speak, a huge unknown path is not echoed, a null engagement report is a 400", async () => {
    const account = await newAccount({ credits: 100 });
    const speech = await callTool(account, "text-to-speech", { text: "\ud800" });
    await expectError(speech, 400, "invalid_request", /^text: must be valid Unicode/);
    const unknown = await call(`/api/v1/${"x".repeat(5_000)}`, { headers: account.auth });
    const error = await expectError(unknown, 404, "not_found");
    expect(error.error.message.length).toBeLessThan(120);
    const report = await call("/api/integrations/engagement", { method: "POST", body: "null" });
    await expectError(report, 400, "invalid_request", /JSON object/);
    expect(await balanceOf(account)).toBe(100);
  });

  it("names the type of a wrong value instead of saying Required", async () => {
    const account = await newAccount({ credits: 100 });
    const voice = await postJson("/api/v1/voices/clone", { uploadId: 5 }, account.auth);
    const error = await expectError(voice, 400, "invalid_request", /^uploadId: /);
    expect(error.error.message).toMatch(/expected string, received number/);
    const missing = await postJson("/api/v1/voices/clone", {}, account.auth);
    await expectError(missing, 400, "invalid_request", /^uploadId: Required$/);
    // A string where an array belongs: only its type, not the array's length rule applied to it.
    const merge = await postJson("/api/v1/merge", { uploadIds: "upl_01M83Z3GVFFNWBTBZA85SJXAJH" }, account.auth);
    await expectError(merge, 400, "invalid_request", /^uploadIds: Invalid input: expected array, received string$/);
  });

  it("trim takes an end equal to the reported duration, also where end * 1000 is not a whole number in floating point", async () => {
    const account = await newAccount({ credits: 100 });
    const clip = await uploadFixture(account, "clip.mp4");
    // 2.007 * 1000 === 2007.0000000000002: a duration of 2,007 ms reported as 2.007 s.
    await env.DB.prepare("UPDATE uploads SET duration_ms = 2007 WHERE id = ?").bind(clip.uploadId).run();
    const accepted = await callTool(account, "trim", { uploadId: clip.uploadId, start: 0, end: 2.007 });
    expect(accepted.status, await accepted.clone().text()).toBe(200);
    await expectError(
      await callTool(account, "trim", { uploadId: clip.uploadId, start: 0, end: 2.008 }),
      400,
      "invalid_request",
      /^end: must not exceed the media duration \(2\.007 s\)/,
    );
    // Under a millisecond past the duration is still past it.
    await expectError(
      await callTool(account, "trim", { uploadId: clip.uploadId, start: 0, end: 2.0071 }),
      400,
      "invalid_request",
      /^end: must not exceed the media duration/,
    );
  });

  it("trim bills end - start exactly: a fraction of a millisecond over a minute's worth counts, floating-point noise does not", async () => {
    const account = await newAccount({ credits: 0 });
    const clip = await uploadFixture(account, "clip.mp4");
    await env.DB.prepare("UPDATE uploads SET duration_ms = 45600 WHERE id = ?").bind(clip.uploadId).run();
    // 3 credits a minute: 20 s is 1 credit, 20.0004 s is ceil(1.00002) = 2.
    const over = await expectError(
      await callTool(account, "trim", { uploadId: clip.uploadId, start: 0, end: 20.0004 }),
      402,
      "insufficient_credits",
    );
    expect(over.error).toMatchObject({ required: 2 });
    // 20.1 - 0.1 is 20.000000000000004 in floating point: still 20 s, 1 credit.
    const exact = await expectError(
      await callTool(account, "trim", { uploadId: clip.uploadId, start: 0.1, end: 20.1 }),
      402,
      "insufficient_credits",
    );
    expect(exact.error).toMatchObject({ required: 1 });
  });
});
