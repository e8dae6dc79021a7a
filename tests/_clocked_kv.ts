/**
 * @module A Deno KV whose entries expire by the test's clock: `expireIn` of a `set` (alone or in an atomic write) is
 * counted from the clock the test moves, and a read of an entry past it finds nothing, as a read of KV finds nothing
 * once it has dropped an expired entry. Everything else goes to the real KV beneath.
 */

/** Wraps `kv` so that entries written with `expireIn` are gone for reads once `now()` reaches their end. */
export function clockedKv(kv: Deno.Kv, now: () => number): Deno.Kv {
  const ends = new Map<string, number>();
  const name = (key: Deno.KvKey) => JSON.stringify(key, (_, v) => typeof v === "bigint" ? `${v}n` : v);
  const noteSet = (key: Deno.KvKey, options?: { expireIn?: number }) => {
    if (options?.expireIn === undefined) ends.delete(name(key));
    else ends.set(name(key), now() + options.expireIn);
  };
  const hide = <T>(entry: Deno.KvEntryMaybe<T>): Deno.KvEntryMaybe<T> => {
    const end = ends.get(name(entry.key));
    return end !== undefined && end <= now() ? { key: entry.key, value: null, versionstamp: null } : entry;
  };
  function atomic(op: Deno.AtomicOperation): Deno.AtomicOperation {
    const notes: (() => void)[] = [];
    const wrapped: Deno.AtomicOperation = new Proxy(op, {
      get(target, prop) {
        if (prop === "commit") {
          return async () => {
            const result = await target.commit();
            if (result.ok) { for (const note of notes) note(); }
            return result;
          };
        }
        const value = Reflect.get(target, prop, target);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          if (prop === "set") notes.push(() => noteSet(args[0] as Deno.KvKey, args[2] as { expireIn?: number }));
          if (prop === "delete") notes.push(() => ends.delete(name(args[0] as Deno.KvKey)));
          value.apply(target, args);
          return wrapped;
        };
      },
    });
    return wrapped;
  }
  return new Proxy(kv, {
    get(target, prop) {
      switch (prop) {
        case "get":
          return async (key: Deno.KvKey, options?: { consistency?: Deno.KvConsistencyLevel }) =>
            hide(await target.get(key, options));
        case "getMany":
          return async (keys: Deno.KvKey[], options?: { consistency?: Deno.KvConsistencyLevel }) =>
            (await target.getMany(keys, options)).map(hide);
        case "set":
          return async (key: Deno.KvKey, value: unknown, options?: { expireIn?: number }) => {
            const result = await target.set(key, value, options);
            noteSet(key, options);
            return result;
          };
        case "delete":
          return async (key: Deno.KvKey) => {
            await target.delete(key);
            ends.delete(name(key));
          };
        case "atomic":
          return () => atomic(target.atomic());
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
