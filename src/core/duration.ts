/** @module Durations as operators write them (`30d`, `12h`, `45m`, `90s`, `2w`), for the CLI and the admin API. */

const UNITS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** Parses a duration such as `30d`, `12h`, `45m`, `90s` or `2w` into milliseconds. */
export function parseDuration(text: string): number {
  const match = /^(\d+)([smhdw])$/.exec(text.trim());
  if (!match || Number(match[1]) === 0) {
    throw new RangeError(`Cannot parse duration "${text}": use a positive number and s, m, h, d or w, e.g. 30d`);
  }
  return Number(match[1]) * UNITS[match[2]];
}

/** The start of a range given as a date (its midnight UTC) or as a duration back from `now`, in epoch ms. */
export function sinceMs(since: string, now: Date): number {
  return /^\d{4}-\d{2}-\d{2}$/.test(since) ? Date.parse(`${since}T00:00:00Z`) : now.getTime() - parseDuration(since);
}
