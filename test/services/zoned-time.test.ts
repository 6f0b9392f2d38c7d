import { describe, expect, it } from "vitest";
import { canonicalTimeZone, utcToZoned, zonedToUtc } from "../../src/lib/zoned-time";

const iso = (local: string, zone: string) => {
  const instant = zonedToUtc(local, zone);
  return instant === null ? null : new Date(instant).toISOString();
};

describe("zonedToUtc", () => {
  it("reads a brand's wall-clock time in its zone, and an ISO time with an offset as it is", () => {
    expect(iso("2026-06-01T09:30", "Europe/Paris")).toBe("2026-06-01T07:30:00.000Z");
    expect(iso("2026-12-01T09:30", "Europe/Paris")).toBe("2026-12-01T08:30:00.000Z");
    expect(iso("2026-06-01T09:30", "Asia/Kolkata")).toBe("2026-06-01T04:00:00.000Z");
    expect(iso("2026-06-01T09:30:00.000Z", "Europe/Paris")).toBe("2026-06-01T09:30:00.000Z");
    expect(iso("2026-06-01T09:30:00+02:00", "America/New_York")).toBe("2026-06-01T07:30:00.000Z");
    expect(utcToZoned(Date.parse("2026-06-01T07:30:00Z"), "Europe/Paris")).toBe("2026-06-01T09:30");
  });

  it("refuses times that are not on the calendar instead of rolling them over", () => {
    for (const local of [
      "2026-02-30T09:30",
      "2026-13-01T09:30",
      "2026-06-01T24:30",
      "2026-06-01T09:60",
      "2026-06-01T09:30:60",
      "2026-02-30T09:30Z",
      "tomorrow",
    ]) {
      expect(zonedToUtc(local, "Europe/Paris"), local).toBeNull();
    }
  });

  it("moves a time in a spring-forward gap forward by the gap, and takes the earlier instant in a fall-back overlap", () => {
    // Paris, 29 March 2026: 02:00 CET jumps to 03:00 CEST; 02:30 is read as 03:30 CEST.
    expect(iso("2026-03-29T02:30", "Europe/Paris")).toBe("2026-03-29T01:30:00.000Z");
    // New York, 8 March 2026: 02:30 does not exist; 03:30 EDT.
    expect(iso("2026-03-08T02:30", "America/New_York")).toBe("2026-03-08T07:30:00.000Z");
    // Paris, 25 October 2026: 02:30 happens twice; the first (CEST) is 00:30 UTC.
    expect(iso("2026-10-25T02:30", "Europe/Paris")).toBe("2026-10-25T00:30:00.000Z");
    // New York, 1 November 2026: 01:30 EDT comes first.
    expect(iso("2026-11-01T01:30", "America/New_York")).toBe("2026-11-01T05:30:00.000Z");
  });
});

describe("canonicalTimeZone", () => {
  it("gives an accepted zone its canonical IANA name, whatever the letter case; null for no zone", () => {
    expect(canonicalTimeZone("europe/paris")).toBe("Europe/Paris");
    expect(canonicalTimeZone("AMERICA/ARGENTINA/BUENOS_AIRES")).toBe("America/Argentina/Buenos_Aires");
    // ICU's older spellings of renamed zones come back as IANA's current names.
    expect(canonicalTimeZone("asia/kolkata")).toBe("Asia/Kolkata");
    expect(canonicalTimeZone("Asia/Calcutta")).toBe("Asia/Kolkata");
    expect(canonicalTimeZone("Europe/Kyiv")).toBe("Europe/Kyiv");
    expect(canonicalTimeZone("europe/kiev")).toBe("Europe/Kyiv");
    expect(canonicalTimeZone("US/Eastern")).toBe("America/New_York");
    expect(canonicalTimeZone("utc")).toBe("UTC");
    expect(canonicalTimeZone("Europe/Paris")).toBe("Europe/Paris");
    expect(canonicalTimeZone("Mars/Olympus")).toBeNull();
    expect(canonicalTimeZone("")).toBeNull();
  });
});
