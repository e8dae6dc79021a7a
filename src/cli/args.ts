/** @module Command-line parsing: positional words and `--flag value` / `--flag=value` / boolean flags. */

/** Parsed command line. */
export interface Args {
  words: string[];
  flags: Record<string, string | true>;
}

const BOOLEAN_FLAGS = new Set(["help", "json", "disable", "enable", "clear-limits", "no-expiry"]);

/** Splits argv into words and flags; a value flag without a value is an error. */
export function parseArgs(argv: readonly string[]): Args {
  const words: string[] = [];
  const flags: Record<string, string | true> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "-h") {
      flags.help = true;
    } else if (arg.startsWith("--")) {
      const eq = arg.indexOf("=");
      const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
      if (eq !== -1) flags[name] = arg.slice(eq + 1);
      else if (BOOLEAN_FLAGS.has(name)) flags[name] = true;
      else if (i + 1 < argv.length && !argv[i + 1].startsWith("--")) flags[name] = argv[++i];
      else throw new RangeError(`Cannot parse arguments: --${name} needs a value`);
    } else {
      words.push(arg);
    }
  }
  return { words, flags };
}

const UNITS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** Parses a duration such as `30d`, `12h`, `45m`, `90s` or `2w` into milliseconds. */
export function parseDuration(text: string): number {
  const match = /^(\d+)([smhdw])$/.exec(text.trim());
  if (!match || Number(match[1]) === 0) {
    throw new RangeError(`Cannot parse duration "${text}": use a positive number and s, m, h, d or w, e.g. 30d`);
  }
  return Number(match[1]) * UNITS[match[2]];
}
