/**
 * The D1 wrapper every entry uses: statements and batches pass through to the real binding
 * (drizzle included), and an error that means "not executed" (SQLITE_BUSY, as two local Workers
 * writing one SQLite file produce) is retried, while any other error is not.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { resilientD1 } from "../../src/db/resilient-d1";

/** The real binding, whose batch() first fails `failures` times with the given D1 error. */
function flaky(message: string, failures: number): { db: D1Database; calls: () => number } {
  let calls = 0;
  const db = new Proxy(env.DB, {
    get(target, property) {
      if (property === "batch") {
        return (statements: D1PreparedStatement[]) =>
          ++calls <= failures ? Promise.reject(new Error(message)) : target.batch(statements);
      }
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { db, calls: () => calls };
}

describe("resilientD1", () => {
  it("passes statements, bindings and batches through to D1", async () => {
    const db = resilientD1(env.DB);
    await db.prepare("CREATE TABLE IF NOT EXISTS resilient_probe (id INTEGER PRIMARY KEY, v TEXT)").run();
    await db.batch([
      db.prepare("INSERT INTO resilient_probe (v) VALUES (?)").bind("a"),
      db.prepare("INSERT INTO resilient_probe (v) VALUES (?)").bind("b"),
    ]);
    const rows = await db.prepare("SELECT v FROM resilient_probe ORDER BY id").all<{ v: string }>();
    expect(rows.results.map((r) => r.v)).toEqual(["a", "b"]);
    expect(await db.prepare("SELECT COUNT(*) AS n FROM resilient_probe").first("n")).toBe(2);
  });

  it("retries a batch that D1 did not execute because the database was busy", async () => {
    const { db: busy, calls } = flaky("D1_ERROR: database is locked: SQLITE_BUSY", 2);
    const db = resilientD1(busy);
    await db.prepare("CREATE TABLE IF NOT EXISTS resilient_retry (id INTEGER PRIMARY KEY, v TEXT)").run();
    await db.batch([db.prepare("INSERT INTO resilient_retry (v) VALUES (?)").bind("once")]);
    expect(calls()).toBe(3);
    expect(await db.prepare("SELECT COUNT(*) AS n FROM resilient_retry").first("n")).toBe(1);
  });

  it("does not retry other errors", async () => {
    const { db: broken, calls } = flaky("D1_ERROR: UNIQUE constraint failed: x.id", 5);
    await expect(resilientD1(broken).batch([env.DB.prepare("SELECT 1")])).rejects.toThrow(/UNIQUE/);
    expect(calls()).toBe(1);
  });
});
