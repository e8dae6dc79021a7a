/**
 * @module How a relayed stream lets go of its upstream: the rest of a finished body read briefly so its connection can
 * serve again, and the errors a stream ends with: its upstream request aborted, its connection lost, its body ended
 * before the answer did, or an error the upstream reported in the stream.
 */
import type { Watchdog, Watched } from "../core/watchdog.ts";
import { GatewayError, toGatewayError } from "../core/errors.ts";
import type { UsageMeter } from "../usage/meter.ts";
import type { ChunkReader } from "./body_reader.ts";

/** How long the rest of a finished upstream body is read before its connection is given up. */
export const DRAIN_MS = 500;

/**
 * Reads what is left of an upstream body after its last event, for at most `ms` (checked by `watchdog`), then
 * cancels it; without a watchdog the rest is cancelled at once.
 */
export async function drain(reader: ChunkReader, watchdog: Watchdog | undefined, ms: number): Promise<void> {
  if (!watchdog) return void reader.cancel().catch(() => {});
  const until = watchdog.now() + ms;
  const limit: Watched = { check: (now) => void (now >= until && reader.cancel().catch(() => {})) };
  watchdog.watch(limit);
  try {
    while (!(await reader.read()).done) {
      // Nothing after the last event is for the client.
    }
  } catch {
    // A cancelled or broken body has nothing more to give.
  } finally {
    watchdog.unwatch(limit);
  }
}

/** The error a stream whose upstream request was aborted ends with: the abort's own, a timeout, or a lost connection. */
export function abortReason(signal: AbortSignal, upstreamName: string): GatewayError {
  const reason = signal.reason;
  if (reason instanceof GatewayError) return reason;
  if (reason instanceof DOMException && reason.name === "TimeoutError") {
    return new GatewayError("timeout", `Upstream "${upstreamName}" timed out during the stream`);
  }
  return new GatewayError("upstream", `Upstream "${upstreamName}" connection failed during the stream`);
}

/** The error a stream ends with for `err`, thrown while it was relayed. */
export function streamError(err: unknown, signal: AbortSignal, upstreamName: string): GatewayError {
  if (signal.aborted) return abortReason(signal, upstreamName);
  if (err instanceof GatewayError) return err;
  const error = toGatewayError(err);
  return error.kind === "internal"
    ? new GatewayError("upstream", `Upstream "${upstreamName}" connection failed during the stream`)
    : error;
}

/** The error of an upstream body that ended before its answer reached an acceptable end. */
export function cutShort(upstreamName: string): GatewayError {
  return new GatewayError("upstream", `Upstream "${upstreamName}" ended the stream before it finished`);
}

/** The error a completed stream records when its upstream reported one in-band (the client got it as it came). */
export function reportedError(meter: UsageMeter, upstreamName: string): GatewayError | undefined {
  return meter.state() === "errored"
    ? new GatewayError("upstream", `Upstream "${upstreamName}" reported an error in the stream`)
    : undefined;
}
