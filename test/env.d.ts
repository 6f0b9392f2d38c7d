import type { D1Migration } from "cloudflare:test";

declare global {
  namespace Cloudflare {
    interface Env {
      TEST_MIGRATIONS: D1Migration[];
      FIXTURE_BASE_URL: string;
    }
  }
}

declare module "vitest" {
  interface ProvidedContext {
    fixtureBaseUrl: string;
  }
}
export {};
