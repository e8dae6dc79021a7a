/**
 * @module Session pins: the upstream that last served a session, per token, model and session, kept while the prompt
 * cache it protects may still live. KV holds every pin for all instances; each instance keeps the pins it has used in
 * memory, so a pin it knows costs no KV read. KV is read when a pin is unknown here, written when a pin is made or
 * moved, and checked again in the background (at most every `syncMs` while the pin is in use) to learn of a move made
 * by another instance and to keep KV's copy alive while the session goes on.
 */
import { isObject } from "../core/types.ts";
import type { SessionAffinity, SessionId } from "./session.ts";

/** How a request's pin turned out: followed, new, or moved to the deployment that served it instead. */
export type PinOutcome = "kept" | "made" | "moved";

/** The pins of every session, shared through KV. */
export interface PinTable {
  /** The upstream the request's session is pinned to, if any; reads KV only when this instance does not know it. */
  find(affinity: SessionAffinity): Promise<string | undefined>;
  /**
   * Pins the request's session (and its Responses answer) to `upstream`, which served it, and says how its pin
   * turned out. `followed` is the pin the request was routed by: serving there never undoes a move learnt meanwhile.
   */
  served(affinity: SessionAffinity, upstream: string, followed?: string): PinOutcome | undefined;
  /** Resolves once the KV reads and writes started so far have ended. */
  settled(): Promise<void>;
}

/** Options for {@linkcode createPinTable}. */
export interface PinTableOptions {
  now(): number;
  /** How often a pin in use is checked against KV, in the background. */
  syncMs: number;
  log(line: Record<string, unknown>): void;
  /** Pins kept in memory at most; past it the least recently used half goes, which only costs KV reads. */
  maxEntries?: number;
}

/** A pin as KV stores it. */
interface StoredPin {
  upstream: string;
  /** When the pin ends (epoch milliseconds) unless the session is used again. */
  until: number;
}

/** A pin as this instance knows it. */
interface LocalPin extends StoredPin {
  /** The life the last request asked for. */
  ttlMs: number;
  /** KV's copy as this instance last read or wrote it: its version (null: none yet) and its end. */
  versionstamp: string | null;
  storedUntil: number;
  /** When KV was last read or written for this pin. */
  checkedAt: number;
  /** True while a KV read or write for this pin is under way. */
  busy: boolean;
}

type PinKey = [string, string, string, string, string];

function isStoredPin(value: unknown): value is StoredPin {
  return isObject(value) && typeof value.upstream === "string" && typeof value.until === "number";
}

