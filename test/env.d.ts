import type { D1Migration } from "cloudflare:test";
import type { Env as WorkerEnv } from "../src/env";

declare global {
  namespace Cloudflare {
    interface Env extends WorkerEnv {
      TEST_MIGRATIONS: D1Migration[];
      FIXTURE_BASE_URL: string;
    }
    interface GlobalProps {
      mainModule: typeof import("../src/index");
      durableNamespaces: "MediaRunner";
    }
  }
}

declare module "vitest" {
  interface ProvidedContext {
    fixtureBaseUrl: string;
    stripeBaseUrl: string;
    mastodonBaseUrl: string;
    blueskyBaseUrl: string;
    hookBaseUrl: string;
  }
}
export {};
