/**
 * @module The client side of an upstream stream: bytes pass through as they arrive (or through a translator
 * step), usage and completion are observed on the way, silence longer than the idle limit fails the stream,
 * and any failure after the first byte becomes the client protocol's in-band error with no normal ending.
 */
import { GatewayError, toGatewayError } from "../core/errors.ts";
import { encodeSse, errorEvents, type SseMessage, SseParser, type StreamStep } from "../core/sse.ts";
import type { Protocol } from "../core/types.ts";
import type { UsageMeter } from "../usage/meter.ts";
import type { ChunkReader } from "./body_reader.ts";

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
  /** Longest silence between upstream chunks; no limit when absent. */
  idleMs?: number;
  /**
   * The longest silence toward the client before a keep-alive (an Anthropic `ping` event, else an SSE comment), so
   * idle watchdogs such as Claude Code's, and proxies, do not give up while the upstream thinks.
   */
  keepAliveMs?: number;
  /** Aborts the upstream request; also aborted from outside on client disconnect, total timeout or shutdown. */
  upstream: AbortController;
  /** Names the upstream in error messages. */
  upstreamName: string;
  /**
   * Sees each batch of translated events before it goes out; a promise it returns holds the batch back until it
   * settles (a stored answer is then in place before its client can refer to it).
   */
  hold?(messages: readonly SseMessage[]): Promise<void> | undefined;
  onFirstByte(): void;
  onEnd(end: StreamEnd): void;
}

const encoder = new TextEncoder();

/** What a keep-alive looks like to each client protocol (see docs/protocols.md, "Server-sent events"). */
const KEEP_ALIVE: Record<Protocol, Uint8Array> = {
  anthropic: encoder.encode('event: ping\ndata: {"type":"ping"}\n\n'),
  "openai-chat": encoder.encode(": keep-alive\n\n"),
  "openai-responses": encoder.encode(": keep-alive\n\n"),
};
const LF = 10;
const CR = 13;

/** How long the rest of a finished upstream body is read before its connection is given up. */
const DRAIN_MS = 500;

/** Reads what is left of an upstream body after its last event, for at most `ms`, then cancels it. */
async function drain(reader: ChunkReader, ms: number): Promise<void> {
  const timer = setTimeout(() => reader.cancel().catch(() => {}), ms);
  try {
    while (!(await reader.read()).done) {
      // Nothing after the last event is for the client.
    }
  } catch {
    // A cancelled or broken body has nothing more to give.
  } finally {
    clearTimeout(timer);
  }
}

/** True when `tail` (the last bytes sent) ends an SSE event, so an error event can follow directly. */
function endsEvent(tail: Uint8Array): boolean {
  const n = tail.length;
  if (n >= 2 && tail[n - 1] === LF && (tail[n - 2] === LF || (n >= 4 && tail[n - 2] === CR && tail[n - 3] === LF))) {
    return true;
  }
  return n >= 2 && tail[n - 1] === CR && tail[n - 2] === CR;
}

function abortReason(signal: AbortSignal, upstreamName: string): GatewayError {
  const reason = signal.reason;
  if (reason instanceof GatewayError) return reason;
  if (reason instanceof DOMException && reason.name === "TimeoutError") {
    return new GatewayError("timeout", `Upstream "${upstreamName}" timed out during the stream`);
  }
  return new GatewayError("upstream", `Upstream "${upstreamName}" connection failed during the stream`);
}

