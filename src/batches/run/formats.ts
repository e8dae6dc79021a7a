/**
 * @module A gateway-run batch in its client's protocol: Anthropic's message_batch and its result lines, OpenAI's batch
 * object and its output and error file lines, with the states and request counts
 * each protocol defines.
 */
import type { JsonObject } from "../../core/types.ts";
import type { RunBatch, RunCounts } from "./records.ts";

/** RFC 3339, as Anthropic writes times. */
const iso = (ms: number | undefined) => ms === undefined ? null : new Date(ms).toISOString();
/** Unix seconds, as OpenAI writes times. */
const unix = (ms: number | undefined) => ms === undefined ? null : Math.floor(ms / 1000);

/** How many of an ended batch's requests never got a result, and why. */
function unrun(batch: RunBatch, counts: RunCounts): { canceled: number; expired: number } {
  const left = batch.total - counts.succeeded - counts.errored;
  if (batch.state !== "ended") return { canceled: 0, expired: 0 };
  return batch.end === "expired" ? { canceled: 0, expired: left } : { canceled: left, expired: 0 };
}

/**
 * Anthropic's message_batch. Its counts other than `processing` stay 0 until the whole batch has ended; the sum is
 * always the request total. `results_url` is the gateway's own, and null until the batch has ended.
 */
export function anthropicBatch(batch: RunBatch, counts: RunCounts, baseUrl: string): JsonObject {
  const ended = batch.state === "ended";
  const final = batch.counts ?? counts;
  const { canceled, expired } = unrun(batch, final);
  return {
    id: batch.id,
    type: "message_batch",
    processing_status: batch.state,
    request_counts: ended
      ? { processing: 0, succeeded: final.succeeded, errored: final.errored, canceled, expired }
      : { processing: batch.total, succeeded: 0, errored: 0, canceled: 0, expired: 0 },
    ended_at: iso(batch.ended_at),
    created_at: iso(batch.created_at),
    expires_at: iso(batch.expires_at),
    archived_at: null,
    cancel_initiated_at: iso(batch.cancel_requested_at),
    results_url: ended ? `${baseUrl}/v1/messages/batches/${batch.id}/results` : null,
  };
}

/** OpenAI's batch status for a batch's state and end. */
function openaiStatus(batch: RunBatch): string {
  if (batch.state === "in_progress") return "in_progress";
  if (batch.state === "canceling") return "cancelling";
  return batch.end === "completed" ? "completed" : batch.end === "canceled" ? "cancelled" : "expired";
}

/**
 * OpenAI's batch object. Its counts move as results come in: `completed` the requests answered with a 2xx, `failed`
 * the others and, once it has expired, those never run.
 */
export function openaiBatch(batch: RunBatch, counts: RunCounts): JsonObject {
  const final = batch.counts ?? counts;
  const { expired } = unrun(batch, final);
  const extra = batch.extra ?? {};
  const end = batch.state === "ended" ? batch.ended_at : undefined;
  return {
    id: batch.id,
    object: "batch",
    endpoint: batch.endpoint,
    errors: null,
    input_file_id: extra.input_file_id ?? null,
    completion_window: extra.completion_window ?? "24h",
    status: openaiStatus(batch),
    output_file_id: batch.files?.output ?? null,
    error_file_id: batch.files?.error ?? null,
    created_at: unix(batch.created_at),
    in_progress_at: unix(batch.created_at),
    expires_at: unix(batch.expires_at),
    finalizing_at: unix(batch.end === "completed" ? end : undefined),
    completed_at: unix(batch.end === "completed" ? end : undefined),
    failed_at: null,
    expired_at: unix(batch.end === "expired" ? end : undefined),
    cancelling_at: unix(batch.cancel_requested_at),
    cancelled_at: unix(batch.end === "canceled" ? end : undefined),
    request_counts: { total: batch.total, completed: final.succeeded, failed: final.errored + expired },
    metadata: extra.metadata ?? null,
  };
}

/** Anthropic's line for a request answered: succeeded with its message, or errored with the error body. */
export function anthropicLine(customId: string, status: number, body: JsonObject): string {
  const result = status < 300 ? { type: "succeeded", message: body } : { type: "errored", error: body };
  return JSON.stringify({ custom_id: customId, result });
}

/** Anthropic's line for a request an ended batch never ran. */
export function anthropicUnrunLine(customId: string, why: "canceled" | "expired"): string {
  return JSON.stringify({ custom_id: customId, result: { type: why } });
}

/** OpenAI's output (or error) file line for a request answered, with the status and body its endpoint gave. */
export function openaiLine(customId: string, status: number, body: JsonObject, requestId: string): string {
  return JSON.stringify({
    id: `batch_req_${crypto.randomUUID().replaceAll("-", "")}`,
    custom_id: customId,
    response: { status_code: status, request_id: requestId, body },
    error: null,
  });
}

/** OpenAI's error file line for a request the batch's window closed on before it ran. */
export function openaiExpiredLine(customId: string): string {
  return JSON.stringify({
    id: `batch_req_${crypto.randomUUID().replaceAll("-", "")}`,
    custom_id: customId,
    response: null,
    error: {
      code: "batch_expired",
      message: "This request could not be executed before the completion window expired.",
    },
  });
}

/** OpenAI's file object for an ended batch's output or error file. */
export function openaiFile(id: string, batch: RunBatch, set: "output" | "error", bytes: number): JsonObject {
  return {
    id,
    object: "file",
    bytes,
    created_at: unix(batch.ended_at ?? batch.created_at),
    expires_at: unix(batch.results_expire_at),
    filename: `${batch.id}_${set}.jsonl`,
    purpose: "batch_output",
    status: "processed",
    status_details: null,
  };
}
