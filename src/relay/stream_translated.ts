/**
 * @module The translated pipeline: an upstream's SSE body is parsed whole, each event handed to the usage meter and to
 * the translator's step, and the events it makes wait in an outbox that gives them out a piece per pull (outbox.ts),
 * so a client that reads slowly holds the next upstream read back. What the translator writes is searched for the
 * upstream's keys again, and a stream cut or failed ends in the client protocol's in-band error, never its normal end.
 */
import { secretForms, textRedactor } from "../core/redact.ts";
import { encodeSse, type SseMessage, SseParser, type StreamStep } from "../core/sse.ts";
import { errorEvents } from "../protocols/client_errors.ts";
import type { UsageMeter } from "../usage/meter.ts";
import type { ChunkReader } from "./body_reader.ts";
import { outbox, redactedView } from "./outbox.ts";
import { cutShort, reportedError } from "./stream_end.ts";
import { clientStream, type SinkOptions, upstreamChunks } from "./stream_sink.ts";

/** Options for {@linkcode translatedStream}. */
export interface TranslatedOptions extends SinkOptions {
  /** The translation's stream step: upstream events in, client events out. */
  step: StreamStep;
  /** Watches the upstream's events for usage and the terminal event; without it the step alone says how it ended. */
  meter?: UsageMeter;
  /**
   * Sees each batch of translated events before it goes out; a promise it returns holds the batch back until it
   * settles (a stored answer is then in place before its client can refer to it).
   */
  hold?(messages: readonly SseMessage[]): Promise<void> | undefined;
}

/** Translates an upstream SSE body to the client's protocol, starting with its already-read first chunk. */
export function translatedStream(
  reader: ChunkReader,
  first: Uint8Array,
  options: TranslatedOptions,
): ReadableStream<Uint8Array> {
  const { step, meter, hold, upstreamName } = options;
  const decoder = new TextDecoder();
  const parser = new SseParser();
  // What a translator writes is searched again: it decodes the upstream's escapes (a key spelled `\u0073k-...` comes
  // out plain) and puts deltas back together (a Responses `.done` event holds the whole text).
  const written = options.secrets && secretForms(options.secrets).length > 0
    ? textRedactor(options.secrets)
    : undefined;
  const seen = (message: SseMessage) => written ? redactedView(message, written) : message;
  // Translated events wait here and go out a piece per pull, so a client that reads slowly holds the next back.
  const box = outbox(written);
  // Set once the upstream ended well: the client's stream ends when what waits in the box has gone out.
  let closing = false;

  return clientStream(reader, options, (sink) => {
    const chunks = upstreamChunks(reader, first, options, meter, sink);
    /** Parses upstream text and hands each event to the meter; the events are the step's to translate. */
    function events(text: string): SseMessage[] {
      const messages = parser.push(text);
      if (meter) { for (const message of messages) meter.event(message); }
      return messages;
    }
    /** Queues translated events once `hold` lets them go; nothing when the client left in the meantime. */
    async function queue(events: SseMessage[]): Promise<void> {
      // What is kept of the answer (a stored response) is searched for secrets as what is sent is; each event's data
      // is read when asked for, so a large one is made for `hold` only if it looks at it.
      const kept = hold?.(written ? events.map(seen) : events);
      if (kept) {
        await kept;
        if (sink.ended()) return;
      }
      box.add(events);
    }
    /** One upstream chunk through the translator, its events queued. */
    async function translate(value: Uint8Array): Promise<void> {
      const out: SseMessage[] = [];
      try {
        for (const message of events(decoder.decode(value, { stream: true }))) out.push(...step.next(message));
      } finally {
        // Events made before a failure in the same chunk still go out, ahead of the error.
        if (out.length > 0) await queue(out);
      }
    }
    async function finish(): Promise<void> {
      chunks.drop();
      events(decoder.decode() + "\n\n");
      // A translator ends in its own protocol, or throws its own error for a cut; in every case an upstream that never
      // reached an acceptable end was cut, and the client must not get a normal ending.
      const last = step.end();
      if (meter?.state() === "open") throw cutShort(upstreamName);
      if (last.length > 0) await queue(last);
      closing = true;
    }
    return {
      async pull() {
        // A pull that enqueues nothing is not called again, so read until something goes out or the stream ends.
        for (;;) {
          const piece = box.next();
          if (piece) return sink.send(piece);
          if (closing) return sink.complete(meter && reportedError(meter, upstreamName));
          const value = await chunks.next();
          if (!value) {
            await finish();
            continue;
          }
          await translate(value);
          // Nothing can follow the upstream's terminal event; an upstream that keeps the connection open is not waited for.
          if (meter?.state() === "finished") await finish();
        }
      },
      fail(error) {
        chunks.drop();
        // Events made before the failure still go out, ahead of the error (the box is only ever this full here: the
        // upstream is read only once what waited has gone out).
        for (let piece = box.next(); piece; piece = box.next()) sink.send(piece);
        const messages = step.fail ? step.fail(error) : errorEvents(error, options.protocol);
        sink.fail(error, messages.map((message) => encodeSse(seen(message))).join(""));
      },
    };
  });
}
