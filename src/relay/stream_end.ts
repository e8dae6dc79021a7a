/**
 * @module How a relayed stream lets go of its upstream: the rest of a finished body read briefly so its connection can
 * serve again, and the error a stream ends with when its upstream request was aborted.
 */
import type { Watchdog, Watched } from "../core/watchdog.ts";
import { GatewayError } from "../core/errors.ts";
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
