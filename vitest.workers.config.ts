import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { readFile } from "node:fs/promises";
import path from "node:path";

/**
 * The workerd tests, as two projects sharing this configuration:
 * - `workers` (`npm run test:fast`, the inner loop, under 2 minutes on 2 cores): every file that
 *   runs no media through ffmpeg.wasm, all in one shared workerd (`isolate: false`), which saves
 *   the ~7 s that starting one per file costs (12 small files: 88 s one workerd each, 13 s shared);
 *   they can, since each test makes its own account and ids; test/fast-setup.ts clears the one
 *   global the wasm loader leaves behind.
 * - `workers-media` (vitest.workers-media.config.ts): the files below, each in its own workerd,
 *   which load the wasm core or start a job that the queue consumer runs to its end in
 *   ffmpeg.wasm (even a test that only checks the 200 of an accepted job makes the next tests of
 *   its file wait for that job). A new test file that does either belongs here.
 * Neither keeps Vitest's on-disk module cache (`fsModuleCache`): with it, each new workerd is sent
 * its file's whole transformed import graph in one WebSocket message (21.5 MB for one route test,
 * each module twice), which outgrew workerd's message limit late in a full run: the pool died
 * with 1009 "Message is too large" and took every later file with it. Without it, a workerd
 * fetches modules one per message: slower to start (up to a minute per file under load), which
 * is why only the media files pay it once each.
 */
export const WASM_MEDIA_FILES = [
  "test/media/billed-duration.test.ts",
  "test/media/clean-audio-quality.test.ts",
  "test/media/decode-limits.test.ts",
  "test/media/ffmpeg-wasm.test.ts",
  "test/media/frame-rate.test.ts",
  "test/media/subtitles.test.ts",
  "test/media/tools-light.test.ts",
  "test/mcp/assistant-limits.test.ts",
  "test/mcp/handler.test.ts",
  "test/mcp/parity.test.ts",
  "test/mcp/tools.test.ts",
  "test/routes/admin-audit.test.ts",
  "test/routes/cancel.test.ts",
  "test/routes/fuzz.test.ts",
  "test/routes/input-findings.test.ts",
  "test/routes/job-wait.test.ts",
  "test/routes/jobs.test.ts",
  "test/routes/media-wasm.test.ts",
  "test/routes/pipelines.test.ts",
  "test/routes/quotes.test.ts",
  "test/routes/rate-limits.test.ts",
  "test/routes/test-keys.test.ts",
  "test/routes/webhooks-jobs.test.ts",
  "test/services/social.test.ts",
  "test/web/pages.test.ts",
];
/** The configuration of one of the two projects. */
export function workersProject(kind: "shared" | "media") {
  const media = kind === "media";
  return defineConfig({
    plugins: [
      cloudflareTest(async (ctx) => ({
        wrangler: { configPath: "./wrangler.toml" },
        main: "./test/worker-entry.ts",
        miniflare: {
          // MediaRunner lives in the media Worker in production (script_name): here, in this script.
          durableObjects: { MEDIA_RUNNER: "MediaRunner", BRAND_SCHEDULER: "BrandScheduler" },
          // The media Worker's FONTS assets binding, served from the same folder.
          serviceBindings: {
            FONTS: async (request: Request) => {
              const file = path.basename(new URL(request.url).pathname);
              try {
                return new Response(await readFile(path.join(import.meta.dirname, "assets/fonts", file)));
              } catch {
                return new Response("Not found", { status: 404 });
              }
            },
          },
          bindings: {
            TEST_MIGRATIONS: await readD1Migrations(path.join(import.meta.dirname, "migrations")),
            // The fixture server started by test/global-setup.ts (loopback only).
            FIXTURE_BASE_URL: ctx.inject<string>("fixtureBaseUrl"),
            ADMIN_TOKEN: "test-admin-token",
            BACKEND_SECRET: "test-backend-secret",
            ALLOW_PRIVATE_URLS: "false",
            DNS_RESOLVER_URL: `${ctx.inject<string>("fixtureBaseUrl")}/dns-query`,
            AUTH_SECRET: "test-auth-secret",
            // Job webhooks: the key every account's signing secret derives from; retries in seconds.
            WEBHOOK_SIGNING_KEY: "test-webhook-signing-key",
            WEBHOOK_RETRY_SCHEDULE: "1,1",
            DEV_MODE: "true",
            SIGNUP_CREDITS: "100",
            STRIPE_SECRET_KEY: "sk_test_workers",
            STRIPE_WEBHOOK_SECRET: "whsec_test_workers",
            // The local Stripe started by test/global-setup.ts (no webhook target: tests sign events themselves).
            STRIPE_API_BASE: ctx.inject<string>("stripeBaseUrl"),
            // Publishers reach the local Mastodon and webhook receivers on loopback (URL uploads keep the SSRF rules).
            PUBLISH_ALLOW_PRIVATE_URLS: "true",
            // test/routes/fuzz.test.ts: the corpus's seed and size (npm run fuzz raises the size).
            FUZZ_SEED: process.env.FUZZ_SEED ?? "20261123",
            FUZZ_PER_OPERATION: process.env.FUZZ_PER_OPERATION ?? "40",
          },
        },
      })),
    ],
    test: {
      name: media ? "workers-media" : "workers",
      globalSetup: ["./test/global-setup.ts"],
      setupFiles: ["./test/apply-migrations.ts", ...(media ? [] : ["./test/fast-setup.ts"])],
      include: media ? WASM_MEDIA_FILES : ["test/**/*.test.ts"],
      exclude: media ? [] : ["test/e2e/**", "test/repo/**", ...WASM_MEDIA_FILES],
      isolate: media,
      // One shared workerd runs with its own worker count; Vitest runs such a project in a group of
      // its own, after the others (groupOrder), rather than beside projects with another count.
      ...(media ? {} : { sequence: { groupOrder: 1 } }),
      fsModuleCache: false,
      testTimeout: 60_000,
      hookTimeout: 120_000,
    },
  });
}

export default workersProject("shared");
