/**
 * Wall-clock times in a named time zone (what a social media manager types: "2026-12-01T09:30"
 * for the brand's zone) to and from UTC instants, with the runtime's Intl time-zone data.
 */
const LOCAL = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,3})?)?$/;

/**
 * Names the runtime's time-zone data (ICU, which follows CLDR) gives for zones IANA has renamed
 * since, with IANA's current name: Intl resolves "Asia/Kolkata" to "Asia/Calcutta" and
 * "Europe/Kyiv" to "Europe/Kiev". Found by resolving every zone of tzdata 2025b in workerd;
 * should a later runtime spell them the new way, these entries simply stop matching.
 */
const RENAMED = new Map([
  ["Africa/Asmera", "Africa/Asmara"],
  ["America/Buenos_Aires", "America/Argentina/Buenos_Aires"],
  ["America/Catamarca", "America/Argentina/Catamarca"],
  ["America/Coral_Harbour", "America/Atikokan"],
  ["America/Cordoba", "America/Argentina/Cordoba"],
  ["America/Godthab", "America/Nuuk"],
  ["America/Indianapolis", "America/Indiana/Indianapolis"],
  ["America/Jujuy", "America/Argentina/Jujuy"],
  ["America/Louisville", "America/Kentucky/Louisville"],
  ["America/Mendoza", "America/Argentina/Mendoza"],
  ["Asia/Calcutta", "Asia/Kolkata"],
  ["Asia/Katmandu", "Asia/Kathmandu"],
  ["Asia/Rangoon", "Asia/Yangon"],
  ["Asia/Saigon", "Asia/Ho_Chi_Minh"],
  ["Atlantic/Faeroe", "Atlantic/Faroe"],
  ["Europe/Kiev", "Europe/Kyiv"],
  ["Pacific/Enderbury", "Pacific/Kanton"],
  ["Pacific/Ponape", "Pacific/Pohnpei"],
  ["Pacific/Truk", "Pacific/Chuuk"],
]);

/**
 * The zone's canonical IANA name ("europe/paris" -> "Europe/Paris", "US/Eastern" ->
 * "America/New_York", "asia/kolkata" -> "Asia/Kolkata"), or null when it is no time zone. Intl
 * takes any letter case, so without this a zone would be stored and shown as it was typed.
 */
export function canonicalTimeZone(zone: string): string | null {
  let resolved: string;
  try {
    resolved = new Intl.DateTimeFormat("en-US", { timeZone: zone }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
  return RENAMED.get(resolved) ?? resolved;
}

/** The wall-clock parts of `instant` in `zone`, as if they were UTC (ms). */
function wallClockAsUtc(instant: number, zone: string): number {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    })
      .formatToParts(new Date(instant))
      .map((p) => [p.type, p.value]),
  );
  return Date.UTC(
    Number(parts.year),
    Number(parts.month) - 1,
    Number(parts.day),
    Number(parts.hour),
    Number(parts.minute),
    Number(parts.second),
  );
}

const DAY_MS = 86_400_000;

/** The clock fields as written, if they name a real calendar time (no 30 February, no 24:30). */
function exactUtc(y: string, mo: string, d: string, h: string, mi: string, s: string | undefined): number | null {
  const asUtc = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s ?? 0));
  const back = new Date(asUtc);
  const same =
    back.getUTCFullYear() === Number(y) &&
    back.getUTCMonth() === Number(mo) - 1 &&
    back.getUTCDate() === Number(d) &&
    back.getUTCHours() === Number(h) &&
    back.getUTCMinutes() === Number(mi);
  return Number.isNaN(asUtc) || !same || Number(s ?? 0) > 59 ? null : asUtc;
}

/**
 * UTC ms of a local time in `zone`, null when it is no calendar time. An ISO string with an
 * offset or `Z` is taken as it is. In a gap (spring forward) the time moves forward by the gap
 * (02:30 that does not exist is 03:30 in the new offset's terms); in an overlap (fall back) the
 * earlier of the two instants wins.
 */
export function zonedToUtc(local: string, zone: string): number | null {
  const offset = /^(.*?)(Z|[+-]\d{2}:?\d{2})$/.exec(local);
  const match = LOCAL.exec(offset ? offset[1]! : local);
  if (!match) return null;
  const [, y, mo, d, h, mi, s] = match;
  const asUtc = exactUtc(y!, mo!, d!, h!, mi!, s);
  if (asUtc === null) return null;
  if (offset) {
    const instant = Date.parse(local);
    return Number.isNaN(instant) ? null : instant;
  }
  // The zone's offsets a day either side: one offset, or the two around a transition.
  const offsetAt = (instant: number) => wallClockAsUtc(instant, zone) - instant;
  const before = offsetAt(asUtc - DAY_MS);
  const after = offsetAt(asUtc + DAY_MS);
  const fits = [...new Set([before, after])]
    .map((o) => asUtc - o)
    .filter((instant) => wallClockAsUtc(instant, zone) === asUtc);
  if (fits.length > 0) return Math.min(...fits);
  // A gap: the clock jumped over this time; read it with the offset in force before the jump.
  return asUtc - before;
}

/** `2026-12-01T09:30` in `zone`. */
export function utcToZoned(instant: number, zone: string): string {
  return new Date(wallClockAsUtc(instant, zone)).toISOString().slice(0, 16);
}
