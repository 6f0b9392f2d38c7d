import { defineConfig } from "drizzle-kit";

// Flat NNNN_name.sql files in migrations/, applied by wrangler (d1 migrations apply) and tests.
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/db/schema.ts",
  out: "./migrations",
});
