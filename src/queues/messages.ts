import { z } from "zod";

/** The jobs queue carries only a job id; everything else is read from D1. */
export const JobMessageSchema = z.object({ jobId: z.string().regex(/^job_[0-9A-Z]{26}$/) });
