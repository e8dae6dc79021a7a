/**
 * @module The transport interface every upstream kind implements (how a request is sent and its answer read),
 * and what the cloud transports share: the betas a cloud accepts, Anthropic-shaped error answers and
 * token counts that are estimates.
 */
import { estimatePromptTokens } from "../core/estimate.ts";
import type { JsonObject, Operation } from "../core/types.ts";

/** One operation to send to one upstream, in the upstream's protocol. */
export interface TransportCall {
  operation: Operation;
  /** The id the upstream knows the model by. */
  upstreamModel: string;
  /** The body in the upstream's protocol (its `model` is the upstream id). */
  body: JsonObject;
  /** The same body as bytes, when it is exactly what the client sent and may be forwarded as is. */
  bytes?: Uint8Array<ArrayBuffer>;
  /** The size of the client's body in bytes; a large one is sent upstream in slices. */
  size?: number;
  /** The client's headers; a transport copies only the protocol headers it needs. */
  clientHeaders: Headers;
  /** The client's query string ("" or "?..."), for an upstream of the client's own protocol. */
  search: string;
  requestId: string;
  signal: AbortSignal;
}

/**
 * A request beyond generating (the Files and batch APIs) under the upstream's API base, answered as the upstream
 * answers it. A streamed body goes through as it comes, never held whole.
 */
export interface ForwardCall {
  method: "GET" | "POST" | "DELETE";
  /** The path under the API base, with its query string: "/files", "/messages/batches/{id}/results". */
  path: string;
  body?: ReadableStream<Uint8Array> | JsonObject;
  /** The body's content type when it is a stream (a multipart upload's boundary). */
  contentType?: string;
  /** The client's headers; only the protocol's own (version, betas) cross. */
  clientHeaders: Headers;
  requestId: string;
  signal: AbortSignal;
}

/** A forwarded body and its headers: JSON serialized, a stream as it comes. */
export function forwardBody(call: ForwardCall): { headers: [string, string][]; body?: BodyInit } {
  const headers: [string, string][] = [["x-request-id", call.requestId]];
  if (call.body === undefined) return { headers };
  if (call.body instanceof ReadableStream) {
    headers.push(["content-type", call.contentType ?? "application/octet-stream"]);
    return { headers, body: call.body };
  }
  headers.push(["content-type", "application/json"]);
  return { headers, body: JSON.stringify(call.body) };
}

/**
 * An upstream's way of sending requests and reading answers. `send` answers as the upstream's protocol does
 * (Anthropic Messages, Chat Completions, Responses or Gemini): a JSON body, an SSE stream, or an error in that
 * protocol's envelope, whatever the wire between looks like. It throws a GatewayError when the upstream could not
 * be asked at all.
 */
export interface Transport {
  send(call: TransportCall): Promise<Response>;
  /** Sends a Files or batch API request; only the kinds whose provider has those APIs have it. */
  forward?(call: ForwardCall): Promise<Response>;
  /** Values an upstream might echo that must never reach a client or a log (keys, tokens). */
  secrets(): string[];
}

/** Betas both clouds accept for Claude by default; each refuses a request that names a beta it does not know. */
export const CLOUD_BETAS: readonly string[] = [
  "computer-use-2024-10-22",
  "computer-use-2025-01-24",
  "token-efficient-tools-2025-02-19",
  "interleaved-thinking-2025-05-14",
  "output-128k-2025-02-19",
  "context-1m-2025-08-07",
  "context-management-2025-06-27",
];

/** The betas a client asked for (`anthropic-beta`, or its other spelling `vendorx-beta`), one per entry. */
function requestedBetas(headers: Headers, body: JsonObject): string[] {
  const header = headers.get("anthropic-beta") ?? headers.get("vendorx-beta") ?? "";
  const fromBody = Array.isArray(body.anthropic_beta) ? body.anthropic_beta.filter((b) => typeof b === "string") : [];
  const all = [...header.split(","), ...fromBody].map((beta) => beta.trim()).filter((beta) => beta !== "");
  return [...new Set(all)];
}

/**
 * The betas of a call that a cloud accepts: it refuses a whole request over one beta it does not know, so the
 * others are left out, and the log says how many.
 */
export function acceptedBetas(
  call: TransportCall,
  accepted: readonly string[],
  note: { upstream: string; log(line: Record<string, unknown>): void },
): string[] {
  const requested = requestedBetas(call.clientHeaders, call.body);
  const betas = requested.filter((beta) => accepted.includes(beta));
  if (betas.length < requested.length) {
    const dropped = requested.length - betas.length;
    note.log({ request_id: call.requestId, event: "betas_dropped", upstream: note.upstream, count: dropped });
  }
  return betas;
}

/**
 * The status and Anthropic error type for a cloud error known only by its HTTP status. Credential failures are
 * the gateway's (403, which the relay reads as the upstream refusing the gateway), and so is a model the cloud
 * does not know in the configured account, project or region (502): neither is the client's fault.
 */
export function cloudErrorByStatus(status: number): readonly [number, string] {
  if (status === 429) return [429, "rate_limit_error"];
  if (status === 401 || status === 403) return [403, "permission_error"];
  if (status === 404) return [502, "api_error"];
  if (status === 413) return [413, "request_too_large"];
  if (status === 408 || status === 504) return [504, "timeout_error"];
  if (status >= 500) return [status, "api_error"];
  return [400, "invalid_request_error"];
}

/** An answer's body parsed as JSON, or undefined when it is not JSON. */
export async function jsonOf(res: Response): Promise<unknown> {
  const text = await res.text().catch(() => "");
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** An error answer in Anthropic's envelope, as an Anthropic-protocol upstream gives it. */
export function anthropicErrorAnswer(status: number, type: string, message: string, headers?: HeadersInit): Response {
  return Response.json({ type: "error", error: { type, message } }, { status, headers });
}

/**
 * A token count estimated from the prompt's size (about four characters per token of its JSON), flagged as such for
 * clients that read the body; Claude Code only uses the figure to plan its context.
 */
export function estimatedCount(body: JsonObject): Response {
  return Response.json({ input_tokens: Math.max(1, estimatePromptTokens(body)), estimated: true });
}

/**
 * An estimate in place of a cloud's refusal to count (400, 403 or 404: the model, the region or the key's policy
 * does not offer counting), or undefined for any other answer, which stands as the cloud gave it.
 */
export async function estimateIfCountRefused(
  res: Response,
  call: TransportCall,
  note: { upstream: string; log(line: Record<string, unknown>): void },
): Promise<Response | undefined> {
  if (res.status !== 400 && res.status !== 403 && res.status !== 404) return undefined;
  await res.body?.cancel();
  note.log({
    request_id: call.requestId,
    event: "count_tokens_estimated",
    upstream: note.upstream,
    status: res.status,
  });
  return estimatedCount(call.body);
}
