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
