/**
 * @module Server-sent events: a spec-faithful parser, an encoder, the translator step interface, and each
 * protocol's in-band error events.
 */
import { errorBody, type GatewayError } from "./errors.ts";
import type { Protocol } from "./types.ts";

/** One SSE event. Only `event` and `data` matter to the clients we serve. */
export interface SseMessage {
  event?: string;
  data: string;
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

/** A protocol's in-band error events: never followed by a normal ending (docs/protocols.md, "Server-sent events"). */
export function errorEvents(err: GatewayError, protocol: Protocol): SseMessage[] {
  const body = errorBody(err, protocol);
  if (protocol === "anthropic") return [{ event: "error", data: JSON.stringify(body) }];
  if (protocol === "openai-chat" || protocol === "gemini") return [{ data: JSON.stringify(body) }];
  // Responses: the error event's own type is "error"; the kind travels in `code`.
  const { message, param, code, type } = body.error as Record<string, unknown>;
  return [{ event: "error", data: JSON.stringify({ type: "error", code: code ?? type, message, param }) }];
}

/** Incremental SSE line parser: accepts LF, CRLF and CR endings, comments, multi-line data and a BOM. */
export class SseParser {
  #buffer = "";
  #event: string | undefined;
  #data: string[] = [];
  #started = false;
  #pendingCr = false;

  /** Feeds decoded text and returns the events it completed. */
  push(text: string): SseMessage[] {
    if (!this.#started && text.length > 0) {
      this.#started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    if (this.#pendingCr && text.startsWith("\n")) text = text.slice(1);
    this.#pendingCr = false;
    // What is kept from the last push is a line without its ending, so only the new text needs scanning; an event
    // that arrives in many pieces is not rescanned from its start each time.
    const scanFrom = this.#buffer.length;
    this.#buffer += text;
    const out: SseMessage[] = [];
    let start = 0;
    for (let i = scanFrom; i < this.#buffer.length; i++) {
      const ch = this.#buffer.charCodeAt(i);
      if (ch !== 10 && ch !== 13) continue;
      this.#line(this.#buffer.slice(start, i), out);
      if (ch === 13) {
        if (i + 1 === this.#buffer.length) this.#pendingCr = true;
        else if (this.#buffer.charCodeAt(i + 1) === 10) i++;
      }
      start = i + 1;
    }
    this.#buffer = this.#buffer.slice(start);
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
