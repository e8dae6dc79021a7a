/**
 * @module A KV handle whose commits fail, while a test says so, as a file another process holds, a losing writer or
 * a file system that is full or failing.
 */

/** What a test switches, and what it can read back. */
export interface FlakyKv {
  /** Commits throw SQLite's "database is locked", as when another process holds the write lock. */
  busy: boolean;
  /** The next this many commits are busy, then they pass again. */
  busyNext: number;
  /** Checked commits report a lost check, as when another writer got there first. */
  conflicting: boolean;
  /**
   * Commits throw a TypeError with this text, as Deno KV reports SQLite's failures of the file: "database or disk is
   * full", "disk I/O error". The same class as a key too large: only the text tells them apart.
   */
  failing: string | undefined;
  /** Commits refused so far. */
  refused: number;
}

/** Makes `kv`'s commits fail while the returned switches say so; `kv` is changed in place. */
export function flakyKv(kv: Deno.Kv): FlakyKv {
  const state: FlakyKv = { busy: false, busyNext: 0, conflicting: false, failing: undefined, refused: 0 };
  const atomic = kv.atomic.bind(kv);
  kv.atomic = () => {
    const op = atomic();
    const commit = op.commit.bind(op);
    op.commit = () => {
      if (state.busy || state.busyNext > 0) {
        state.busyNext = Math.max(0, state.busyNext - 1);
        state.refused++;
        return Promise.reject(new TypeError("database is locked"));
      }
      if (state.failing !== undefined) {
        state.refused++;
        return Promise.reject(new TypeError(state.failing));
      }
      if (state.conflicting) {
        state.refused++;
        return Promise.resolve({ ok: false });
      }
      return commit();
    };
    return op;
  };
  return state;
}
