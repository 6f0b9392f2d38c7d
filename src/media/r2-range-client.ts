import type { IHeadRequestInfo, IRangeRequestClient, IRangeRequestResponse } from "@tokenizer/range";

export interface ReadLimits {
  /** Bytes one probe may fetch in total. */
  maxBytes: number;
  /** Ranged gets one probe may issue (each is an R2 operation and a subrequest). */
  maxRequests: number;
  /** Largest single read issued for a forward scan. */
  maxReadAhead: number;
}

/** A parser wanted more of the object than a probe may read. */
export class ReadLimitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ReadLimitError";
  }
}

/**
 * Serves @tokenizer/range from an R2 object.
 *
 * The tokenizer only calls getResponse() on a cache miss, with an inclusive [start, end] range, and
 * stores whatever bytes come back at `start`; returning more than asked for is therefore a valid
 * read-ahead. Reads that continue a forward scan (MP3/ADTS frame counting) double in size, so a
 * scan costs a handful of gets instead of one per frame, while isolated seeks (the moov at the
 * end of a file) fetch only what was asked for.
 */
export class R2RangeClient implements IRangeRequestClient {
  private bytesRead = 0;
  private requests = 0;
  /** First failed read. Some parsers swallow read errors as warnings, so the prober re-checks this. */
  failure: unknown;
  private last: { offset: number; length: number } | undefined;

  constructor(
    private readonly bucket: R2Bucket,
    private readonly key: string,
    private readonly size: number,
    private readonly limits: ReadLimits,
  ) {}

  async getHeadInfo(): Promise<IHeadRequestInfo> {
    // The size is known from the upload, so the tokenizer needs no HEAD or probing GET.
    return { size: this.size, acceptPartialRequests: true };
  }

  async getResponse(_method: string, range?: [number, number]): Promise<IRangeRequestResponse> {
    const [start, end] = range ?? [0, this.size - 1];
    const data = await this.read(start, end - start + 1);
    return {
      size: this.size,
      acceptPartialRequests: true,
      contentRange: {
        firstBytePosition: start,
        lastBytePosition: start + data.byteLength - 1,
        instanceLength: this.size,
      },
      arrayBuffer: async () => data,
    };
  }

  abort(): void {
    // Reads are single awaited gets; there is nothing in flight to cancel.
  }

  private async read(offset: number, requested: number): Promise<Uint8Array> {
    try {
      const length = this.plan(offset, Math.min(requested, this.size - offset));
      this.requests++;
      this.bytesRead += length;
      this.last = { offset, length };
      const object = await this.bucket.get(this.key, { range: { offset, length } });
      if (!object) throw new Error(`R2 object ${this.key} disappeared while it was being probed`);
      if (object.size !== this.size)
        throw new Error(`R2 object ${this.key} is ${object.size} bytes, expected ${this.size}`);
      const data = new Uint8Array(await object.arrayBuffer());
      if (data.byteLength !== length)
        throw new Error(`R2 returned ${data.byteLength} bytes for a ${length}-byte range`);
      return data;
    } catch (error) {
      this.failure ??= error;
      throw error;
    }
  }

  /** Length to fetch at `offset`: at least `requested`, more when the read continues a forward scan. */
  private plan(offset: number, requested: number): number {
    if (this.requests >= this.limits.maxRequests) {
      throw new ReadLimitError(`more than ${this.limits.maxRequests} reads would be needed`);
    }
    const budget = this.limits.maxBytes - this.bytesRead;
    if (requested > budget)
      throw new ReadLimitError(`more than ${this.limits.maxBytes / 2 ** 20} MiB would have to be read`);
    const last = this.last;
    const continuesScan = last !== undefined && offset > last.offset && offset <= last.offset + 2 * last.length;
    const readAhead = continuesScan ? Math.min(2 * last.length, this.limits.maxReadAhead) : 0;
    return Math.min(Math.max(requested, readAhead), this.size - offset, budget);
  }
}
