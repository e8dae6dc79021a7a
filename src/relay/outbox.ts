/**
 * @module Translated events on their way to the client, taken one piece at a time as the client reads: small events go
 * out together, a large one alone and in slices. An event's data is made and searched for secrets only when its turn
 * comes, and one made from a value (a Responses writer's `.done` events and `response.completed`) is written out from
 * that value a piece at a time, so of a large answer, which the protocol repeats in several events, the gateway holds
 * the text once and never the whole JSON of an event that repeats it.
 */
import { holdsMoreThan, jsonPieces } from "../core/json_pieces.ts";
import type { TextRedactor } from "../core/redact.ts";
import { encodeSse, type SseMessage } from "../core/sse.ts";

/** The most characters of event text a piece holds (a longer event goes out in pieces of about this size). */
export const PIECE_CHARS = 64 * 1024;

const encoder = new TextEncoder();

/** What waits to be sent, in order. */
export interface Outbox {
  add(events: readonly SseMessage[]): void;
  /** The next piece to send, or undefined when nothing waits. */
  next(): Uint8Array | undefined;
}

/**
 * A redaction of text that remembers its answer for the last long text: the events of one item repeat its text, and
 * a large text is then searched once.
 */
function remembering(redactor: TextRedactor | undefined): (text: string) => string {
  if (!redactor) return (text) => text;
  let last: { text: string; clean: string } | undefined;
  return (text) => {
    if (text.length < PIECE_CHARS) return redactor.text(text);
    if (last?.text !== text) last = { text, clean: redactor.text(text) };
    return last.clean;
  };
}

/** An outbox whose events have the upstream's secrets taken out by `redactor` as they are written. */
export function outbox(redactor?: TextRedactor): Outbox {
  const redact = remembering(redactor);
  let queue: SseMessage[] = [];
  let at = 0;
  /** The pieces of the large event being sent. */
  let large: Iterator<string> | undefined;

  /** A large event's text a piece at a time: its lines around the JSON of its data, written out from its value. */
  function* pieces(message: SseMessage): Generator<string> {
    let head = encodeSse({ event: message.event, data: "" }).slice(0, -2);
    for (const piece of jsonPieces(message.payload, PIECE_CHARS, redact)) {
      yield head + piece;
      head = "";
    }
    yield "\n\n";
  }
  function nextLarge(): Uint8Array | undefined {
    const step = large!.next();
    if (!step.done) return encoder.encode(step.value);
    large = undefined;
    return undefined;
  }

  function next(): Uint8Array | undefined {
    if (large) {
      const piece = nextLarge();
      if (piece) return piece;
    }
    let piece = "";
    while (at < queue.length) {
      const message = queue[at];
      // Sent events are let go at once: a large one's text is the most there is to free.
      queue[at++] = undefined as unknown as SseMessage;
      if (message.payload !== undefined && holdsMoreThan(message.payload, PIECE_CHARS)) {
        large = pieces(message);
        if (piece !== "") break;
        return next();
      }
      piece += encodeSse({ event: message.event, data: redact(message.data) });
      if (piece.length >= PIECE_CHARS) break;
    }
    return piece === "" ? undefined : encoder.encode(piece);
  }

  return {
    add(events) {
      if (at === queue.length) {
        queue = [];
        at = 0;
      }
      queue.push(...events);
    },
    next,
  };
}

/** `message` seen through `redactor`: its data made, and searched, only when read; its value likewise. */
export function redactedView(message: SseMessage, redactor: TextRedactor): SseMessage {
  const view: SseMessage = {
    event: message.event,
    get data() {
      return redactor.text(message.data);
    },
  };
  if (message.payload === undefined) return view;
  return Object.defineProperty(view, "payload", { get: () => redactor.value(message.payload), enumerable: true });
}
