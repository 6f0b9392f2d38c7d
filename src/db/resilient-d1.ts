/**
 * D1 with retries of the errors that mean "not executed, try again": a busy or locked database
 * (two local Workers writing the same SQLite file; found by the soak campaign as 1.6 % of tool
 * calls answering 500), D1's "overloaded" and "object reset" answers in production. Other errors,
 * and any that may have been applied (a lost connection), are not retried. Used on every entry
 * (fetch, queue, cron, Durable Objects), so services keep using `env.DB` as is.
 */
const NOT_EXECUTED = /SQLITE_BUSY|database is locked|overloaded|object to be reset/i;
// A busy local database is held by a write of a millisecond or two, so the first retries come
// soon (starting at 20 ms made them the p99 of tool calls); the later ones still give a
// production D1 that says it is overloaded about 1.8 s in all (1.6 s before).
const DELAYS_MS = [3, 6, 12, 25, 50, 100, 200, 400, 1000];

async function retrying<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      const delay = DELAYS_MS[attempt];
      if (delay === undefined || !(error instanceof Error) || !NOT_EXECUTED.test(error.message)) throw error;
      await new Promise((resolve) => setTimeout(resolve, delay * (0.5 + Math.random())));
    }
  }
}

/** batch() must receive the binding's own statements: proxies map back to them. */
const originals = new WeakMap<object, D1PreparedStatement>();

function resilientStatement(statement: D1PreparedStatement): D1PreparedStatement {
  const proxy = new Proxy(statement, {
    get(target, property) {
      if (property === "bind") return (...values: unknown[]) => resilientStatement(target.bind(...values));
      if (property === "first" || property === "run" || property === "all" || property === "raw") {
        const method = target[property] as (...args: unknown[]) => Promise<unknown>;
        return (...args: unknown[]) => retrying(() => method.apply(target, args));
      }
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  originals.set(proxy, statement);
  return proxy;
}

export function resilientD1(db: D1Database): D1Database {
  if (originals.has(db)) return db;
  const proxy = new Proxy(db, {
    get(target, property) {
      if (property === "prepare") return (query: string) => resilientStatement(target.prepare(query));
      if (property === "batch")
        return (statements: D1PreparedStatement[]) =>
          retrying(() => target.batch(statements.map((s) => originals.get(s) ?? s)));
      if (property === "exec") return (query: string) => retrying(() => target.exec(query));
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  originals.set(proxy, db as unknown as D1PreparedStatement);
  return proxy;
}

/** The environment with its D1 binding made resilient. */
export function withResilientD1<E extends { DB: D1Database }>(env: E): E {
  return originals.has(env.DB) ? env : { ...env, DB: resilientD1(env.DB) };
}
