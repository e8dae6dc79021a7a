/**
 * @module The client side of an upstream stream: bytes pass through as they arrive (or through a translator
 * step) with the upstream's keys taken out, usage and completion are observed on the way, silence longer than the
 * idle limit fails the stream, and any failure after the first byte becomes the client protocol's in-band error
 * with no normal ending.
 */
import { byteRedactor } from "../core/byte_redact.ts";
import { textRedactor } from "../core/redact.ts";
import { GatewayError, toGatewayError } from "../core/errors.ts";
import { encodeSse, errorEvents, type SseMessage, SseParser, type StreamStep } from "../core/sse.ts";
import type { Protocol } from "../core/types.ts";
import type { UsageMeter } from "../usage/meter.ts";
import type { ChunkReader } from "./body_reader.ts";
import { abortReason, drain, DRAIN_MS } from "./stream_end.ts";
import { type StreamWatch, streamWatch } from "./stream_watch.ts";
import type { Watchdog, Watched } from "../core/watchdog.ts";

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

/** What a keep-alive looks like to each client protocol (see docs/protocols.md, "Server-sent events"). */
const KEEP_ALIVE: Record<Protocol, Uint8Array> = {
  anthropic: encoder.encode('event: ping\ndata: {"type":"ping"}\n\n'),
  "openai-chat": encoder.encode(": keep-alive\n\n"),
  "openai-responses": encoder.encode(": keep-alive\n\n"),
  gemini: encoder.encode(": keep-alive\n\n"),
};
const LF = 10;
const CR = 13;

/** True when `tail` (the last four bytes sent) ends an SSE event, so an error event can follow directly. */
function endsEvent(tail: Uint8Array): boolean {
  if (tail[3] === LF && (tail[2] === LF || (tail[2] === CR && tail[1] === LF))) return true;
  return tail[3] === CR && tail[2] === CR;
}

