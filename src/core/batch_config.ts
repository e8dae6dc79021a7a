/**
 * @module The `batches` section of the config: the bounds on one batch, whichever path it takes, and how the
 * batches the gateway runs itself are run.
 */
import { z } from "zod";

/** Bounds on one batch; a batch past either is refused whole with a 413, before anything is made upstream. */
export const BatchesSchema = z.strictObject({
  /** Requests in one batch (Anthropic's own bound is 100,000; OpenAI's 50,000 lines). */
  max_requests: z.number().int().min(1).max(100_000).default(100_000),
  /** Bytes of one batch: an Anthropic create body, or an OpenAI input file (Anthropic's bound is 256 MB). */
  max_bytes: z.number().int().min(1024).max(512 * 1024 * 1024).default(256 * 1024 * 1024),
  /** Requests of gateway-run batches one instance runs at once. */
  concurrency: z.number().int().min(1).max(256).default(8),
  /** How long a claimed request of a gateway-run batch is its instance's; renewed while it runs. */
  lease_ms: z.number().int().min(1000).max(600_000).default(30_000),
  /** How often an idle instance looks for gateway-run requests to claim. */
  poll_ms: z.number().int().min(50).max(60_000).default(1000),
  /**
   * How often each instance asks the providers about the native batches whose usage is not counted yet (each such
   * batch is asked about once per interval, by one instance), and how many it asks about in one sweep at most.
   */
  sweep_ms: z.number().int().min(1000).max(3_600_000).default(60_000),
  sweep_batches: z.number().int().min(1).max(1000).default(50),
});

/** The bounds as configured. */
export type BatchesConfig = z.infer<typeof BatchesSchema>;
