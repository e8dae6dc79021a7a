/**
 * @module Writing to KV when other processes share its file: a busy database is retried after a short jittered
 * backoff, a checked commit that lost to another writer is read again and retried, both a bounded number of times.
 * A write that still cannot land gives one log line (unless its caller logs the episode itself), one count for the
 * metrics and a {@linkcode KvWriteFailed} that its caller turns into its own rule (a 503, a batch kept for later, a
 * charge given up).
 */
import { GatewayError } from "./errors.ts";

/** What an attempt returns when its checked commit lost to another writer: read again and retry. */
export const RETRY: unique symbol = Symbol("retry");

/** Why a write gave up. */
export type GiveUpReason = "busy" | "contended" | "failed";

/** A write that could not land; a 503 with retry-after wherever it reaches a client. */
export class KvWriteFailed extends GatewayError {
  readonly operation: string;
  readonly reason: GiveUpReason;

  constructor(operation: string, reason: GiveUpReason, options: ErrorOptions = {}) {
    const why = reason === "failed" ? "it failed" : reason === "busy" ? "it stayed busy" : "it kept changing";
    super("unavailable", `The gateway's store cannot take this change now (${why}); try again`, {
      ...options,
      headers: { "retry-after": "1" },
    });
    this.name = "KvWriteFailed";
    this.operation = operation;
    this.reason = reason;
  }
}

/** Options for {@linkcode createKvWriter}. */
export interface KvWriterOptions {
  log(line: Record<string, unknown>): void;
  /** Waits between tries of a busy database; tests pass one that returns at once. */
  sleep?(ms: number): Promise<void>;
  /** A number in [0, 1) for the jitter. */
  random?(): number;
  /** Tries while the database is busy; with the delays below they take at most about 0.8 s. */
  busyTries?: number;
  /** Tries while checked commits keep losing; each loss means another write landed. */
  contendedTries?: number;
}

/** How one write reports giving up. */
export interface WriteOptions {
  /** Counts a give-up without its log line: the caller already said that its writes are failing. */
  quiet?: boolean;
}

/** Runs KV writes with bounded retries and counts those that gave up. */
export interface KvWriter {
  /**
   * Runs `attempt` (read, then commit) until it returns something other than {@linkcode RETRY}; throws
   * KvWriteFailed when the bounds run out or the attempt fails otherwise. `operation` names it in logs and metrics.
   */
  write<T>(operation: string, attempt: () => Promise<T | typeof RETRY>, options?: WriteOptions): Promise<T>;
  /** Writes given up so far, by operation. */
  giveUps(): ReadonlyMap<string, number>;
}

const FIRST_DELAY_MS = 2;
const MAX_DELAY_MS = 100;

/** SQLite's answer while another process holds the write lock; Deno KV passes it on without waiting. */
export function isBusy(err: unknown): boolean {
  return err instanceof Error && /database (table )?is (locked|busy)/i.test(err.message);
}

/**
 * SQLite's answers when the file itself fails (disk full, I/O error, read-only, cannot be opened, corrupt, out of
 * memory); Deno KV passes them on as a TypeError, as it does a key too large. Nothing is wrong with what was written:
 * the same write can land once the file recovers.
 */
export function isStoreFault(err: unknown): boolean {
  return err instanceof Error &&
    /disk is full|disk I\/O error|readonly database|unable to open database|disk image is malformed|out of memory/i
      .test(err.message);
}

/** A writer; each process keeps one, so its give-up counts cover every write path. */
export function createKvWriter(options: KvWriterOptions): KvWriter {
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const random = options.random ?? Math.random;
  const busyTries = options.busyTries ?? 12;
  const contendedTries = options.contendedTries ?? 100;
  const counts = new Map<string, number>();

  function giveUp(
    { operation, quiet }: { operation: string; quiet?: boolean },
    reason: GiveUpReason,
    tries: number,
    cause?: unknown,
  ): KvWriteFailed {
    counts.set(operation, (counts.get(operation) ?? 0) + 1);
    if (quiet) return new KvWriteFailed(operation, reason, { cause });
    options.log({
      level: "warn",
      event: "kv_write_gave_up",
      operation,
      reason,
      tries,
      // Only the class: a KV error's text may name the file.
      error: cause === undefined ? undefined : String((cause as Error)?.name ?? cause),
    });
    return new KvWriteFailed(operation, reason, { cause });
  }

  async function write<T>(
    operation: string,
    attempt: () => Promise<T | typeof RETRY>,
    { quiet }: WriteOptions = {},
  ): Promise<T> {
    const what = { operation, quiet };
    let busy = 0;
    let contended = 0;
    for (;;) {
      let result: T | typeof RETRY;
      try {
        result = await attempt();
      } catch (err) {
        if (err instanceof GatewayError) throw err;
        if (!isBusy(err)) throw giveUp(what, "failed", busy + contended + 1, err);
        if (++busy >= busyTries) throw giveUp(what, "busy", busy + contended, err);
        // Full jitter: processes that collided spread out instead of colliding again.
        await sleep(random() * Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** busy));
        continue;
      }
      if (result !== RETRY) return result;
      if (++contended >= contendedTries) throw giveUp(what, "contended", busy + contended);
    }
  }

  return { write, giveUps: () => counts };
}
