/**
 * @module A test seam: a KV handle whose every call waits a round trip first, as a remote KV's (Deno Deploy, or
 * denokv over KV Connect) would, and counts its calls. Set only by MODELGATE_KV_RTT_MS, for `deno task bench:kv`
 * and tests; the gateway warns at start while it is on. See docs/scaling.md.
 */

/** KV calls made so far, by kind: get, getMany, list, set, delete, commit. */
export type KvCalls = ReadonlyMap<string, number>;

/** A KV handle with latency, and its call counts. */
export interface DelayedKv {
  kv: Deno.Kv;
  calls(): KvCalls;
}

const CALLS = new Set(["get", "getMany", "set", "delete"]);

/**
 * Wraps `kv` so each call waits `rttMs` (half before it reaches the store, half after it answers, so what it reads
 * is as old as a remote read's) and is counted. An atomic operation waits at its commit; a listing at its first page.
 */
export function delayedKv(kv: Deno.Kv, rttMs: number): DelayedKv {
  const counts = new Map<string, number>();
  const half = () => new Promise<void>((resolve) => setTimeout(resolve, rttMs / 2));
  const count = (call: string) => counts.set(call, (counts.get(call) ?? 0) + 1);
  async function trip<T>(call: string, run: () => Promise<T>): Promise<T> {
    count(call);
    await half();
    const result = await run();
    await half();
    return result;
  }

  const wrapped = new Proxy(kv, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (typeof name !== "string" || typeof value !== "function") return value;
      if (CALLS.has(name)) {
        return (...args: unknown[]) => trip(name, () => value.apply(target, args));
      }
      if (name === "atomic") {
        return () => {
          const op = target.atomic();
          const commit = op.commit.bind(op);
          op.commit = () => trip("commit", commit);
          return op;
        };
      }
      if (name === "list") {
        return async function* (...args: unknown[]) {
          count("list");
          await half();
          yield* value.apply(target, args) as Deno.KvListIterator<unknown>;
          await half();
        };
      }
      return value.bind(target);
    },
  });
  return { kv: wrapped, calls: () => counts };
}
