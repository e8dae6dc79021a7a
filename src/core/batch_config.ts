/** @module The `batches` section of the config: the bounds on one batch, whichever path it takes. */
import { z } from "zod";

/** Bounds on one batch; a batch past either is refused whole with a 413, before anything is made upstream. */
export const BatchesSchema = z.strictObject({
  /** Requests in one batch (Anthropic's own bound is 100,000; OpenAI's 50,000 lines). */
  max_requests: z.number().int().min(1).max(100_000).default(100_000),
  /** Bytes of one batch: an Anthropic create body, or an OpenAI input file (Anthropic's bound is 256 MB). */
  max_bytes: z.number().int().min(1024).max(512 * 1024 * 1024).default(256 * 1024 * 1024),
});

/** The bounds as configured. */
export type BatchesConfig = z.infer<typeof BatchesSchema>;
