import { describe, expect, it } from "vitest";
import type { Env } from "../../src/env";
import { verifyGrant } from "../../src/lib/signing";
import { mediaUrl } from "../../src/backend-client/transfer-urls";

const credentials = { R2_ACCESS_KEY_ID: "key-id", R2_SECRET_ACCESS_KEY: "key-secret", R2_BUCKET_NAME: "bucket" };
const workerServed = { BACKEND_SECRET: "backend-secret", PUBLIC_BASE_URL: "http://127.0.0.1:8787/" };

describe("the URLs the backend reads and writes media through", () => {
  it("are R2's presigned S3 URLs when its credentials are set", async () => {
    const url = new URL(
      await mediaUrl(
        { ...credentials, ...workerServed, R2_ACCOUNT_ID: "acct" } as unknown as Env,
        "uploads/a b/clip.mp4",
        "PUT",
        90_000,
      ),
    );
    expect(url.origin).toBe("https://acct.r2.cloudflarestorage.com");
    expect(url.pathname).toBe("/bucket/uploads/a%20b/clip.mp4");
    expect(url.searchParams.get("X-Amz-Expires")).toBe("90");
    expect(url.searchParams.get("X-Amz-Credential")).toMatch(/^key-id\/\d{8}\/auto\/s3\/aws4_request$/);
    expect(url.searchParams.get("X-Amz-Signature")).toMatch(/^[0-9a-f]{64}$/);
  });

  it("go to R2_S3_ENDPOINT instead when it is set (the emulation's S3 API locally)", async () => {
    const env = { ...credentials, R2_S3_ENDPOINT: "http://127.0.0.1:8787/cdn-cgi/local/r2/s3/" } as unknown as Env;
    const url = new URL(await mediaUrl(env, "results/job/out.mkv", "GET", 60_000));
    expect(`${url.origin}${url.pathname}`).toBe("http://127.0.0.1:8787/cdn-cgi/local/r2/s3/bucket/results/job/out.mkv");
    expect(url.searchParams.get("X-Amz-Signature")).toMatch(/^[0-9a-f]{64}$/);
  });

  it("are served by the Worker, signed with BACKEND_SECRET, when a credential is missing", async () => {
    const env = {
      ...credentials,
      R2_SECRET_ACCESS_KEY: undefined,
      R2_S3_ENDPOINT: "http://127.0.0.1:8787/cdn-cgi/local/r2/s3",
      ...workerServed,
    } as unknown as Env;
    const url = new URL(await mediaUrl(env, "uploads/x/clip.mp4", "PUT", 60_000, "video/mp4"));
    expect(url.pathname).toMatch(/^\/internal\/media\/[^/]+$/);
    const grant = await verifyGrant("backend-secret", url.pathname.split("/").pop()!, Date.now());
    expect(grant).toMatchObject({ key: "uploads/x/clip.mp4", method: "PUT", contentType: "video/mp4" });
  });
});
