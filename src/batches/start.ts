/**
 * @module The batches the gateway runs itself, put together over the app's dependencies: the loop that runs them on
 * this instance and the interface the batch routes call, both over the store's KV.
 */
import type { GatewayBatchRunner } from "../core/batch_contract.ts";
import type { Deps } from "../handlers/context.ts";
import { gatewayBatches } from "./gateway_run.ts";
import { idStore } from "./ids.ts";
import { type NativeSweep, startNativeSweep } from "./native_sweep.ts";
import { storePrincipals } from "./run/principal.ts";
import { type BatchRunner, startBatchRunner } from "./run/runner.ts";

/**
 * The running batches of one instance: the routes' interface, the loop that runs the gateway's own, and the sweep
 * that counts the native ones nobody reads; both to stop on shutdown.
 */
export interface GatewayBatches {
  api: GatewayBatchRunner;
  runner: BatchRunner;
  sweep: NativeSweep;
}

/** Starts this instance's runner and sweep over `deps` (each request is served through them); `instance` names its claims. */
export function startGatewayBatches(deps: Deps, instance: string = crypto.randomUUID()): GatewayBatches {
  const kv = deps.store.kv;
  const ids = idStore(kv);
  const settings = deps.config.batches;
  const runner = startBatchRunner({
    kv,
    app: deps,
    principalOf: storePrincipals(deps.store, deps.config.auth.oidc?.roles ?? [], deps.now),
    ids,
    instance,
    settings: {
      concurrency: settings.concurrency,
      leaseMs: settings.lease_ms,
      pollMs: settings.poll_ms,
      authRefreshMs: deps.config.usage.auth_refresh_ms,
    },
    now: () => deps.now().getTime(),
    log: deps.log,
  });
  const sweep = startNativeSweep(deps, ids, { intervalMs: settings.sweep_ms, perSweep: settings.sweep_batches });
  return { api: gatewayBatches({ kv, ids, now: deps.now, wake: runner.wake }), runner, sweep };
}
