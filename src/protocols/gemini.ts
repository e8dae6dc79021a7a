/**
 * @module The Gemini API on the wire (see docs/protocols.md, "Gemini"): the bodies its clients send, what an answer
 * is, Google's error body, its usage, and its answers and stream chunks as translators read them.
 */
import { z } from "zod";
import { byteMarker, markerSet } from "../core/byte_search.ts";
import { clientMessage, type ErrorKind, type GatewayError } from "../core/errors.ts";
import type { SseMessage } from "../core/sse.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import { tokenCount, type TokenCounts } from "../core/usage.ts";
import {
  COMMENT_KEEP_ALIVE,
  eventPayload,
  hasTypedError,
  isCount,
  type StreamingProtocol,
  throwIfError,
  without529,
} from "./wire.ts";

// Gemini names the model in the path; the handler puts it (and whether to stream) into the body before this check.
const GeminiBody = z.looseObject({
  model: z.string().min(1),
  contents: z.array(z.looseObject({ role: z.string().optional(), parts: z.array(z.unknown()) })).min(1),
  stream: z.boolean().optional(),
});

/** Google's `error.status` per kind, for Gemini clients (see docs/protocols.md, "Errors"). */
const GOOGLE_STATUS: Record<ErrorKind, string> = {
  invalid_request: "INVALID_ARGUMENT",
  authentication: "UNAUTHENTICATED",
  permission: "PERMISSION_DENIED",
  not_found: "NOT_FOUND",
  request_too_large: "INVALID_ARGUMENT",
  request_timeout: "DEADLINE_EXCEEDED",
  rate_limit: "RESOURCE_EXHAUSTED",
  overloaded: "UNAVAILABLE",
  timeout: "DEADLINE_EXCEEDED",
  upstream: "INTERNAL",
  unavailable: "UNAVAILABLE",
  internal: "INTERNAL",
  client_closed: "CANCELLED",
};

/** Google's error body: the status it is sent with, the status name, and how long to wait as a RetryInfo. */
function errorBody(err: GatewayError, message: string): JsonObject {
  const error: JsonObject = { code: without529(err.status, new Headers()), message, status: GOOGLE_STATUS[err.kind] };
  const retry = Number(err.headers.get("retry-after"));
  if (retry > 0) error.details = [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: `${retry}s` }];
  return { error };
}

/**
 * Reads a Gemini `usageMetadata`: `promptTokenCount` includes the cached tokens (and tool-use prompt tokens count as
 * prompt too), and thoughts are output the answer's count leaves out.
 */
export function usageFromGemini(usage: unknown): TokenCounts {
  const u = isObject(usage) ? usage : {};
  const prompt = tokenCount(u.promptTokenCount) + tokenCount(u.toolUsePromptTokenCount);
  const cacheRead = Math.min(prompt, tokenCount(u.cachedContentTokenCount));
  const reasoning = tokenCount(u.thoughtsTokenCount);
  return {
    input: prompt - cacheRead,
    output: tokenCount(u.candidatesTokenCount) + reasoning,
    cacheRead,
    cacheWrite: 0,
    reasoning,
  };
}

/** A `GenerateContentResponse` (a whole answer, or one chunk of a stream) as its first candidate says it. */
export interface GeminiAnswer {
  responseId: unknown;
  usageMetadata?: JsonObject;
  /** The first candidate's parts (text, thought, functionCall ...), the objects among them. */
  parts: JsonObject[];
  finish: unknown;
  /** True when the prompt itself was blocked (`promptFeedback.blockReason`). */
  blocked: boolean;
}

/** Reads a whole Gemini answer, or one chunk of its stream. */
export function readGeminiAnswer(body: JsonObject): GeminiAnswer {
  const candidate = Array.isArray(body.candidates) && isObject(body.candidates[0]) ? body.candidates[0] : {};
  const content = isObject(candidate.content) ? candidate.content : {};
  return {
    responseId: body.responseId,
    usageMetadata: isObject(body.usageMetadata) ? body.usageMetadata : undefined,
    parts: Array.isArray(content.parts) ? content.parts.filter(isObject) : [],
    finish: candidate.finishReason,
    blocked: isObject(body.promptFeedback) && typeof body.promptFeedback.blockReason === "string",
  };
}

/** A Gemini stream chunk; a `{"error": ...}` event is thrown as the GatewayError it stands for. */
export function readGeminiChunk(message: SseMessage): GeminiAnswer {
  throwIfError(message);
  return readGeminiAnswer(eventPayload(message));
}

/** The Gemini API: `models/{model}:generateContent`, `:streamGenerateContent` and `:countTokens`. */
export const geminiProtocol: StreamingProtocol<GeminiAnswer> = {
  name: "gemini",
  bodies: { generate: { schema: GeminiBody }, count_tokens: { schema: GeminiBody } },
  isAnswer: (body, operation) =>
    operation === "count_tokens" ? isCount(body) : Array.isArray(body.candidates) || isObject(body.promptFeedback),
  // Google's own errors (`code`, `status`) have no `type`: they reach the client rebuilt from their status and message.
  errors: { body: errorBody, status: without529, keeps: hasTypedError },
  usage: {
    read(body) {
      // Each chunk's usageMetadata stands for the whole answer so far.
      const candidates = Array.isArray(body.candidates) ? body.candidates : [];
      const reasons = candidates.map((c) => isObject(c) ? c.finishReason : undefined);
      const usage = isObject(body.usageMetadata) ? body.usageMetadata : undefined;
      return { usage, id: body.responseId, model: body.modelVersion, reasons };
    },
    counts: (usage) => usageFromGemini(usage),
  },
  stream: {
    // A Gemini stream simply ends after the chunk with its finishReason.
    terminal: () => false,
    finishing: (m) => /"finishReason":\s*"/.test(m.data),
    markers: markerSet(["usageMetadata", "error", "finishReason"].map(byteMarker)),
    usage: /"usageMetadata"\s*:\s*\{/,
    names: {
      id: /"responseId"\s*:\s*"([^"]{1,128})"/,
      model: /"modelVersion"\s*:\s*"([^"]{1,128})"/,
      finish: /"finishReason"\s*:\s*"([A-Z_]{1,40})"/,
    },
    keepAlive: COMMENT_KEEP_ALIVE,
    // A chunk that is the error body alone (see docs/protocols.md, "Server-sent events").
    errorEvents: (err) => [{ data: JSON.stringify(errorBody(err, clientMessage(err))) }],
    read: readGeminiChunk,
  },
};
