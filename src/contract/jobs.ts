/**
 * A tool call's answer (the job envelope) and a job's status, declared once: REST answers them
 * (src/routes/v1/tools.ts, jobs.ts) and the connector's tools return them (src/mcp/server.ts),
 * the connector's job view being REST's with an absolute download address.
 */
import { z } from "@hono/zod-openapi";
import { toolNames, type ToolName } from "../tools";

export const jobStates = ["queued", "processing", "completed", "failed"] as const;

export const stepStates = ["queued", "processing", "completed", "failed", "skipped"] as const;

export const JobStepSchema = z
  .object({
    tool: z.enum(toolNames as [ToolName, ...ToolName[]]),
    status: z.enum(stepStates).openapi({
      description:
        "skipped: the pipeline ended (failed or cancelled) before this step ran; a failed pipeline is refunded in full",
    }),
    creditsUsed: z.int(),
    engine: z
      .enum(["wasm", "backend"])
      .optional()
      .openapi({ description: "Where the step ran: ffmpeg.wasm in the Worker, or the processing backend" }),
    startedAt: z.string().optional().openapi({ description: "ISO 8601" }),
    finishedAt: z.string().optional().openapi({ description: "ISO 8601" }),
    error: z.string().optional(),
  })
  .openapi("JobStep");
export type JobStep = z.output<typeof JobStepSchema>;

export const JobEnvelopeSchema = z
  .object({
    jobId: z.string().openapi({ description: "Used in GET /api/v1/jobs/{id}" }),
    status: z.literal("queued"),
    creditsUsed: z.int().openapi({ description: "Credits debited by this call" }),
    creditsRemaining: z.int().openapi({ description: "Balance after the debit" }),
    estimatedSeconds: z.int().openapi({ description: "Indicative estimate (>= 1); never affects billing" }),
  })
  .openapi("JobEnvelope");
export type JobEnvelope = z.output<typeof JobEnvelopeSchema>;

const LoudnessFiguresSchema = z
  .object({
    integrated: z.number().openapi({ description: "Integrated loudness, LUFS (EBU R128)", example: -16 }),
    truePeak: z.number().openapi({ description: "True peak, dBTP", example: -1.5 }),
    lra: z.number().openapi({ description: "Loudness range, LU", example: 6.2 }),
  })
  .openapi("LoudnessFigures");

/** clean-audio's measurements, with its result (packages/wire/src/audio-report.ts measures them on both engines). */
export const AudioResultSchema = z
  .object({
    loudness: z
      .object({
        before: LoudnessFiguresSchema.nullable().openapi({
          description: "The source's audio; null when it holds too little sound to measure (under 0.4 s, or silence)",
        }),
        after: LoudnessFiguresSchema.nullable().openapi({ description: "The result's audio" }),
      })
      .openapi({ description: "Measured with ffmpeg's EBU R128 meter (one decimal)" }),
    silence: z
      .object({
        removedSeconds: z.number().openapi({ description: "Seconds cut from the result", example: 4.2 }),
        cuts: z
          .array(
            z.object({
              start: z.number().openapi({ description: "Seconds into the source where the cut span starts" }),
              end: z.number().openapi({ description: "Seconds into the source where it ends" }),
            }),
          )
          .openapi({ description: "The spans cut, in the source's time, in order" }),
      })
      .optional()
      .openapi({ description: "Present when the call asked for removeSilence" }),
  })
  .openapi("AudioResult");
export type AudioResult = z.output<typeof AudioResultSchema>;

export const JobStatusSchema = z
  .object({
    jobId: z.string(),
    status: z.enum(jobStates),
    progress: z.null().openapi({ description: "Always null in v1" }),
    result: z
      .object({
        url: z.string().openapi({
          description:
            "Relative download path /api/download/<id>; prefix with the base URL. No Authorization needed; Range supported.",
        }),
        filename: z.string(),
        audio: AudioResultSchema.optional().openapi({
          description: "clean-audio's measurements: loudness before and after, and the pauses removed",
        }),
      })
      .optional()
      .openapi({ description: "Present when the job has a result" }),
    error: z
      .string()
      .optional()
      .openapi({ description: "Present only when status is failed; the credits were refunded" }),
    steps: z
      .array(JobStepSchema)
      .optional()
      .openapi({ description: "A pipeline's steps in order, each with its state (POST /api/v1/pipelines)" }),
  })
  .openapi("JobStatus");
export type JobStatus = z.output<typeof JobStatusSchema>;

/** A job as the connector shows it: REST's status, the result as an absolute downloadUrl. */
export const ConnectorJobSchema = z.object({
  jobId: z.string(),
  status: z.enum(jobStates),
  downloadUrl: z.string().optional(),
  filename: z.string().optional(),
  audio: AudioResultSchema.optional(),
  error: z.string().optional(),
  steps: z.array(JobStepSchema).optional(),
});

/** REST's job status in the connector's shape (`origin` prefixes the download path). */
export function connectorJobView(
  job: {
    jobId: string;
    status: (typeof jobStates)[number];
    result?: { url: string; filename: string; audio?: AudioResult };
    error?: string;
    steps?: JobStep[];
  },
  origin: string,
) {
  return {
    jobId: job.jobId,
    status: job.status,
    ...(job.result ? { downloadUrl: `${origin}${job.result.url}`, filename: job.result.filename } : {}),
    ...(job.result?.audio ? { audio: job.result.audio } : {}),
    ...(job.error ? { error: job.error } : {}),
    ...(job.steps ? { steps: job.steps } : {}),
  };
}
