/**
 * @module Totals of closed days kept in memory. Once no request that started on a UTC day can still be recorded,
 * that day's aggregates no longer change, so a range of days reads KV only for the days still open. Bounded in
 * rows; the day used least recently goes first.
 */
import type { Counter, Dimension } from "./log_entry.ts";

/** One day's sums of one dimension: name -> counter -> sum (cost in pico-units). */
export type DaySums = Map<string, Map<Counter, bigint>>;

/** The closed days read so far, by dimension and day. */
export interface DayCache {
  get(dimension: Dimension, day: string): DaySums | undefined;
  /** Keeps a closed day's sums; they must not be changed afterwards. */
  set(dimension: Dimension, day: string, sums: DaySums): void;
}

/** Enough rows for a year of a few hundred tokens, or weeks of a busy team's sessions. */
const MAX_ROWS = 100_000;

/** A cache holding at most `maxRows` names' sums in all. */
export function dayCache(maxRows = MAX_ROWS): DayCache {
  // A Map iterates in insertion order: re-inserting on use keeps the least recently used first.
  const days = new Map<string, DaySums>();
  let rows = 0;
  return {
    get(dimension, day) {
      const key = `${dimension}\0${day}`;
      const sums = days.get(key);
      if (sums) {
        days.delete(key);
        days.set(key, sums);
      }
      return sums;
    },
    set(dimension, day, sums) {
      const key = `${dimension}\0${day}`;
      if (days.has(key) || sums.size > maxRows) return;
      days.set(key, sums);
      rows += sums.size;
      for (const [oldest, old] of days) {
        if (rows <= maxRows) break;
        days.delete(oldest);
        rows -= old.size;
      }
    },
  };
}

/**
 * The first UTC day that may still change at `now`: a request is recorded under the day it started, and can end
 * `lateMs` after (its deadline and its longest stream, the usage flush, clocks of other instances).
 */
export function openSince(now: number, lateMs: number): string {
  return new Date(now - lateMs).toISOString().slice(0, 10);
}