/** Creates the pin table over `kv`. */
export function createPinTable(kv: Deno.Kv, options: PinTableOptions): PinTable {
  const { now, syncMs, log } = options;
  const maxEntries = options.maxEntries ?? 50_000;
  const entries = new Map<string, LocalPin>();
  const pending = new Set<Promise<void>>();

  const kvKey = (affinity: SessionAffinity, session: SessionId): PinKey => [
    "affinity",
    affinity.token,
    affinity.model,
    session.kind,
    session.id,
  ];
  // Token ids, model ids and session ids never hold a NUL.
  const localKey = (key: PinKey) => key.join("\u0000");
  const failed = (err: unknown) => log({ event: "affinity_kv_failed", error: String((err as Error)?.name) });

  /** Runs KV work for `pin` off the request path; a failure costs a cache miss at worst, never the request. */
  function background(pin: LocalPin, work: () => Promise<void>): void {
    pin.busy = true;
    const done: Promise<void> = work().catch(failed).finally(() => {
      pin.busy = false;
      pending.delete(done);
    });
    pending.add(done);
  }

  /** Stores `pin` as the most recently used, making room first when the table is full. */
  function put(key: string, pin: LocalPin): void {
    entries.delete(key);
    if (entries.size >= maxEntries) {
      const at = now();
      for (const [old, entry] of entries) if (entry.until <= at) entries.delete(old);
      let drop = entries.size >= maxEntries ? Math.ceil(entries.size / 2) : 0;
      for (const old of entries.keys()) {
        if (drop-- <= 0) break;
        entries.delete(old);
      }
    }
    entries.set(key, pin);
  }

  /** Writes `pin` to KV (only over `expected` when given, so a write made meanwhile by another instance stands). */
  async function store(key: PinKey, pin: LocalPin, expected?: Deno.KvEntryMaybe<unknown>): Promise<void> {
    const { upstream, until } = pin;
    const value: StoredPin = { upstream, until };
    const expireIn = Math.max(1, until - now());
    const result = expected
      ? await kv.atomic().check(expected).set(key, value, { expireIn }).commit()
      : await kv.set(key, value, { expireIn });
    if (!result.ok) return;
    pin.versionstamp = result.versionstamp;
    pin.storedUntil = until;
  }

  /**
   * Reconciles a known pin with KV. A copy another instance wrote since this one last looked is later than what this
   * one knows (KV orders writes by version), so it stands; otherwise KV's copy is brought up to this one's use.
   */
  function sync(key: PinKey, pin: LocalPin): void {
    background(pin, async () => {
      const found = await kv.get<StoredPin>(key);
      pin.checkedAt = now();
      if (found.versionstamp !== null && found.versionstamp !== pin.versionstamp && isStoredPin(found.value)) {
        pin.upstream = found.value.upstream;
        pin.until = Math.max(pin.until, found.value.until);
        pin.versionstamp = found.versionstamp;
        pin.storedUntil = found.value.until;
        return;
      }
      // KV's copy is this one: renewed once it lags by half a life, so a session in steady use writes rarely.
      if (found.versionstamp !== null && pin.until - pin.storedUntil <= pin.ttlMs / 2) return;
      await store(key, pin, found);
    });
  }

  return {
    async find(affinity) {
      if (!affinity.session) return undefined;
      const key = kvKey(affinity, affinity.session);
      const local = localKey(key);
      const at = now();
      const known = entries.get(local);
      if (known && known.until > at) {
        if (!known.busy && at - known.checkedAt >= syncMs) sync(key, known);
        return known.upstream;
      }
      let found: Deno.KvEntryMaybe<StoredPin> | undefined;
      try {
        found = await kv.get<StoredPin>(key);
      } catch (err) {
        failed(err);
      }
      // A request of the same session may have pinned it here while KV was read.
      const meanwhile = entries.get(local);
      if (meanwhile && meanwhile.until > now()) return meanwhile.upstream;
      const stored = found?.value;
      if (!isStoredPin(stored) || stored.until <= now()) return undefined;
      put(local, {
        ...stored,
        ttlMs: stored.until - at,
        versionstamp: found!.versionstamp,
        storedUntil: stored.until,
        checkedAt: at,
        busy: false,
      });
      return stored.upstream;
    },
    served(affinity, upstream, followed) {
      const pin = (session: SessionId): PinOutcome => {
        const key = kvKey(affinity, session);
        const local = localKey(key);
        const at = now();
        const known = entries.get(local);
        const alive = known !== undefined && known.until > at;
        if (alive && known.upstream === upstream) {
          known.until = Math.max(known.until, at + affinity.ttlMs);
          known.ttlMs = affinity.ttlMs;
          put(local, known);
          if (!known.busy && known.until - known.storedUntil > known.ttlMs / 2) sync(key, known);
          return "kept";
        }
        // The pin moved (a check of KV, or another request here) while this request was served where it pointed.
        if (alive && upstream === followed) return "kept";
        const made: LocalPin = {
          upstream,
          until: at + affinity.ttlMs,
          ttlMs: affinity.ttlMs,
          versionstamp: null,
          storedUntil: 0,
          checkedAt: at,
          busy: false,
        };
        put(local, made);
        // The latest decision is written as it is: made here, it is the newest anyone has.
        background(made, () => store(key, made));
        return alive ? "moved" : "made";
      };
      if (affinity.responseId) pin({ kind: "response", id: affinity.responseId });
      return affinity.session ? pin(affinity.session) : undefined;
    },
    async settled() {
      while (pending.size > 0) await Promise.all(pending);
    },
  };
}
