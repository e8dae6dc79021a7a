/**
 * @module The passthrough pipeline: an upstream that speaks the client's protocol has its bytes sent on as they
 * arrive (only its keys taken out), while the usage meter reads just the events that can matter to it
 * (stream_watch.ts). When the answer is kept (a stored Responses answer), the bytes of the event that completes it
 * wait until it is kept, so a client cannot refer to an answer not yet there.
 */
import { encodeSse, type SseMessage } from "../core/sse.ts";
import { errorEvents } from "../protocols/client_errors.ts";
import type { UsageMeter } from "../usage/meter.ts";
import type { ChunkReader } from "./body_reader.ts";
import { cutShort, reportedError } from "./stream_end.ts";
import { clientStream, type SinkOptions, upstreamChunks } from "./stream_sink.ts";
import { streamWatch } from "./stream_watch.ts";

/** Options for {@linkcode passthroughStream}. */
export interface PassthroughOptions extends SinkOptions {
  /** Watches the upstream's events for usage and the terminal event, which say whether the stream ended well. */
  meter: UsageMeter;
  /** Sees the events the meter read before their bytes go out; a promise it returns holds them back until it settles. */
  hold?(messages: readonly SseMessage[]): Promise<void> | undefined;
}

/** Pipes an upstream SSE body in the client's own protocol to the client, starting with its already-read first chunk. */
export function passthroughStream(
  reader: ChunkReader,
  first: Uint8Array,
  options: PassthroughOptions,
): ReadableStream<Uint8Array> {
  const { meter, hold, upstreamName } = options;
  // Events the meter read, waiting for `hold` before their bytes go out.
  const held: SseMessage[] = [];
  const watch = streamWatch(
    meter.markers,
    hold
      ? (message) => {
        meter.event(message);
        held.push(message);
      }
      : meter.event,
  );
  return clientStream(reader, options, (sink) => {
    const chunks = upstreamChunks(reader, first, options, meter, sink);
    async function finish(): Promise<void> {
      chunks.drop();
      watch.end();
      if (hold && held.length > 0) await hold(held.splice(0));
      // An upstream that never reached an acceptable end was cut, and the client must not get a normal ending.
      if (meter.state() === "open") throw cutShort(upstreamName);
      sink.complete(reportedError(meter, upstreamName));
    }
    return {
      async pull() {
        // A pull that enqueues nothing is not called again, so read until something goes out or the stream ends.
        for (;;) {
          const value = await chunks.next();
          if (!value) return await finish();
          if (value.byteLength === 0) continue;
          if (hold) {
            watch.push(value);
            const kept = held.length > 0 ? hold(held.splice(0)) : undefined;
            if (kept) await kept;
            if (sink.ended()) return;
            sink.send(value);
          } else {
            sink.send(value);
            // Usage is read after the bytes are already on their way to the client.
            watch.push(value);
          }
          // Nothing can follow the upstream's terminal event; an upstream that keeps the connection open is not waited for.
          if (meter.state() === "finished") await finish();
          return;
        }
      },
      fail(error) {
        chunks.drop();
        sink.fail(error, errorEvents(error, options.protocol).map(encodeSse).join(""));
      },
    };
  });
}