/** Pipes an upstream SSE body to the client, starting with its already-read first chunk. */
export function relayStream(
  reader: ChunkReader,
  first: Uint8Array,
  options: RelayStreamOptions,
): ReadableStream<Uint8Array> {
  const { step, meter, upstream, protocol, watchdog, idleMs, keepAliveMs } = options;
  let pending: Uint8Array | undefined = first;
  // Translated streams are parsed whole; a passthrough stream only as far as its meter needs.
  const decoder = step ? new TextDecoder() : undefined;
  const parser = step ? new SseParser() : undefined;
  const watch: StreamWatch | undefined = !step && meter ? streamWatch(meter.markers, meter.event) : undefined;
  const redactor = options.secrets ? byteRedactor(options.secrets) : undefined;
  // What a translator writes is searched again: it decodes the upstream's escapes (a key spelled `\u0073k-...` comes
  // out plain) and puts deltas back together (a Responses `.done` event holds the whole text).
  const written = redactor && step ? textRedactor(options.secrets!) : undefined;
  // The last four bytes sent; the stream starts as if an event had just ended.
  const tail = new Uint8Array([0, 0, LF, LF]);
  let started = false;
  let ended = false;
  let client: ReadableStreamDefaultController<Uint8Array>;
  // The limits are checked by the shared watchdog on its ticks: a chunk or a send only raises a flag, and the tick
  // that sees the flag takes its time as the last moment of activity.
  let heard = false;
  let sent = false;
  let heardAt = 0;
  let sentAt = 0;
  let until = Infinity;
  const limits: Watched | undefined =
    watchdog && (idleMs !== undefined || keepAliveMs !== undefined || options.totalMs !== undefined)
      ? { check }
      : undefined;

  function check(now: number): void {
    if (ended) return;
    if (now >= until) {
      const error = new GatewayError(
        "timeout",
        `Upstream "${options.upstreamName}" did not answer within its total time limit`,
      );
      return void upstream.abort(error);
    }
    if (heard) {
      heard = false;
      heardAt = now;
    } else if (idleMs !== undefined && now - heardAt >= idleMs) {
      const silent = now - heardAt;
      return void upstream.abort(
        new GatewayError("timeout", `Upstream "${options.upstreamName}" sent nothing for ${silent} ms`),
      );
    }
    if (keepAliveMs === undefined || !started) return;
    if (sent) {
      sent = false;
      sentAt = now;
    } else if (now - sentAt >= keepAliveMs && (step || endsEvent(tail))) {
      // Translated output goes out in whole events; passthrough bytes only get one where an event has just ended
      // (bytes of the next one held back by the redactor then follow it).
      send(KEEP_ALIVE[protocol]);
      sent = false;
      sentAt = now;
    }
  }
  // An aborted fetch does not always settle a read already waiting on its body (seen at shutdown, after the grace
  // period); cancelling the reader always does, and the read below then reports the abort.
  const cancelOnAbort = () => void reader.cancel(upstream.signal.reason).catch(() => {});
  upstream.signal.addEventListener("abort", cancelOnAbort, { once: true });

  function end(result: StreamEnd): void {
    if (ended) return;
    ended = true;
    upstream.signal.removeEventListener("abort", cancelOnAbort);
    if (limits) watchdog!.unwatch(limits);
    options.onEnd(result);
  }
  function send(bytes: Uint8Array): void {
    if (!started) {
      started = true;
      options.onFirstByte();
    }
    sent = true;
    const n = bytes.length;
    if (n >= 4) {
      tail[0] = bytes[n - 4];
      tail[1] = bytes[n - 3];
      tail[2] = bytes[n - 2];
      tail[3] = bytes[n - 1];
    } else {
      for (let i = 0; i < n; i++) {
        tail.copyWithin(0, 1);
        tail[3] = bytes[i];
      }
    }
    client.enqueue(bytes);
  }
  /** Parses translated input and hands each event to the meter; the events are the step's to translate. */
  function events(text: string): SseMessage[] {
    const messages = parser!.push(text);
    if (meter) { for (const message of messages) meter.event(message); }
    return messages;
  }
  /** Translated events with the upstream's secrets taken out of what they say. */
  function redacted(out: SseMessage[]): SseMessage[] {
    if (!written) return out;
    return out.map((message) => {
      const data = written.text(message.data);
      return data === message.data ? message : { ...message, data };
    });
  }
  /** Sends translated events once `hold` lets them go; nothing when the client left in the meantime. */
  async function sendEvents(events: SseMessage[]): Promise<void> {
    const out = redacted(events);
    const held = options.hold?.(out);
    if (held) {
      await held;
      if (ended) return;
    }
    send(encoder.encode(out.map(encodeSse).join("")));
  }
  function fail(err: GatewayError): void {
    redactor?.drop();
    const messages = redacted(step?.fail ? step.fail(err) : errorEvents(err, protocol));
    // A passthrough stream may stop mid-event; a blank line closes that event so the error stands alone.
    const separator = step || endsEvent(tail) ? "" : "\n\n";
    send(encoder.encode(separator + messages.map(encodeSse).join("")));
    client.close();
    reader.cancel().catch(() => {});
    end({ error: err, cancelled: false });
  }
  async function finish(): Promise<void> {
    redactor?.drop();
    if (watch) watch.end();
    else if (step) events(decoder!.decode() + "\n\n");
    // A translator ends in its own protocol, or throws its own error for a cut; in every case an upstream that never
    // reached an acceptable end was cut, and the client must not get a normal ending.
    const last = step ? step.end() : [];
    if (meter?.state() === "open") {
      throw new GatewayError("upstream", `Upstream "${options.upstreamName}" ended the stream before it finished`);
    }
    if (last.length > 0) await sendEvents(last);
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
  /** One upstream chunk through the translator; true when something went out to the client. */
  async function translate(value: Uint8Array): Promise<boolean> {
    const out: SseMessage[] = [];
    try {
      for (const message of events(decoder!.decode(value, { stream: true }))) out.push(...step!.next(message));
    } finally {
      // Events made before a failure in the same chunk still go out, ahead of the error.
      if (out.length > 0) await sendEvents(out);
    }
    return out.length > 0;
  }

  return new ReadableStream<Uint8Array>({
    start(controller) {
      client = controller;
      if (!limits) return;
      heardAt = sentAt = watchdog!.now();
      if (options.totalMs !== undefined) until = heardAt + options.totalMs;
      watchdog!.watch(limits);
    },
    async pull() {
      try {
        // A pull that enqueues nothing is not called again, so read until something goes out or the stream ends.
        for (;;) {
          let value = pending;
          pending = undefined;
          if (!value) {
            let read: ReadableStreamReadResult<Uint8Array>;
            try {
              read = await reader.read();
              if (upstream.signal.aborted) throw upstream.signal.reason;
            } catch (err) {
              // A stream whose end was already in sight (chat's finish chunk) ends well even if the connection does not.
              if (meter?.state() === "finishing") return await finish();
              throw err;
            }
            if (read.done) return await finish();
            value = read.value;
          }
          heard = true;
          if (redactor) value = redactor.push(value);
          if (step) {
            const wrote = await translate(value);
            // Nothing can follow the upstream's terminal event; an upstream that keeps the connection open is not waited for.
            if (meter?.state() === "finished") return await finish();
            if (wrote) return;
            continue;
          }
          if (value.byteLength === 0) continue;
          send(value);
          // Usage is read after the bytes are already on their way to the client.
          watch?.push(value);
          if (meter?.state() === "finished") return await finish();
          return;
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
