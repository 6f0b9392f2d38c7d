/**
 * The fault campaign of bench/soak.ts, short (60 jobs, 4 accounts, faults at high rates), on its
 * own local stack: every job terminal, every failure refunded exactly once, balances equal to
 * the ledgers and to what the client expects, no orphan object after the cleanup run, no 5xx.
 * `npm run soak` runs the full campaign (2,000 jobs, 20 accounts).
 */
import { describe, expect, it } from "vitest";
import { runSoak, violations } from "../../bench/soak";

describe("fault campaign (short)", () => {
  it("keeps every credit and object accounted for under injected faults", async () => {
    const report = await runSoak({
      jobs: 60,
      accounts: 4,
      concurrency: 6,
      minutes: 6,
      killEverySeconds: 20,
      faults: {
        slow: 0.1,
        callbackDrop: 0.1,
        callbackDuplicate: 0.2,
        queueRedeliver: 0.3,
        runnerReset: 0.1,
        r2PutFail: 0.1,
      },
      log: () => {},
    });
    console.log(`soak (short): ${JSON.stringify(report)}`);
    expect(violations(report)).toEqual([]);
    expect(report.jobs).toBe(60);
    expect(report.completed).toBeGreaterThan(0);
    expect(report.failed).toBeGreaterThan(0);
    // The faults really happened.
    expect(report.faults["backend-killed"]).toBeGreaterThan(0);
    expect(report.faults["queue-redelivered"]).toBeGreaterThan(0);
    expect(report.faults["runner-reset"] + report.faults["r2-put-failed"]).toBeGreaterThan(0);
  }, 480_000);
});
