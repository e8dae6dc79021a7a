/**
 * @module Command-line parsing (positional words, `--flag value` / `--flag=value` / boolean flags, and everything
 * after `--` kept as it is) and the streams a command writes to.
 */
import type { ProcessNeeds } from "../serve/runtime.ts";

/** Parsed command line. */
export interface Args {
  words: string[];
  flags: Record<string, string | true>;
  /** The words after a lone `--`, untouched (`run -- COMMAND ...`); undefined when there is no `--`. */
  rest?: string[];
}

/** Where a command writes: the secret or data goes to `out`, human text to `err`. */
export interface Io {
  out(text: string): void;
  err(text: string): void;
  env(name: string): string | undefined;
  /** The whole environment, for a command `run` starts; the process's own when not given. */
  environment?(): Record<string, string>;
  /** The clock (epoch ms); the system's when not given. */
  now?(): number;
  /** Waits `ms` or until `signal` aborts (login's polling); a real timer when not given. */
  sleep?(ms: number, signal: AbortSignal): Promise<void>;
  /** Runs once the command's KV is open (the process entry point drops its write permission there). */
  onKvOpen?(needs?: ProcessNeeds): void;
}

const BOOLEAN_FLAGS = new Set([
  "help",
  "json",
  "disable",
  "enable",
  "clear-limits",
  "clear-guardrails",
  "no-expiry",
  "no-mcp",
]);

/** Splits argv into words and flags; a value flag without a value is an error. */
export function parseArgs(argv: readonly string[]): Args {
  const words: string[] = [];
  const flags: Record<string, string | true> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    // What follows is another program's command line: its flags are its own.
    if (arg === "--") return { words, flags, rest: argv.slice(i + 1) };
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
