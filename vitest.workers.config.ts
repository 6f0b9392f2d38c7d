import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { readFile } from "node:fs/promises";
import path from "node:path";

export default defineConfig({
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
    name: "workers",
    globalSetup: ["./test/global-setup.ts"],
    setupFiles: ["./test/apply-migrations.ts"],
    include: ["test/**/*.test.ts"],
    exclude: ["test/e2e/**", "test/repo/**"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
