/**
 * @module What a wire protocol is to the gateway: the descriptor every protocol module exports (its bodies' checks,
 * what an answer is, its error body, its usage, and for a protocol that streams, its events), which the layers above
 * read through the registry (registry.ts); and the reading every protocol's events share.
 */
import type { z } from "zod";
import type { MarkerSet } from "../core/byte_search.ts";
import { GatewayError } from "../core/errors.ts";
import type { SseMessage } from "../core/sse.ts";
import { isObject, type JsonObject, type Operation, type Protocol } from "../core/types.ts";
import type { TokenCounts } from "../core/usage.ts";
import { upstreamStreamError } from "./upstream_error.ts";

/** How a request body of one operation is checked: only the fields the gateway reads; the rest pass untouched. */
export interface BodyCheck {
  /** The schema, which names the field at fault. */
  schema: z.ZodType;
  /**
   * A quick yes to bodies the schema takes (and no to any it is unsure of), so a long conversation is not copied by
   * the schema just to be checked; a no goes to the schema.
   */
  accepts?(body: JsonObject): boolean;
}

/** How a protocol's clients are told of an error. */
export interface ErrorShape {
  /** The JSON body of an error answer; `message` is what the client may be shown of it. */
  body(err: GatewayError, message: string, requestId?: string): JsonObject;
  /** The status an error goes out with, adding to `headers` what the client then needs. */
  status(status: number, headers: Headers): number;
  /** True when an upstream's error body of this protocol is well formed, so its clients may be handed it as it is. */
  keeps(body: JsonObject): boolean;
}

/** What a body or an event of an upstream's answer names of it, as read (nothing checked yet). */
export interface AnswerReading {
  /** The usage object it carries. */
  usage?: JsonObject;
  id?: unknown;
  model?: unknown;
  /** Finish or stop reasons, one per choice or candidate. */
  reasons: unknown[];
}

/** How an upstream's answer in this protocol tells what it used and what it is. */
export interface UsageReading {
  /** What a whole answer, or one event of a stream, names of the answer. */
  read(body: JsonObject): AnswerReading;
  /** The counts of a usage object, after `previous` (what the stream's earlier events counted, if anything). */
  counts(usage: JsonObject, previous: TokenCounts | undefined): TokenCounts;
}

/** A protocol's server-sent events, as the relay, the usage meter and the translators read them. */
export interface StreamFacts<Event> {
  /** True for the event after which the stream is complete and nothing more comes. */
  terminal(message: SseMessage): boolean;
  /** True for an event after which an end of the stream is acceptable, though more may follow. */
  finishing(message: SseMessage): boolean;
  /** Byte strings one of which every event that tells usage, an end or an error holds; others pass by unread. */
  markers: MarkerSet;
  /** True for the data of an event that may carry usage: only those are parsed. */
  usage: RegExp;
  /** What an event that is not parsed names of its answer (its id, model, finish reason), when it can tell. */
  names?: { id: RegExp; model: RegExp; finish: RegExp };
  /** What a keep-alive is to this protocol's clients. */
  keepAlive: Uint8Array;
  /** The in-band error a client of this protocol reads after its stream began; no normal ending follows it. */
  errorEvents(err: GatewayError): SseMessage[];
  /** One upstream event, checked once into the shape translators switch on; an in-band error is thrown. */
  read(message: SseMessage): Event;
}

/** What the gateway knows of one wire protocol. */
export interface WireProtocol {
  name: Protocol;
  /** The checks of the request bodies its clients send, by operation; an operation without one is not checked. */
  bodies: Partial<Record<Operation, BodyCheck>>;
  /** True when a 2xx JSON body from an upstream is a reply to `operation` (and not an error or something else). */
  isAnswer(body: JsonObject, operation: Operation): boolean;
  errors: ErrorShape;
  usage: UsageReading;
}

/** A wire protocol whose answers can stream, with the events a translator of its streams reads. */
export interface StreamingProtocol<Event = unknown> extends WireProtocol {
  stream: StreamFacts<Event>;
}

/** Parses one event's JSON payload; anything else means the upstream stream is broken. */
export function eventPayload(message: SseMessage): JsonObject {
  let value: unknown;
  try {
    value = JSON.parse(message.data);
  } catch {
    throw new GatewayError("upstream", "Upstream sent an event that is not JSON");
  }
  if (!isObject(value)) throw new GatewayError("upstream", "Upstream sent an event that is not a JSON object");
  return value;
}

/** Throws the upstream's in-band error, when `message` is one, as the GatewayError of its kind. */
export function throwIfError(message: SseMessage): void {
  const error = upstreamStreamError(message, "Upstream failed during the stream");
  if (error) throw error;
}

/** The status for a client whose protocol does not know 529 (Anthropic's own): 503, to retry unless told a time. */
export function without529(status: number, headers: Headers): number {
  if (status !== 529) return status;
  if (!headers.has("retry-after") && !headers.has("retry-after-ms")) headers.set("x-should-retry", "true");
  return 503;
}

/** True for `{error: {message, type}}` with both strings: what OpenAI's SDKs, and Anthropic's inside its own, read. */
export function hasTypedError(body: JsonObject): boolean {
  const error = body.error;
  return isObject(error) && typeof error.message === "string" && typeof error.type === "string";
}

/** A string field as text: "" when absent, its text otherwise (a number as its digits). */
export function textOf(value: unknown): string {
  return typeof value === "string" ? value : String(value ?? "");
}

const encoder = new TextEncoder();

/** An SSE comment: what a keep-alive is to a protocol without a ping event of its own. */
export const COMMENT_KEEP_ALIVE = encoder.encode(": keep-alive\n\n");

/** True for a body's `model` that names one. */
export function namesModel(body: JsonObject): boolean {
  return typeof body.model === "string" && body.model.length > 0;
}

/** True for a flag that is absent or a boolean. */
export function optionalFlag(value: unknown): boolean {
  return value === undefined || typeof value === "boolean";
}

/** True for a non-empty array of JSON objects each of which passes `check`. */
export function everyItem(value: unknown, check: (item: JsonObject) => boolean): boolean {
  if (!Array.isArray(value) || value.length === 0) return false;
  for (const item of value) if (!isObject(item) || !check(item)) return false;
  return true;
}

/** True for an answer to a count: Anthropic's `input_tokens`, or Gemini's `totalTokens`. */
export function isCount(body: JsonObject): boolean {
  return typeof (body.input_tokens ?? body.totalTokens) === "number";
}
