/**
 * One way to wait for what settles in the background (a job's end, a webhook delivered, a mail
 * in the outbox, a process listening), for the workerd, e2e and backend tests alike: no imports,
 * so it runs in workerd and in Node. A wait that gives up says what it last saw and why that did
 * not pass, instead of "still processing" or an assertion on a stale value.
 */

export interface EventuallyOptions {
  /** How long to keep reading, in ms, from the first read (default 20 s). */
  timeoutMs?: number;
  /** The pause between two reads, in ms (default 100). */
  intervalMs?: number;
  /** What is awaited, for the message on timeout ("job job_... to end"). */
  what?: string;
}

/**
 * Calls `read` until `check` accepts its value, and resolves with that value. `check` is a
 * predicate (`false`: not yet) or an assertion (throws: not yet; returns: done). An error thrown
 * by `read` itself is not retried: it ends the wait at once (catch inside `read` where failures
 * are expected, e.g. a server not listening yet). After `timeoutMs` it rejects with the last value
 * read and the last assertion error (also as `cause`).
 */
export async function eventually<T>(
  read: () => T | Promise<T>,
  check: (value: T) => boolean | void | Promise<boolean | void>,
  options: EventuallyOptions = {},
): Promise<T> {
  const { timeoutMs = 20_000, intervalMs = 100, what = "the condition" } = options;
  const deadline = Date.now() + timeoutMs;
  let reads = 0;
  for (;;) {
    const value = await read();
    reads++;
    let failure: unknown;
    try {
      if ((await check(value)) !== false) return value;
    } catch (error) {
      failure = error;
    }
    if (Date.now() >= deadline) {
      const why =
        failure === undefined
          ? ""
          : `\nlast assertion: ${failure instanceof Error ? failure.message : String(failure)}`;
      throw new Error(
        `eventually: ${what} not met within ${timeoutMs} ms (${reads} reads); last value: ${show(value)}${why}`,
        failure === undefined ? undefined : { cause: failure },
      );
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** A value as JSON, at most 2,000 characters. */
function show(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value, (_key, v: unknown) => (typeof v === "bigint" ? `${v}n` : v)) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 2000 ? `${text.slice(0, 2000)}... (${text.length} characters)` : text;
}
