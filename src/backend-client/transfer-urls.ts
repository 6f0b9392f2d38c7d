/**
 * URLs through which the container backend reads inputs and writes results without storage
 * credentials. With R2 credentials, S3 presigned URLs (bodies go straight to R2, so the Worker's
 * request-size cap does not apply): R2's endpoint in production, the emulation's S3 API locally
 * (`R2_S3_ENDPOINT`); without them, HMAC-signed URLs served by this Worker, which stream from
 * and to R2.
 */
import { AwsClient } from "aws4fetch";
import type { Env } from "../env";
import { signGrant } from "../lib/signing";

export async function mediaUrl(
  env: Env,
  key: string,
  method: "GET" | "PUT",
  ttlMs: number,
  contentType?: string,
): Promise<string> {
  const exp = Date.now() + ttlMs;
  const endpoint =
    env.R2_S3_ENDPOINT ?? (env.R2_ACCOUNT_ID ? `https://${env.R2_ACCOUNT_ID}.r2.cloudflarestorage.com` : undefined);
  if (endpoint && env.R2_ACCESS_KEY_ID && env.R2_SECRET_ACCESS_KEY && env.R2_BUCKET_NAME) {
    const client = new AwsClient({
      accessKeyId: env.R2_ACCESS_KEY_ID,
      secretAccessKey: env.R2_SECRET_ACCESS_KEY,
      service: "s3",
      region: "auto",
    });
    const url = new URL(
      `${endpoint.replace(/\/$/, "")}/${env.R2_BUCKET_NAME}/${key.split("/").map(encodeURIComponent).join("/")}`,
    );
    url.searchParams.set("X-Amz-Expires", String(Math.ceil(ttlMs / 1000)));
    const signed = await client.sign(new Request(url, { method }), { aws: { signQuery: true } });
    return signed.url;
  }
  if (!env.BACKEND_SECRET || !env.PUBLIC_BASE_URL)
    throw new Error("BACKEND_SECRET and PUBLIC_BASE_URL are needed to hand media to the backend");
  const token = await signGrant(env.BACKEND_SECRET, { key, method, exp, contentType });
  return `${env.PUBLIC_BASE_URL.replace(/\/$/, "")}/internal/media/${token}`;
}
