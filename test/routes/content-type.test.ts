import { describe, expect, it } from "vitest";
import { call, expectError, fixtureBytes, newAccount } from "../helpers/api";

describe("tool bodies", () => {
  it("refuses a body that is not JSON with 400, and an empty body with 400 naming the field", async () => {
    const account = await newAccount({ credits: 100 });
    await expectError(await call("/api/v1/trim", { method: "POST", headers: { ...account.auth, "content-type": "text/plain" }, body: "start=1" }), 400, "invalid_request");
    await expectError(await call("/api/v1/trim", { method: "POST", headers: account.auth }), 400, "invalid_request");
    const array = await call("/api/v1/convert", { method: "POST", headers: { ...account.auth, "content-type": "application/json" }, body: "[1,2]" });
    await expectError(array, 400, "invalid_request");
    const missing = await call("/api/v1/convert", { method: "POST", headers: { ...account.auth, "content-type": "application/json" }, body: "{}" });
    const body = await expectError(missing, 400, "invalid_request");
    expect(body.error.message).toMatch(/uploadId/);
  });

  it("reads media types case-insensitively (RFC 9110): Multipart/Form-Data uploads, Application/JSON calls", async () => {
    const account = await newAccount({ credits: 100 });
    const form = new FormData();
    form.append("file", new File([await fixtureBytes("clip.mp4")], "clip.mp4"));
    const encoded = new Request("http://x/", { method: "POST", body: form });
    const type = encoded.headers.get("content-type")!.replace("multipart/form-data", "Multipart/Form-Data").replace("boundary", "Boundary");
    const upload = await call("/api/v1/uploads", { method: "POST", headers: { ...account.auth, "content-type": type }, body: await encoded.arrayBuffer() });
    const uploaded = (await upload.json()) as { uploadId: string };
    expect(upload.status, JSON.stringify(uploaded)).toBe(200);
    const tool = await call("/api/v1/extract-audio", { method: "POST", headers: { ...account.auth, "content-type": "Application/JSON; Charset=UTF-8" }, body: JSON.stringify({ uploadId: uploaded.uploadId }) });
    expect(tool.status, await tool.clone().text()).toBe(200);
  });
});
