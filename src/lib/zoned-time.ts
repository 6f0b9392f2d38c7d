/**
 * Wall-clock times in a named time zone (what a social media manager types: "2026-12-01T09:30"
 * for the brand's zone) to and from UTC instants, with the runtime's Intl time-zone data.
 */
const LOCAL = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/;

export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** The wall-clock parts of `instant` in `zone`, as if they were UTC (ms). */
function wallClockAsUtc(instant: number, zone: string): number {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-US", { timeZone: zone, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit" })
      .formatToParts(new Date(instant))
      .map((p) => [p.type, p.value]),
  );
  return Date.UTC(Number(parts.year), Number(parts.month) - 1, Number(parts.day), Number(parts.hour), Number(parts.minute), Number(parts.second));
}

/**
 * UTC ms of a local time in `zone`. An ISO string with an offset or `Z` is taken as it is. In a
 * gap (spring forward) the time moves forward by the gap; in an overlap the earlier one wins.
 */
export function zonedToUtc(local: string, zone: string): number | null {
  if (/(?:Z|[+-]\d{2}:?\d{2})$/.test(local)) {
    const instant = Date.parse(local);
    return Number.isNaN(instant) ? null : instant;
  }
  const match = LOCAL.exec(local);
  if (!match) return null;
  const [, y, mo, d, h, mi, s] = match;
  const asUtc = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s ?? 0));
  if (Number.isNaN(asUtc)) return null;
  let guess = asUtc - (wallClockAsUtc(asUtc, zone) - asUtc);
  // A second pass settles the offset when the first guess crossed a transition.
  guess = asUtc - (wallClockAsUtc(guess, zone) - guess);
  return guess;
}

/** `2026-12-01T09:30` in `zone`. */
export function utcToZoned(instant: number, zone: string): string {
  return new Date(wallClockAsUtc(instant, zone)).toISOString().slice(0, 16);
}
