/**
 * @module A relayed stream's time limits, checked on the shared watchdog's ticks: the upstream silent past its idle
 * limit, or the whole stream past its total limit, aborts it with a timeout; the client left without a byte past the
 * keep-alive interval gets a keep-alive. A chunk or a send only raises a flag, and the tick that sees the flag takes
 * its time as the last moment of activity, so no timer is set per chunk.
 */
import { GatewayError } from "../core/errors.ts";
import type { Watchdog, Watched } from "../core/watchdog.ts";

/** Options for {@linkcode streamClock}; without a watchdog, or with no limit, the clock does nothing. */
export interface StreamClockOptions {
  watchdog?: Watchdog;
  /** Longest silence between upstream chunks. */
  idleMs?: number;
  /** Longest silence toward the client before a keep-alive. */
  keepAliveMs?: number;
  /** Milliseconds from the start within which the whole stream must end. */
  totalMs?: number;
  /** Names the upstream in the timeouts' messages. */
  upstreamName: string;
  /** Ends the stream for a limit it passed. */
  abort(error: GatewayError): void;
  /** Sends a keep-alive if one may go now; false when it may not (nothing sent yet, or in the middle of an event). */
  keepAlive(): boolean;
}

/** The limits of one stream. */
export interface StreamClock {
  /** The upstream sent something. */
  heard(): void;
  /** Something went out to the client. */
  sent(): void;
  /** Starts the limits, counted from now. */
  start(): void;
  /** Stops them for good. */
  stop(): void;
}

const IDLE: StreamClock = { heard() {}, sent() {}, start() {}, stop() {} };

/** The clock of one relayed stream. */
export function streamClock(options: StreamClockOptions): StreamClock {
  const { watchdog, idleMs, keepAliveMs, totalMs, upstreamName } = options;
  if (!watchdog || (idleMs === undefined && keepAliveMs === undefined && totalMs === undefined)) return IDLE;
  let heard = false;
  let sent = false;
  let heardAt = 0;
  let sentAt = 0;
  let until = Infinity;
  let stopped = false;
  const watched: Watched = { check };

  function check(now: number): void {
    if (stopped) return;
    if (now >= until) {
      return void options.abort(
        new GatewayError("timeout", `Upstream "${upstreamName}" did not answer within its total time limit`),
      );
    }
    if (heard) {
      heard = false;
      heardAt = now;
    } else if (idleMs !== undefined && now - heardAt >= idleMs) {
      const silent = now - heardAt;
      return void options.abort(
        new GatewayError("timeout", `Upstream "${upstreamName}" sent nothing for ${silent} ms`),
      );
    }
    if (keepAliveMs === undefined) return;
    if (sent) {
      sent = false;
      sentAt = now;
    } else if (now - sentAt >= keepAliveMs && options.keepAlive()) {
      sent = false;
      sentAt = now;
    }
  }

  return {
    heard: () => void (heard = true),
    sent: () => void (sent = true),
    start() {
      heardAt = sentAt = watchdog.now();
      if (totalMs !== undefined) until = heardAt + totalMs;
      watchdog.watch(watched);
    },
    stop() {
      stopped = true;
      watchdog.unwatch(watched);
    },
  };
}
