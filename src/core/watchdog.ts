/**
 * @module One timer for every upstream call in flight: each call and stream registers a check (has its answer
 * come in time, has its upstream been silent too long, is a keep-alive due) and one interval runs them all while
 * any is registered, instead of a timer of its own per request that almost never fires.
 */

/** Something the watchdog looks at on every tick, with the tick's time in epoch milliseconds. */
export interface Watched {
  check(now: number): void;
}

/** The shared ticker. */
export interface Watchdog {
  /** Starts looking at `item` on every tick (the first tick runs the interval timer if none runs). */
  watch(item: Watched): void;
  /** Stops looking at `item`; the timer stops when nothing is left. */
  unwatch(item: Watched): void;
  /** The time of the checks, in epoch milliseconds. */
  now(): number;
}

/** Options for {@linkcode createWatchdog}. */
export interface WatchdogOptions {
  /** Milliseconds between checks: how late past its limit a check may fire at most. */
  tickMs: number;
  now(): number;
}

/** A watchdog ticking every `tickMs` while anything is watched. */
export function createWatchdog(options: WatchdogOptions): Watchdog {
  const watched = new Set<Watched>();
  let timer: ReturnType<typeof setInterval> | undefined;
  function tick(): void {
    const now = options.now();
    // An item may unwatch itself (or another) from its check; a Set iterates safely over deletions.
    for (const item of watched) item.check(now);
  }
  return {
    watch(item) {
      watched.add(item);
      timer ??= setInterval(tick, options.tickMs);
    },
    unwatch(item) {
      if (!watched.delete(item) || watched.size > 0) return;
      clearInterval(timer);
      timer = undefined;
    },
    now: options.now,
  };
}

/**
 * The tick for a config's limits: a tenth of the shortest, so a limit fires at most 10% late, between 5 ms and
 * one second.
 */
export function tickFor(limitsMs: readonly number[]): number {
  const shortest = Math.min(...limitsMs);
  return Math.max(5, Math.min(1000, Math.floor(shortest / 10)));
}
