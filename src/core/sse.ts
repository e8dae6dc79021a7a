/**
 * @module Server-sent events: a spec-faithful parser, an encoder and the translator step interface. What each
 * protocol's events are is that protocol's (src/protocols/).
 */
import type { GatewayError } from "./errors.ts";

/** One SSE event. Only `event` and `data` matter to the clients we serve. */
export interface SseMessage {
  event?: string;
  data: string;
  /**
   * The value `data` is the JSON of, when the event was made from one (its data is then made only when read): a
   * reader that needs the value takes it here instead of parsing, and a large one is written out in pieces.
   */
  payload?: unknown;
}

/** Pure per-request stream translation: upstream events in, client events out. */
export interface StreamStep {
  /** Zero or more client events for one upstream event. */
  next(message: SseMessage): SseMessage[];
  /** Trailing events at upstream end; throws a GatewayError when the upstream stream was cut short. */
  end(): SseMessage[];
  /** The client protocol's in-band failure events, when the step numbers its events itself. */
  fail?(err: GatewayError): SseMessage[];
}

/** Serializes one event; JSON payloads must already be single-line. */
export function encodeSse(message: SseMessage): string {
  const event = message.event === undefined ? "" : `event: ${message.event}\n`;
  return `${event}data: ${message.data}\n\n`;
}

/** Incremental SSE line parser: accepts LF, CRLF and CR endings, comments, multi-line data and a BOM. */
export class SseParser {
  /** The pieces of a line whose end has not arrived yet, joined only when it does. */
  #partial: string[] = [];
  #event: string | undefined;
  #data: string[] = [];
  #started = false;
  #pendingCr = false;

  /**
   * Feeds decoded text and returns the events it completed. Only the new text is scanned, and a line that arrives in
   * many pieces (a large event's data) is joined once, when it ends, never copied again with each piece.
   */
  push(text: string): SseMessage[] {
    if (!this.#started && text.length > 0) {
      this.#started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    if (this.#pendingCr && text.startsWith("\n")) text = text.slice(1);
    this.#pendingCr = false;
    const out: SseMessage[] = [];
    let start = 0;
    let lf = text.indexOf("\n");
    let cr = text.indexOf("\r");
    while (lf !== -1 || cr !== -1) {
      const end = cr === -1 || (lf !== -1 && lf < cr) ? lf : cr;
      const piece = text.slice(start, end);
      let line = piece;
      if (this.#partial.length > 0) {
        this.#partial.push(piece);
        line = this.#partial.join("");
        this.#partial = [];
      }
      this.#line(line, out);
      start = end + 1;
      if (end === cr) {
        if (start === text.length) this.#pendingCr = true;
        else if (text.charCodeAt(start) === 10) start++;
      }
      if (lf !== -1 && lf < start) lf = text.indexOf("\n", start);
      if (cr !== -1 && cr < start) cr = text.indexOf("\r", start);
    }
    if (start < text.length) this.#partial.push(text.slice(start));
    return out;
  }

  #line(line: string, out: SseMessage[]): void {
    if (line === "") {
      if (this.#data.length > 0) out.push({ event: this.#event, data: this.#data.join("\n") });
      this.#event = undefined;
      this.#data = [];
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") this.#event = value;
    else if (field === "data") this.#data.push(value);
  }
}
