/**
 * Typed access to D1 through drizzle. Row types come from the schema (`$inferSelect`), so a
 * column added to src/db/schema.ts reaches every reader. Money movements stay hand-written
 * SQL batches (credits.ts): their guards are clearer as SQL.
 */
import { drizzle } from "drizzle-orm/d1";
import * as schema from "./schema";

export const orm = (db: D1Database) => drizzle(db, { schema });

export type Job = typeof schema.jobs.$inferSelect;
export type Upload = typeof schema.uploads.$inferSelect;
export type ClonedVoice = typeof schema.clonedVoices.$inferSelect;
