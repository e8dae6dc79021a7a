/**
 * @module What a relayed stream's two pipelines (stream_passthrough.ts, stream_translated.ts) share. The client sink:
 * every byte goes out to the client through its `send` (the first byte noted, the clock kept, the tail of what went
 * out known, keep-alives sent only where an event has ended), and it fails the stream with an in-band error or
 * completes it, once. And the upstream's body, read a chunk at a time with its keys taken out.
 */
import { byteRedactor } from "../core/byte_redact.ts";
import type { GatewayError } from "../core/errors.ts";
import type { Protocol } from "../core/types.ts";
import type { Watchdog } from "../core/watchdog.ts";
import { PROTOCOLS } from "../protocols/registry.ts";
import type { UsageMeter } from "../usage/meter.ts";
import type { ChunkReader } from "./body_reader.ts";
import { eventTail } from "./event_tail.ts";
import { streamClock } from "./stream_clock.ts";
import { drain, DRAIN_MS, streamError } from "./stream_end.ts";

/** How a relayed stream ended. */
export interface StreamEnd {
  /** Set when the stream failed or was cut; the client got it in-band. */
  error?: GatewayError;
  /** True when the client went away first. */
  cancelled: boolean;
}

/** What both pipelines are given: the client's protocol, the stream's limits, its upstream and what to tell. */
export interface SinkOptions {
  /** The client's protocol, for in-band errors and keep-alives. */
  protocol: Protocol;
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
  onFirstByte(): void;
  onEnd(end: StreamEnd): void;
}

/** The client's side of a relayed stream: the one way out for its bytes. */
export interface ClientSink {
  /** Sends bytes to the client. */
  send(bytes: Uint8Array): void;
  /** The upstream sent something (its silence is counted from here). */
  heard(): void;
  /** True when what went out last ends an SSE event, so an event of the gateway's may follow at once. */
  endsEvent(): boolean;
  /** Ends the stream for `error` with `text`, the client protocol's error events, after what went out. */
  fail(error: GatewayError, text: string): void;
  /** Ends the stream normally; `error` is one the upstream reported in-band, which the client already has. */
  complete(error?: GatewayError): void;
  /** True once the stream ended, however it did. */
  ended(): boolean;
}

/** A pipeline over a sink: what goes out next, and how it ends for a failure. */
export interface Pipeline {
  /** Sends something to the client, or ends the stream (a pull that sends nothing is not called again). */
  pull(): Promise<void>;
  /** Ends the stream for `error`: what the pipeline still holds, then the error in the client's protocol. */
  fail(error: GatewayError): void;
}

const encoder = new TextEncoder();

/** The client's stream: `pipeline` is given the sink and pulls; whatever it throws fails the stream in-band. */
export function clientStream(
  reader: ChunkReader,
  options: SinkOptions,
  pipeline: (sink: ClientSink) => Pipeline,
): ReadableStream<Uint8Array> {
  const { upstream } = options;
  const tail = eventTail();
  const keepAlive = PROTOCOLS[options.protocol].stream.keepAlive;
  let started = false;
  let ended = false;
  // Set in start(), before anything can be sent.
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
  // period); cancelling the reader always does, and the read then reports the abort.
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
  const pipe = pipeline({
    send,
    heard: clock.heard,
    endsEvent: tail.endsEvent,
    fail(error, text) {
      // A passthrough stream may stop mid-event; a blank line closes that event so the error stands alone.
      send(encoder.encode((tail.endsEvent() ? "" : "\n\n") + text));
      client.close();
      reader.cancel().catch(() => {});
      end({ error, cancelled: false });
    },
    complete(error) {
      if (ended) return;
      client.close();
      // The rest of the body (usually just the end of its chunked encoding) is read so the connection can serve the
      // next request; an upstream that holds it open after its last event is let go shortly.
      void drain(reader, options.watchdog, DRAIN_MS);
      end({ error, cancelled: false });
    },
    ended: () => ended,
  });

  return new ReadableStream<Uint8Array>({
    start(controller) {
      client = controller;
      clock.start();
    },
    async pull() {
      try {
        await pipe.pull();
      } catch (err) {
        pipe.fail(streamError(err, upstream.signal, options.upstreamName));
      }
    },
    cancel(reason) {
      upstream.abort(reason);
      end({ cancelled: true });
      return reader.cancel(reason).catch(() => {});
    },
  });
}

/** The upstream's body as both pipelines read it. */
export interface UpstreamChunks {
  /**
   * The next chunk, the upstream's keys taken out (it may be empty), or undefined once the body ended, or broke after
   * the meter saw the answer's end in sight (chat's finish chunk).
   */
  next(): Promise<Uint8Array | undefined>;
  /** The body is done with: what the redactor holds back is an unfinished fragment, and may be most of a key. */
  drop(): void;
}

/** Reads `reader`, starting with its already-read `first` chunk, telling `sink` of each chunk heard. */
export function upstreamChunks(
  reader: ChunkReader,
  first: Uint8Array,
  options: SinkOptions,
  meter: UsageMeter | undefined,
  sink: ClientSink,
): UpstreamChunks {
  const { upstream } = options;
  const redactor = options.secrets ? byteRedactor(options.secrets) : undefined;
  let firstTaken = false;
  return {
    async next() {
      let value = first;
      if (firstTaken) {
        let read: ReadableStreamReadResult<Uint8Array>;
        try {
          read = await reader.read();
          if (upstream.signal.aborted) throw upstream.signal.reason;
        } catch (err) {
          // A stream whose end was already in sight ends well even if the connection does not.
          if (meter?.state() === "finishing") return undefined;
          throw err;
        }
        if (read.done) return undefined;
        value = read.value;
      }
      firstTaken = true;
      sink.heard();
      return redactor ? redactor.push(value) : value;
    },
    drop: () => redactor?.drop(),
  };
}
