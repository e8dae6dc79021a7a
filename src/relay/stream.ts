/**
 * @module The client side of an upstream stream: bytes pass through as they arrive (or through a translator
 * step, whose events go out a piece per pull, see outbox.ts) with the upstream's keys taken out, usage and completion
 * are observed on the way, the time limits and keep-alives (stream_clock.ts) are kept, and any failure after the first
 * byte becomes the client protocol's in-band error with no normal ending.
 */
import { byteRedactor } from "../core/byte_redact.ts";
import { textRedactor } from "../core/redact.ts";
import { GatewayError, toGatewayError } from "../core/errors.ts";
import { encodeSse, type SseMessage, SseParser, type StreamStep } from "../core/sse.ts";
import type { Protocol } from "../core/types.ts";
import { errorEvents } from "../protocols/client_errors.ts";
import { PROTOCOLS } from "../protocols/registry.ts";
import type { UsageMeter } from "../usage/meter.ts";
import type { ChunkReader } from "./body_reader.ts";
import { eventTail } from "./event_tail.ts";
import { type Outbox, outbox, redactedView } from "./outbox.ts";
import { abortReason, drain, DRAIN_MS } from "./stream_end.ts";
import { streamClock } from "./stream_clock.ts";
import { type StreamWatch, streamWatch } from "./stream_watch.ts";
import type { Watchdog } from "../core/watchdog.ts";

/** How a relayed stream ended. */
export interface StreamEnd {
  /** Set when the stream failed or was cut; the client got it in-band. */
  error?: GatewayError;
  /** True when the client went away first. */
  cancelled: boolean;
}

/** Options for {@linkcode relayStream}. */
export interface RelayStreamOptions {
  /** The client's protocol, for in-band errors. */
  protocol: Protocol;
  /** Translation; absent for passthrough, whose bytes reach the client unchanged. */
  step?: StreamStep;
  /** Watches the upstream's events for usage and a terminal event; required for passthrough. */
  meter?: UsageMeter;
  /** Runs the limits below; without it none of them applies. */
  watchdog?: Watchdog;
  /** Longest silence between upstream chunks; no limit when absent. */
  idleMs?: number;
  /**
   * The longest silence toward the client before a keep-alive (an Anthropic `ping` event, else an SSE comment), so
   * idle watchdogs such as Claude Code's, and proxies, do not give up while the upstream thinks.
   */
  keepAliveMs?: number;
  /** Milliseconds from now within which the whole stream must end (the upstream's total limit). */
  totalMs?: number;
  /** Aborts the upstream request; also aborted from outside on client disconnect, total timeout or shutdown. */
  upstream: AbortController;
  /** Names the upstream in error messages. */
  upstreamName: string;
  /**
   * The upstream's keys and tokens: taken out of every upstream byte before anything reads or sends it, so neither
   * the client, nor a translation, nor a stored answer gets them (an upstream may quote its key in any event).
   */
  secrets?: readonly string[];
  /**
   * Sees each batch of translated events before it goes out; a promise it returns holds the batch back until it
   * settles (a stored answer is then in place before its client can refer to it).
   */
  hold?(messages: readonly SseMessage[]): Promise<void> | undefined;
  onFirstByte(): void;
  onEnd(end: StreamEnd): void;
}

export { DRAIN_MS };

const encoder = new TextEncoder();

