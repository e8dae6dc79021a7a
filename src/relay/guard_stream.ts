/**
 * @module The guardrails' step on a client's stream, one separate wrapper after the relay: the client protocol's
 * events parsed, each text channel masked and its placeholders restored as it passes (guard_events.ts), holding back
 * only the end of a text that could still begin a match, so a match split across any two events or reads is caught;
 * a blocking rule's match ends the stream with the protocol's error event before the match goes out.
 */
import { GatewayError } from "../core/errors.ts";
import { encodeSse, SseParser } from "../core/sse.ts";
import type { GuardRun, ScanRule } from "../core/text_scan.ts";
import type { Protocol } from "../core/types.ts";
import { errorEvents } from "../protocols/client_errors.ts";
import { eventGuard, eventOf } from "./guard_events.ts";

const encoder = new TextEncoder();
/** The Anthropic events that carry a model's text. */
const TEXT_EVENTS = new Set(["content_block_start", "content_block_delta", "content_block_stop"]);

/** One answer's stream in `protocol`, through the rules. */
export function guardStream(
  body: ReadableStream<Uint8Array>,
  protocol: Protocol,
  rules: readonly ScanRule[],
  run: GuardRun,
): ReadableStream<Uint8Array> {
  const parser = new SseParser();
  const decoder = new TextDecoder();
  const guard = eventGuard(protocol, rules, run);
  // True where the bytes so far end an event: a keep-alive comment there passes as it is.
  let between = true;
  // Set when an event of the text being read goes out other than as it came.
  let rewritten = false;

  /** The events of `text` as they go out, up to the refusal of a blocking rule's match when one turns up. */
  function events(text: string): string {
    let out = "";
    rewritten = false;
    for (const message of parser.push(text)) {
      if (run.blocked) break;
      if (message.data === "[DONE]") {
        for (const end of guard.end?.() ?? []) {
          out += encodeSse(eventOf(end.event, end.value));
          rewritten = true;
        }
        out += encodeSse(message);
        continue;
      }
      // Of Anthropic's events only the content blocks' carry text: the rest pass without being parsed.
      if (protocol === "anthropic" && message.event !== undefined && !TEXT_EVENTS.has(message.event)) {
        out += encodeSse(message);
        continue;
      }
      let value: unknown;
      try {
        value = JSON.parse(message.data);
      } catch {
        out += encodeSse(message);
        continue;
      }
      if (value === null || typeof value !== "object" || Array.isArray(value)) {
        out += encodeSse(message);
        continue;
      }
      try {
        for (const next of guard.next(message.event, value as Record<string, unknown>)) {
          // An event the guard left as it was goes out as it came, not written again.
          if (next.value === value) out += encodeSse(message);
          else {
            out += encodeSse(eventOf(next.event, next.value));
            rewritten = true;
          }
        }
      } catch (err) {
        // A whole text an event repeats (a Responses `.done`) may hold a match no delta showed.
        if (!(err instanceof GatewayError)) throw err;
        run.blocked = err;
      }
    }
    return out;
  }
  /** What goes out for one chunk (empty when nothing may yet); the refusal, ending the stream, once a match is blocked. */
  function piece(chunk: Uint8Array): { bytes?: Uint8Array; last?: boolean } {
    const text = decoder.decode(chunk, { stream: true });
    if (between && text.startsWith(":") && text.endsWith("\n\n")) return { bytes: chunk };
    const whole = between && text.endsWith("\n\n");
    between = text.endsWith("\n\n");
    const out = events(text);
    // Whole events, none of them changed: the bytes go on as they came, not encoded again.
    if (whole && !rewritten && !run.blocked) return { bytes: chunk };
    return finished(out);
  }
  /** `out` as bytes, and the refusal after it when a match was blocked. */
  function finished(out: string): { bytes?: Uint8Array; last?: boolean } {
    if (!run.blocked) return { bytes: out === "" ? undefined : encoder.encode(out) };
    const error = errorEvents(run.blocked, protocol).map((message) => encodeSse(message)).join("");
    return { bytes: encoder.encode(out + error), last: true };
  }
  /** What the stream's end releases. */
  function rest(): { bytes?: Uint8Array; last?: boolean } {
    let out = events(decoder.decode() + "\n\n");
    for (const end of guard.end?.() ?? []) out += encodeSse(eventOf(end.event, end.value));
    return finished(out);
  }

  // Read straight from the answer's reader as the client pulls: no pipe, no second queue between them.
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        const read = await reader.read();
        const out = read.done ? rest() : piece(read.value);
        if (out.bytes) controller.enqueue(out.bytes);
        if (out.last) {
          // A blocking rule's match: the upstream is let go, and nothing more goes out.
          controller.close();
          await reader.cancel().catch(() => {});
          return;
        }
        if (read.done) return controller.close();
        if (out.bytes) return;
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
}
