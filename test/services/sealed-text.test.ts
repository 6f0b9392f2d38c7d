import { describe, expect, it } from "vitest";
import { isSealed, openText, sealText } from "../../src/lib/sealed-text";

describe("sealText / openText", () => {
  it("opens what it sealed, with a fresh IV each time, only under the same secret, purpose and context", async () => {
    const first = await sealText("secret", "purpose", "token-value", "brd_1");
    const second = await sealText("secret", "purpose", "token-value", "brd_1");
    expect(first).toMatch(/^v1:[A-Za-z0-9+/]+=*:[A-Za-z0-9+/]+=*$/);
    expect(first).not.toBe(second);
    expect(first).not.toContain("token-value");
    expect(await openText("secret", "purpose", first, "brd_1")).toBe("token-value");
    expect(await openText("secret", "purpose", second, "brd_1")).toBe("token-value");
    await expect(openText("other secret", "purpose", first, "brd_1")).rejects.toThrow();
    await expect(openText("secret", "other purpose", first, "brd_1")).rejects.toThrow();
    await expect(openText("secret", "purpose", first, "brd_2")).rejects.toThrow();
    const [version, iv, ciphertext] = first.split(":");
    const flipped = `${ciphertext.slice(0, 2)}${ciphertext[2] === "A" ? "B" : "A"}${ciphertext.slice(3)}`;
    await expect(openText("secret", "purpose", [version, iv, flipped].join(":"), "brd_1")).rejects.toThrow();
    await expect(openText("secret", "purpose", "v1:only-one-part", "brd_1")).rejects.toThrow(/malformed/);
  });

  it("reads a value stored before encryption (no v1: prefix) as plain text", async () => {
    expect(isSealed("mastodon-token")).toBe(false);
    expect(await openText("secret", "purpose", "mastodon-token", "brd_1")).toBe("mastodon-token");
  });
});
