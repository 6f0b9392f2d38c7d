/**
 * What one account may hold or start, in one table: the numbers the services enforce and the
 * documentation (docs/security.md) and the OpenAPI description quote. Test keys run real jobs
 * for free, so what they can make is bounded per call and per account and day; keys are bounded
 * per account so that nobody multiplies the per-key rate limits by making keys.
 */
export const accountLimits = {
  /** API keys (live and test) an account may have unrevoked at once. */
  activeKeys: 20,
  /** Test-mode jobs per account and UTC day. */
  testJobsPerDay: 50,
  /** Media a test-mode call may process (billed duration: a trim's segment, a merge's sum). */
  testMediaSeconds: 120,
  /** Characters a test-mode text-to-speech call may speak. */
  testCharacters: 1000,
  /** Saved pipeline templates per account. */
  templates: 100,
} as const;

/** Days since 1970-01-01 in UTC, the unit of the daily counters. */
export const utcDay = (now: number) => Math.floor(now / 86_400_000);

/** Seconds until the next UTC midnight, when the daily counters start again. */
export const secondsToNextUtcDay = (now: number) =>
  Math.max(1, Math.ceil(((utcDay(now) + 1) * 86_400_000 - now) / 1000));
