/**
 * @module Reading token usage from an upstream's answer in its own protocol, as its descriptor tells it
 * (src/protocols/): a non-streamed body, or the stream's events as they pass, and where the stream stands.
 */
import type { MarkerSet } from "../core/byte_search.ts";
import type { AnswerFacts, Usage } from "../core/exchange.ts";
import { saneId } from "../core/http.ts";
import type { SseMessage } from "../core/sse.ts";
import { isObject, type JsonObject, type UpstreamProtocol } from "../core/types.ts";
import { invalidCounts, recordedUsage, type TokenCounts } from "../core/usage.ts";
import { PROTOCOLS } from "../protocols/registry.ts";
import { upstreamEventError } from "../protocols/upstream_error.ts";

/** Collects usage from a stream, event by event. */
export interface UsageMeter {
  /** Looks at one upstream event. */
  event(message: SseMessage): void;
  /** Looks at a non-streamed upstream body. */
  body(body: JsonObject): void;
  /** What has been seen so far, or undefined when nothing was. */
  usage(): Usage | undefined;
  /** The answer's id, model and finish reasons, as far as what was read of it named them. */
  answer(): AnswerFacts | undefined;
  /**
   * Byte strings one of which every event that can change this meter holds (its usage, its state); an event with
   * none of them may pass by unread.
   */
  markers: MarkerSet;
  /**
   * "finished" once the terminal event passed (message_stop, [DONE], response.completed ...), "finishing" once an
   * end would be acceptable (chat's finish chunk), "errored" once the upstream sent its own in-band error, else "open".
   */
  state(): StreamState;
}

/** Where an upstream stream stands. */
export type StreamState = "open" | "finishing" | "finished" | "errored";

function parse(data: string, usage: RegExp): JsonObject | undefined {
  // Only events with a usage object are parsed; the rest pass by with a cheap test.
  if (!usage.test(data)) return undefined;
  try {
    const value = JSON.parse(data);
    return isObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A meter for an upstream speaking `protocol`. A count that is not a whole number of tokens within the bound is cut
 * or read as 0 (see core/usage.ts); `invalid` hears the paths of each usage object that held one, so the caller can
 * name the upstream that sent them.
 */
export function usageMeter(protocol: UpstreamProtocol, invalid?: (fields: string[]) => void): UsageMeter {
  let seen: TokenCounts | undefined;
  let state: StreamState = "open";
  const { usage: reading, stream } = PROTOCOLS[protocol];
  const { terminal, finishing, names } = stream;
  function check(usage: JsonObject): JsonObject {
    const fields = invalid && invalidCounts(usage);
    if (fields && fields.length > 0) invalid(fields);
    return usage;
  }
  let facts: AnswerFacts | undefined;
  function take(body: JsonObject): void {
    const read = reading.read(body);
    if (read.usage) seen = reading.counts(check(read.usage), seen);
    note(read.id, read.model, ...read.reasons);
  }
  /** Keeps what an answer names of itself, when it looks like an id (it is exported with traces). */
  function note(id: unknown, model: unknown, ...reasons: unknown[]): void {
    const sane = (value: unknown) => typeof value === "string" ? saneId(value) : undefined;
    facts ??= {};
    facts.id = sane(id) ?? facts.id;
    facts.model = sane(model) ?? facts.model;
    const named = reasons.map(sane).filter((reason) => reason !== undefined);
    if (named.length > 0) facts.finish_reasons = named;
  }
  return {
    event(message) {
      if (state === "open" || state === "finishing") {
        if (upstreamEventError(message)) state = "errored";
        else if (terminal(message)) state = "finished";
        else if (state === "open" && finishing(message)) state = "finishing";
      }
      const body = parse(message.data, stream.usage);
      if (body) take(body);
      else if (names) {
        // Chat and Gemini chunks without usage are not parsed: the first names the answer, the finishing one its reason.
        if (!facts?.id && !facts?.model) note(names.id.exec(message.data)?.[1], names.model.exec(message.data)?.[1]);
        if (state === "finishing") note(undefined, undefined, names.finish.exec(message.data)?.[1]);
      }
    },
    body: take,
    usage: () => seen && recordedUsage(seen),
    answer: () => facts,
    state: () => state,
    markers: stream.markers,
  };
}