/** Pipes an upstream SSE body to the client, starting with its already-read first chunk. */
export function relayStream(
  reader: ChunkReader,
  first: Uint8Array,
  options: RelayStreamOptions,
): ReadableStream<Uint8Array> {
  const { step, meter, upstream, protocol, watchdog } = options;
  let pending: Uint8Array | undefined = first;
  // Translated streams are parsed whole; a passthrough stream only as far as its meter needs.
  const decoder = step ? new TextDecoder() : undefined;
  const parser = step ? new SseParser() : undefined;
  // A passthrough stream whose answer is kept holds back the bytes of the event that completes it until it is kept.
  const held: SseMessage[] = [];
  const onEvent = options.hold && meter
    ? (message: SseMessage) => {
      meter.event(message);
      held.push(message);
    }
    : meter?.event;
  const watch: StreamWatch | undefined = !step && onEvent ? streamWatch(meter!.markers, onEvent) : undefined;
  const redactor = options.secrets ? byteRedactor(options.secrets) : undefined;
  // What a translator writes is searched again: it decodes the upstream's escapes (a key spelled `\u0073k-...` comes
  // out plain) and puts deltas back together (a Responses `.done` event holds the whole text).
  const written = redactor && step ? textRedactor(options.secrets!) : undefined;
  // Translated events wait here and go out a piece per pull, so a client that reads slowly holds the next back.
  const box: Outbox | undefined = step ? outbox(written) : undefined;
  // Set once the upstream ended well: the client's stream ends when what waits in the box has gone out.
  let closing = false;
  const tail = eventTail();
  const keepAlive = PROTOCOLS[protocol].stream.keepAlive;
  let started = false;
  let ended = false;
  let client: ReadableStreamDefaultController<Uint8Array>;
  const clock = streamClock({
    ...options,
    abort: (error) => upstream.abort(error),
    keepAlive() {
      // Only where an event has just ended: passthrough bytes, or a large translated event sent in slices, may stop
      // inside one (bytes of the next one held back by the redactor then follow it).
      if (!started || !tail.endsEvent()) return false;
      send(keepAlive);
      return true;
    },
  });
  // An aborted fetch does not always settle a read already waiting on its body (seen at shutdown, after the grace
  // period); cancelling the reader always does, and the read below then reports the abort.
  const cancelOnAbort = () => void reader.cancel(upstream.signal.reason).catch(() => {});
  upstream.signal.addEventListener("abort", cancelOnAbort, { once: true });

  function end(result: StreamEnd): void {
    if (ended) return;
    ended = true;
    upstream.signal.removeEventListener("abort", cancelOnAbort);
    clock.stop();
    options.onEnd(result);
  }
  function send(bytes: Uint8Array): void {
    if (!started) {
      started = true;
      options.onFirstByte();
    }
    clock.sent();
    tail.note(bytes);
    client.enqueue(bytes);
  }
  /** Parses translated input and hands each event to the meter; the events are the step's to translate. */
  function events(text: string): SseMessage[] {
    const messages = parser!.push(text);
    if (meter) { for (const message of messages) meter.event(message); }
    return messages;
  }
  /** Queues translated events once `hold` lets them go; nothing when the client left in the meantime. */
  async function queueEvents(events: SseMessage[]): Promise<void> {
    // What is kept of the answer (a stored response) is searched for secrets as what is sent is; each event's data
    // is read when asked for, so a large one is made for `hold` only if it looks at it.
    const held = options.hold?.(written ? events.map((message) => redactedView(message, written)) : events);
    if (held) {
      await held;
      if (ended) return;
    }
    box!.add(events);
  }
  function fail(err: GatewayError): void {
    redactor?.drop();
    // Events made before the failure still go out, ahead of the error (the box is only ever this full here: the
    // upstream is read only once what waited has gone out).
    for (let piece = box?.next(); piece; piece = box!.next()) send(piece);
    const messages = step?.fail ? step.fail(err) : errorEvents(err, protocol);
    // A passthrough stream may stop mid-event; a blank line closes that event so the error stands alone.
    const separator = tail.endsEvent() ? "" : "\n\n";
    const text = messages.map((message) => encodeSse(written ? redactedView(message, written) : message)).join("");
    send(encoder.encode(separator + text));
    client.close();
    reader.cancel().catch(() => {});
    end({ error: err, cancelled: false });
  }
  async function finish(): Promise<void> {
    redactor?.drop();
    if (watch) {
      watch.end();
      if (held.length > 0) await options.hold!(held.splice(0));
    } else if (step) events(decoder!.decode() + "\n\n");
    // A translator ends in its own protocol, or throws its own error for a cut; in every case an upstream that never
    // reached an acceptable end was cut, and the client must not get a normal ending.
    const last = step ? step.end() : [];
    if (meter?.state() === "open") {
      throw new GatewayError("upstream", `Upstream "${options.upstreamName}" ended the stream before it finished`);
    }
    if (last.length > 0) await queueEvents(last);
    closing = true;
  }
  /** Ends the client's stream once everything has gone out. */
  function complete(): void {
    if (ended) return;
    client.close();
    // The rest of the body (usually just the end of its chunked encoding) is read so the connection can serve the
    // next request; an upstream that holds it open after its last event is let go shortly.
    void drain(reader, watchdog, DRAIN_MS);
    const error = meter?.state() === "errored"
      ? new GatewayError("upstream", `Upstream "${options.upstreamName}" reported an error in the stream`)
      : undefined;
    end({ error, cancelled: false });
  }
  /** One upstream chunk through the translator, its events queued. */
  async function translate(value: Uint8Array): Promise<void> {
    const out: SseMessage[] = [];
    try {
      for (const message of events(decoder!.decode(value, { stream: true }))) out.push(...step!.next(message));
    } finally {
      // Events made before a failure in the same chunk still go out, ahead of the error.
      if (out.length > 0) await queueEvents(out);
    }
  }

  return new ReadableStream<Uint8Array>({
    start(controller) {
      client = controller;
      clock.start();
    },
    async pull() {
      try {
        // A pull that enqueues nothing is not called again, so read until something goes out or the stream ends.
        for (;;) {
          const piece = box?.next();
          if (piece) return send(piece);
          if (closing) return complete();
          let value = pending;
          pending = undefined;
          if (!value) {
            let read: ReadableStreamReadResult<Uint8Array>;
            try {
              read = await reader.read();
              if (upstream.signal.aborted) throw upstream.signal.reason;
            } catch (err) {
              // A stream whose end was already in sight (chat's finish chunk) ends well even if the connection does not.
              if (meter?.state() === "finishing") {
                await finish();
                continue;
              }
              throw err;
            }
            if (read.done) {
              await finish();
              continue;
            }
            value = read.value;
          }
          clock.heard();
          if (redactor) value = redactor.push(value);
          if (step) {
            await translate(value);
            // Nothing can follow the upstream's terminal event; an upstream that keeps the connection open is not waited for.
            if (meter?.state() === "finished") await finish();
            continue;
          }
          if (value.byteLength === 0) continue;
          if (options.hold) {
            watch!.push(value);
            const kept = held.length > 0 ? options.hold(held.splice(0)) : undefined;
            if (kept) await kept;
            if (ended) return;
            send(value);
          } else {
            send(value);
            // Usage is read after the bytes are already on their way to the client.
            watch?.push(value);
          }
          if (meter?.state() !== "finished") return;
          await finish();
        }
      } catch (err) {
        const error = upstream.signal.aborted
          ? abortReason(upstream.signal, options.upstreamName)
          : err instanceof GatewayError
          ? err
          : toGatewayError(err).kind === "internal"
          ? new GatewayError("upstream", `Upstream "${options.upstreamName}" connection failed during the stream`)
          : toGatewayError(err);
        fail(error);
      }
    },
    cancel(reason) {
      upstream.abort(reason);
      end({ cancelled: true });
      return reader.cancel(reason).catch(() => {});
    },
  });
}

/** Drives a translator step over a whole upstream SSE body, as the relay does; for tests and tools. */
export function translateSse(
  body: ReadableStream<Uint8Array>,
  step: StreamStep,
  protocol: Protocol,
): ReadableStream<Uint8Array> {
  return relayStream(body.getReader(), new Uint8Array(0), {
    protocol,
    step,
    upstream: new AbortController(),
    upstreamName: "upstream",
    onFirstByte() {},
    onEnd() {},
  });
}
