/**
 * @module The guardrails' transform of a client's stream, one separate step after the relay: the client protocol's
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

/** The transform of one answer's stream in `protocol`. */
export function guardStream(
  protocol: Protocol,
  rules: readonly ScanRule[],
  run: GuardRun,
): TransformStream<Uint8Array, Uint8Array> {
  const parser = new SseParser();
  const decoder = new TextDecoder();
  const guard = eventGuard(protocol, rules, run);
  // True where the bytes so far end an event: a keep-alive comment there passes as it is.
  let between = true;
  let failed = false;

  /** The events of `text` as they go out, up to the refusal of a blocking rule's match when one turns up. */
  function events(text: string): string {
    let out = "";
    for (const message of parser.push(text)) {
      if (run.blocked) break;
      if (message.data === "[DONE]") {
        for (const end of guard.end?.() ?? []) out += encodeSse(eventOf(end.event, end.value));
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
          out += next.value === value ? encodeSse(message) : encodeSse(eventOf(next.event, next.value));
        }
      } catch (err) {
        // A whole text an event repeats (a Responses `.done`) may hold a match no delta showed.
        if (!(err instanceof GatewayError)) throw err;
        run.blocked = err;
      }
    }
    return out;
  }
  /** Ends the stream with the refusal, the events before it sent. */
  function refuse(out: string, controller: TransformStreamDefaultController<Uint8Array>): void {
    failed = true;
    const error = errorEvents(run.blocked!, protocol).map((message) => encodeSse(message)).join("");
    controller.enqueue(encoder.encode(out + error));
    controller.terminate();
  }

  return new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      if (failed) return;
      const text = decoder.decode(chunk, { stream: true });
      if (between && text.startsWith(":") && text.endsWith("\n\n")) {
        controller.enqueue(chunk);
        return;
      }
      between = text.endsWith("\n\n");
      const out = events(text);
      if (run.blocked) return refuse(out, controller);
      if (out !== "") controller.enqueue(encoder.encode(out));
    },
    flush(controller) {
      if (failed) return;
      let out = events(decoder.decode() + "\n\n");
      for (const end of guard.end?.() ?? []) out += encodeSse(eventOf(end.event, end.value));
      if (run.blocked) return refuse(out, controller);
      if (out !== "") controller.enqueue(encoder.encode(out));
    },
  });
}
