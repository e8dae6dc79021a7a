/** @module What the fake clouds answer: a scripted outcome per request, shared by the fake Bedrock and Vertex. */
import { fixture } from "./_helpers.ts";
import { SseParser } from "../src/core/sse.ts";

/** A scripted answer: a whole message (and a token count), a stream of Anthropic events, or an error. */
export type CloudAnswer = WholeAnswer | StreamAnswer | ErrorAnswer;

/** A non-streamed answer. */
export interface WholeAnswer {
  json: Record<string, unknown>;
  /** The count a token-counting request gets. */
  inputTokens?: number;
}

/** A streamed answer, one Anthropic event at a time. */
export interface StreamAnswer {
  events: Record<string, unknown>[];
  /** A stream that fails after this many events with the cloud's own in-stream error. */
  exception?: { after: number; type: string; message: string };
  /** A stream whose body ends after this many events (Bedrock: in the middle of the next frame). */
  cutAfter?: number;
}

/** An error answer: the cloud's error type (or status word), HTTP status and message. */
export interface ErrorAnswer {
  error: string;
  status: number;
  message: string;
  /** Vertex only: answer in Google's own error shape, with this status word, instead of Anthropic's. */
  google?: string;
  /** Headers the answer carries besides the cloud's own, e.g. `retry-after`. */
  headers?: Record<string, string>;
}

/** The data of every event of an SSE fixture, e.g. "anthropic/tool_use.sse". */
export function fixtureEvents(name: string): Record<string, unknown>[] {
  return new SseParser().push(fixture(name)).map((message) => JSON.parse(message.data));
}

/** The text fixture, whole or streamed, and a count of 42 tokens for count_tokens. */
export function defaultAnswer(seen: { action: string }): CloudAnswer {
  if (seen.action.includes("stream") || seen.action === "streamRawPredict") {
    return { events: fixtureEvents("anthropic/text.sse") };
  }
  return { json: JSON.parse(fixture("anthropic/text.json")), inputTokens: 42 };
}
