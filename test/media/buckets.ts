/** Stand-ins for R2 buckets that record what a probe reads. */

export interface RecordingBucket {
  bucket: R2Bucket;
  /** Byte length of every get, in order. */
  reads: number[];
}

export function totalBytes(reads: number[]): number {
  return reads.reduce((sum, length) => sum + length, 0);
}

/** Delegates to a real bucket and records the length of each body read through arrayBuffer(). */
export function recordingBucket(inner: R2Bucket): RecordingBucket {
  const reads: number[] = [];
  const get = async (key: string, options?: R2GetOptions) => {
    const object = await inner.get(key, options);
    if (object === null) return null;
    return new Proxy(object, {
      get(target, property) {
        if (property === "arrayBuffer") {
          return async () => {
            const data = await target.arrayBuffer();
            reads.push(data.byteLength);
            return data;
          };
        }
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  };
  return { bucket: { get } as unknown as R2Bucket, reads };
}

/**
 * A bucket whose single object is computed on demand, to probe objects of gigabytes without
 * storing them. Only ranged gets are supported, which is all the prober issues.
 */
export function virtualBucket(size: number, bytesAt: (offset: number, length: number) => Uint8Array): RecordingBucket {
  const reads: number[] = [];
  const get = async (_key: string, options?: R2GetOptions) => {
    const range = options?.range;
    if (!range || !("offset" in range) || range.offset === undefined || range.length === undefined) {
      throw new Error("virtualBucket serves ranged gets with offset and length only");
    }
    const data = bytesAt(range.offset, range.length);
    reads.push(data.byteLength);
    return { size, range, arrayBuffer: async () => data.slice().buffer };
  };
  return { bucket: { get } as unknown as R2Bucket, reads };
}
