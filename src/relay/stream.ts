/**
 * @module The client side of an upstream stream, in one of two pipelines over one client sink (stream_sink.ts): an
 * upstream that speaks the client's protocol is passed through byte for byte (stream_passthrough.ts), any other is
 * translated event by event (stream_translated.ts). Either way the upstream's keys are taken out, usage and completion
 * are observed on the way, the time limits and keep-alives (stream_clock.ts) are kept, and any failure after the first
 * byte becomes the client protocol's in-band error with no normal ending.
 */
import type { SseMessage, StreamStep } from "../core/sse.ts";
import type { Protocol } from "../core/types.ts";
import type { UsageMeter } from "../usage/meter.ts";
import type { ChunkReader } from "./body_reader.ts";
import { DRAIN_MS } from "./stream_end.ts";
import { passthroughStream } from "./stream_passthrough.ts";
import type { SinkOptions } from "./stream_sink.ts";
import { translatedStream } from "./stream_translated.ts";

export type { StreamEnd } from "./stream_sink.ts";
export { DRAIN_MS };

/** Options for {@linkcode relayStream}. */
export interface RelayStreamOptions extends SinkOptions {
  /** Translation; absent for passthrough, whose bytes reach the client unchanged. */
  step?: StreamStep;
  /** Watches the upstream's events for usage and a terminal event; required for passthrough. */
  meter?: UsageMeter;
  /**
   * Sees each batch of events before it goes out (translated, or the passthrough events the meter read); a promise
   * it returns holds the batch back until it settles (a stored answer is then in place before its client can refer
   * to it).
   */
  hold?(messages: readonly SseMessage[]): Promise<void> | undefined;
}

/** Pipes an upstream SSE body to the client, starting with its already-read first chunk. */
export function relayStream(
  reader: ChunkReader,
  first: Uint8Array,
  options: RelayStreamOptions,
): ReadableStream<Uint8Array> {
  const { step, meter } = options;
  if (step) return translatedStream(reader, first, { ...options, step });
  // Only the meter can tell a passthrough stream that ended well from one that was cut.
  if (!meter) throw new TypeError("A passthrough stream is relayed with a usage meter");
  return passthroughStream(reader, first, { ...options, meter });
}

/** Drives a translator step over a whole upstream SSE body, as the relay does; for tests and tools. */
export function translateSse(
  body: ReadableStream<Uint8Array>,
  step: StreamStep,
  protocol: Protocol,
): ReadableStream<Uint8Array> {
  return translatedStream(body.getReader(), new Uint8Array(0), {
    protocol,
    step,
    upstream: new AbortController(),
    upstreamName: "upstream",
    onFirstByte() {},
    onEnd() {},
  });
}
