/**
 * @module The background sweep that counts native batches nobody reads after they end: every `batches.sweep_ms` it
 * takes the queued batches that are due (at most `batches.sweep_batches`), moves each forward as its claim so one
 * instance asks about it, asks its provider for its state, and once it has ended counts its requests' usage once.
 */
import type { IdRecord } from "../core/batch_contract.ts";
import type { Principal } from "../core/principal.ts";
import type { Deps } from "../handlers/context.ts";
import type { IdStore } from "./ids.ts";
import { anthropicState, type BatchRead, hasEnded, openaiState } from "./native_state.ts";
import { nativeNamed } from "./upstreams.ts";

/** How the sweep works, from `batches` in the config. */
export interface SweepSettings {
  intervalMs: number;
  perSweep: number;
}

/** The running sweep. */
export interface NativeSweep {
  /** One sweep now; answers how many batches it asked about. */
  sweep(): Promise<number>;
  /** Stops: the sweep under way finishes the batch it is on and no other begins. Idempotent. */
  stop(): Promise<void>;
}

/** The owner as the store has it now; undefined when its token or group is gone (its usage is still recorded). */
async function ownerOf(deps: Deps, record: IdRecord): Promise<Principal | undefined> {
  const token = await deps.store.getToken(record.owner);
  const group = token && await deps.store.getGroup(token.group);
  return token && group ? { token, group } : undefined;
}

/** Starts the sweep over `deps`; it runs until {@linkcode NativeSweep.stop}. */
export function startNativeSweep(deps: Deps, ids: IdStore, settings: SweepSettings): NativeSweep {
  let stopped = false;
  let woken = Promise.withResolvers<void>();
  // A provider slow to answer does not hold the shutdown past the gateway's own close.
  const signal = deps.closing ?? new AbortController().signal;

  /** Asks about one queued batch once this instance holds it; true when it asked the provider. */
  async function visit(entry: Deno.KvEntry<string>, now: number): Promise<boolean> {
    const held = await ids.postpone(entry, now + settings.intervalMs);
    if (!held) return false;
    const record = await ids.get("batch", entry.value);
    if (!record || record.settled || record.upstream === null) {
      await ids.unqueue(held);
      return false;
    }
    // A deployment gone from the config is asked about again once it is back, until the queue entry expires.
    const native = nativeNamed(deps.table, record.protocol, record.upstream);
    if (!native) return false;
    const reader = { clientHeaders: new Headers(), requestId: `sweep_${record.id}`, signal };
    const read: BatchRead = { deps, reader, record, native, principal: await ownerOf(deps, record) };
    const state = record.protocol === "anthropic" ? await anthropicState(read) : await openaiState(read);
    if (state instanceof Response) {
      // The provider no longer has it: there is nothing left to count.
      if (state.status === 404) await ids.unqueue(held);
      await state.body?.cancel();
    } else if (hasEnded(record, state)) await ids.unqueue(held);
    return true;
  }

  async function sweep(): Promise<number> {
    const now = deps.now().getTime();
    let asked = 0;
    for (const entry of await ids.due(now, settings.perSweep)) {
      if (stopped) break;
      try {
        if (await visit(entry, now)) asked++;
      } catch (err) {
        deps.log({ level: "warn", event: "batch_sweep_error", batch: entry.value, error: String(err) });
      }
    }
    return asked;
  }

  // Each sweep comes an interval after the last one ended (the first, an interval after the start).
  async function loop(): Promise<void> {
    while (!stopped) {
      const timer = setTimeout(() => woken.resolve(), settings.intervalMs);
      await woken.promise;
      clearTimeout(timer);
      woken = Promise.withResolvers<void>();
      if (stopped) break;
      await sweep().catch((err) => deps.log({ level: "warn", event: "batch_sweep_error", error: String(err) }));
    }
  }

  const running = loop();
  let stopping: Promise<void> | undefined;
  return {
    sweep,
    stop() {
      if (stopping) return stopping;
      stopped = true;
      woken.resolve();
      return stopping = running;
    },
  };
}
