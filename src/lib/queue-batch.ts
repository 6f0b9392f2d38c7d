/**
 * A queue batch handled message by message, side by side: one slow message must not hold back
 * the others. A body that does not parse is dropped (acknowledged) with a log line; what the
 * handler does with the message (ack, retry) is its own business.
 */
import type { z } from "zod";

export async function eachMessage<T>(
  batch: MessageBatch<unknown>,
  schema: z.ZodType<T>,
  kind: string,
  handle: (body: T, message: Message<unknown>) => Promise<void>,
): Promise<void> {
  await Promise.all(
    batch.messages.map(async (message) => {
      const parsed = schema.safeParse(message.body);
      if (!parsed.success) {
        console.error(`dropping malformed ${kind} message`);
        message.ack();
        return;
      }
      await handle(parsed.data, message);
    }),
  );
}