/** Pipes an upstream SSE body to the client, starting with its already-read first chunk. */
export function relayStream(
  reader: ChunkReader,
  first: Uint8Array,
  options: RelayStreamOptions,
): ReadableStream<Uint8Array> {
  const { step, meter, upstream, protocol } = options;
  let pending: Uint8Array | undefined = first;
  const decoder = new TextDecoder();
  const parser = new SseParser();
  let tail: Uint8Array = new Uint8Array([LF, LF]);
  let started = false;
  let ended = false;
  let lastChunkAt = Date.now();
  let idleTimer: ReturnType<typeof setTimeout> | undefined;
  let keepAliveTimer: ReturnType<typeof setInterval> | undefined;
  let lastSentAt = Date.now();

  function armIdle(delay: number): void {
    if (options.idleMs === undefined) return;
    idleTimer = setTimeout(() => {
      const silent = Date.now() - lastChunkAt;
      if (silent >= options.idleMs!) {
        upstream.abort(new GatewayError("timeout", `Upstream "${options.upstreamName}" sent nothing for ${silent} ms`));
      } else armIdle(options.idleMs! - silent);
    }, delay);
  }
  // An aborted fetch does not always settle a read already waiting on its body (seen at shutdown, after the grace
  // period); cancelling the reader always does, and the read below then reports the abort.
  const cancelOnAbort = () => void reader.cancel(upstream.signal.reason).catch(() => {});
  upstream.signal.addEventListener("abort", cancelOnAbort, { once: true });

  function end(result: StreamEnd): void {
    if (ended) return;
    ended = true;
    upstream.signal.removeEventListener("abort", cancelOnAbort);
    clearTimeout(idleTimer);
    clearInterval(keepAliveTimer);
    options.onEnd(result);
  }
  function send(controller: ReadableStreamDefaultController<Uint8Array>, bytes: Uint8Array): void {
    if (!started) {
      started = true;
      options.onFirstByte();
    }
    lastSentAt = Date.now();
    controller.enqueue(bytes);
  }
  function events(messages: SseMessage[]): SseMessage[] {
    if (meter) { for (const message of messages) meter.event(message); }
    return messages;
  }
  /** Sends translated events once `hold` lets them go; nothing when the client left in the meantime. */
  async function sendEvents(controller: ReadableStreamDefaultController<Uint8Array>, out: SseMessage[]) {
    const held = options.hold?.(out);
    if (held) {
      await held;
      if (ended) return;
    }
    send(controller, encoder.encode(out.map(encodeSse).join("")));
  }
  function fail(controller: ReadableStreamDefaultController<Uint8Array>, err: GatewayError): void {
    const messages = step?.fail ? step.fail(err) : errorEvents(err, protocol);
    // A passthrough stream may stop mid-event; a blank line closes that event so the error stands alone.
    const separator = step || endsEvent(tail) ? "" : "\n\n";
    send(controller, encoder.encode(separator + messages.map(encodeSse).join("")));
    controller.close();
    reader.cancel().catch(() => {});
    end({ error: err, cancelled: false });
  }
  async function finish(controller: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
    events(parser.push(decoder.decode() + "\n\n"));
    // A translator ends in its own protocol, or throws its own error for a cut; in every case an upstream that never
    // reached an acceptable end was cut, and the client must not get a normal ending.
    const last = step ? step.end() : [];
    if (meter?.state() === "open") {
      throw new GatewayError("upstream", `Upstream "${options.upstreamName}" ended the stream before it finished`);
    }
    if (last.length > 0) await sendEvents(controller, last);
    if (ended) return;
    controller.close();
    // The rest of the body (usually just the end of its chunked encoding) is read so the connection can serve the
    // next request; an upstream that holds it open after its last event is let go shortly.
    void drain(reader, DRAIN_MS);
    const error = meter?.state() === "errored"
      ? new GatewayError("upstream", `Upstream "${options.upstreamName}" reported an error in the stream`)
      : undefined;
    end({ error, cancelled: false });
  }

  return new ReadableStream<Uint8Array>({
    start(controller) {
      if (options.idleMs !== undefined) armIdle(options.idleMs);
      const every = options.keepAliveMs;
      if (every !== undefined) {
        // Translated output goes out in whole events; passthrough bytes only get one where an event has just ended.
        keepAliveTimer = setInterval(() => {
          if (ended || !started || Date.now() - lastSentAt < every || (!step && !endsEvent(tail))) return;
          send(controller, KEEP_ALIVE[protocol]);
        }, every);
      }
    },
    async pull(controller) {
      try {
        // A pull that enqueues nothing is not called again, so read until something goes out or the stream ends.
        for (;;) {
          let read: ReadableStreamReadResult<Uint8Array>;
          if (pending) read = { done: false, value: pending };
          else {
            try {
              read = await reader.read();
              if (upstream.signal.aborted) throw upstream.signal.reason;
            } catch (err) {
              // A stream whose end was already in sight (chat's finish chunk) ends well even if the connection does not.
              if (meter?.state() === "finishing") return await finish(controller);
              throw err;
            }
          }
          pending = undefined;
          lastChunkAt = Date.now();
          if (read.done) return await finish(controller);
          const value = read.value;
          if (step) {
            const out: SseMessage[] = [];
            try {
              for (const message of events(parser.push(decoder.decode(value, { stream: true })))) {
                out.push(...step.next(message));
              }
            } finally {
              // Events made before a failure in the same chunk still go out, ahead of the error.
              if (out.length > 0) await sendEvents(controller, out);
            }
            // Nothing can follow the upstream's terminal event; an upstream that keeps the connection open is not waited for.
            if (meter?.state() === "finished") return await finish(controller);
            if (out.length === 0) continue;
            return;
          }
          if (value.byteLength === 0) continue;
          send(controller, value);
          // Only the last four bytes matter; a run of tiny chunks must not grow it.
          tail = value.byteLength >= 4
            ? value.subarray(value.byteLength - 4)
            : Uint8Array.from([...tail, ...value]).slice(-4);
          // Usage is read from a decoded copy after the bytes are already on their way to the client.
          events(parser.push(decoder.decode(value, { stream: true })));
          if (meter?.state() === "finished") return await finish(controller);
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
        fail(controller, error);
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
