/** @module The batch and file endpoints the app's table holds: both Files APIs and both providers' batch APIs. */
import type { Endpoint } from "../handlers/context.ts";
import { ANTHROPIC_BATCH_ENDPOINTS } from "./anthropic_batches.ts";
import { FILE_ENDPOINTS } from "./files.ts";
import { OPENAI_BATCH_ENDPOINTS } from "./openai_batches.ts";

/** Every batch and file endpoint. */
export const BATCH_ENDPOINTS: readonly Endpoint[] = [
  ...ANTHROPIC_BATCH_ENDPOINTS,
  ...OPENAI_BATCH_ENDPOINTS,
  ...FILE_ENDPOINTS,
];
