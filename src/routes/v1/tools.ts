/**
 * The ten tool endpoints. They share one shape (JSON body validated by the tool's schema,
 * job envelope answer), so one route definition per tool is generated from the catalogue.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { createRouter } from "../../http";
import { pickErrors } from "../../errors";
import { createToolJob } from "../../services/jobs";
import type { ToolName } from "../../services/pricing";
import { toolParams } from "../../tools/schemas";
import { JobEnvelopeSchema } from "./schemas";

const summaries: Record<ToolName, string> = {
  subtitles: "Burn styled subtitles into a video (automatic transcription or srtContent)",
  transcribe: "Transcribe speech to plain text or SRT",
  "clean-audio": "Remove background noise and improve the voice",
  "extract-audio": "Extract the audio track as mp3, wav or aac",
  convert: "Convert to mp4, webm, mov, avi or mkv",
  merge: "Merge 2 to 20 videos in the given order",
  watermark: "Add an image or text watermark, tiled (fixe) or moving (flottant)",
  trim: "Extract the segment from start to end (seconds)",
  "text-to-speech": "Generate a .wav file from text",
  "voice-change": "Replace the voice of a video with a catalogue or cloned voice",
};

const IdempotencyHeader = z.object({
  "idempotency-key": z.string().optional().openapi({
    description: "Replays the first response of the same body within 24 h without a new debit; a different body answers 400",
  }),
});

export function toolRoutes() {
  const router = createRouter();
  for (const tool of Object.keys(toolParams) as ToolName[]) {
    const schema = toolParams[tool];
    const route = createRoute({
      method: "post",
      path: `/${tool}`,
      tags: ["Tools"],
      summary: summaries[tool],
      security: [{ ApiKey: [] }],
      request: {
        headers: IdempotencyHeader,
        body: { required: true, content: { "application/json": { schema } } },
      },
      responses: {
        200: { description: "Job queued; credits debited", content: { "application/json": { schema: JobEnvelopeSchema } } },
        ...pickErrors(400, 401, 402, 500),
      },
    });
    router.openapi(route, async (c) => {
      const params = c.req.valid("json") as never;
      const envelope = await createToolJob(
        c.env,
        c.get("caller"),
        { tool, params, idempotencyKey: c.req.header("idempotency-key") },
        Date.now(),
      );
      return c.json(envelope, 200);
    });
  }
  return router;
}
