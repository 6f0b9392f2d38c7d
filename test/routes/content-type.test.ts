import { describe, expect, it } from "vitest";
import { call, expectError, newAccount } from "../helpers/api";

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
});
