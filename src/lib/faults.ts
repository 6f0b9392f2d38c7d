/**
 * Faults injected by configuration for the soak campaign (bench/soak.ts): each FAULT_* variable
 * is a probability per event, unset (0) everywhere but in the campaign's local stack.
 */
export function faultFires(rate: string | undefined, kind: string): boolean {
  const probability = Number(rate ?? 0);
  const fires = Number.isFinite(probability) && probability > 0 && Math.random() < probability;
  // The campaign counts the faults it caused from this line.
  if (fires) console.log(`fault injected: ${kind}`);
  return fires;
}

/** The bucket, with its writes failing at FAULT_R2_PUT_FAIL_RATE as an R2 outage would make them fail. */
export function withFailingWrites(bucket: R2Bucket, rate: string | undefined): R2Bucket {
  if (!(Number(rate ?? 0) > 0)) return bucket;
  return new Proxy(bucket, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (property !== "put" || typeof value !== "function")
        return typeof value === "function" ? value.bind(target) : value;
      return (...args: Parameters<R2Bucket["put"]>) => {
        if (faultFires(rate, "r2-put-failed"))
          return Promise.reject(new Error("R2 write failed (FAULT_R2_PUT_FAIL_RATE)"));
        return target.put(...args);
      };
    },
  });
}
