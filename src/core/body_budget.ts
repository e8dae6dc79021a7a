/**
 * @module The budget of request-body bytes in flight: a request holds what its body takes until its exchange is
 * over, so large requests arriving together cannot take the process's memory without bound. A body that does not
 * fit waits briefly for others to finish, then gets a 503 with retry-after.
 */
import { GatewayError } from "./errors.ts";

/** Bodies up to this size are counted but never wait: they are most requests and cost little. */
export const SMALL_BODY_BYTES = 64 * 1024;

/** What one request holds of the budget. */
export interface BodyHold {
  /** Takes `bytes` more, waiting for room when the budget is full; throws a 503 when none comes in time. */
  grow(bytes: number): Promise<void>;
  /** Gives back everything this request holds; later calls do nothing. */
  release(): void;
}

/** The process's budget. */
export interface BodyBudget {
  hold(): BodyHold;
  /**
   * Takes `bytes` at once when they fit, by the rule {@linkcode BodyHold.grow} follows, and never waits: for bytes
   * already received (a socket's message), which waiting would hold all the same. Undefined when they do not fit.
   */
  tryHold(bytes: number): BodyHold | undefined;
  /** Bytes held now. */
  inFlight(): number;
}

/** Options for {@linkcode createBodyBudget}. */
export interface BodyBudgetOptions {
  /** How long a body waits for room before its 503. */
  waitMs: number;
  /** Waits `ms` unless `signal` aborts first (a release wakes the waiters); resolves false when it did. */
  sleep(ms: number, signal: AbortSignal): Promise<boolean>;
  now(): number;
}

/** A budget of `maxBytes` in flight. A body alone is always let in, so one within max_body_bytes never starves. */
export function createBodyBudget(maxBytes: number, options: BodyBudgetOptions): BodyBudget {
  let inFlight = 0;
  let wake = new AbortController();
  // Bodies waiting for room; with none, a release has nobody to wake (and aborting a signal is not free).
  let waiting = 0;

  function released(bytes: number): void {
    inFlight -= bytes;
    if (waiting === 0) return;
    // Every waiter looks again; those that fit go on, the others wait out the rest of their time.
    wake.abort();
    wake = new AbortController();
  }

  const fitsWith = (held: number, bytes: number) =>
    held + bytes <= SMALL_BODY_BYTES || inFlight + bytes <= maxBytes || inFlight === held;

  const budget: BodyBudget = {
    inFlight: () => inFlight,
    tryHold(bytes) {
      if (!fitsWith(0, bytes)) return undefined;
      const hold = budget.hold();
      // It fits, so grow() takes it before its first await, at once.
      void hold.grow(bytes);
      return hold;
    },
    hold() {
      let held = 0;
      let done = false;
      return {
        async grow(bytes) {
          const fits = () => fitsWith(held, bytes);
          const until = options.now() + options.waitMs;
          while (!fits()) {
            const left = until - options.now();
            let slept = left <= 0;
            if (!slept) {
              waiting++;
              try {
                slept = await options.sleep(left, wake.signal);
              } finally {
                waiting--;
              }
            }
            if (slept) {
              if (fits()) break;
              throw new GatewayError(
                "unavailable",
                "The gateway is receiving too many large requests at once; try again shortly",
                { headers: { "retry-after": "1" } },
              );
            }
          }
          held += bytes;
          inFlight += bytes;
        },
        release() {
          if (done) return;
          done = true;
          const bytes = held;
          held = 0;
          if (bytes > 0) released(bytes);
        },
      };
    },
  };
  return budget;
}
