/**
 * @module The app's dependencies built from a loaded config and an open store: each upstream's transport, the route
 * table, health, limits and usage (the operator), metrics, the MCP hub, stored responses, and the observers in their
 * order. `serve` builds them once; tests and benches build them around a store of their own.
 */
import { deviceBroker } from "../access/device_grant.ts";
import { oauthServer } from "../access/oauth_server.ts";
import { auditTrail } from "../admin/audit.ts";
import { createOperator } from "../access/operator.ts";
import type { Store } from "../access/store.ts";
import { memoryPool } from "../conversations/memory_pool.ts";
import { type Sealer, sealerFromEnv } from "../conversations/seal.ts";
import { guardBook } from "../core/guard_book.ts";
import { responseStore } from "../conversations/store.ts";
import type { Config } from "../core/config.ts";
import { createBodyBudget } from "../core/body_budget.ts";
import type { Observer } from "../core/exchange.ts";
import type { Deps } from "../handlers/context.ts";
import { createSocketBoard } from "../handlers/socket/board.ts";
import { accessLog, redactingLog } from "../observe/log.ts";
import { createHub, mcpHealth } from "../mcp/hub.ts";
import { mcpSecrets } from "../mcp/secrets.ts";
import { createMetrics } from "../observe/metrics.ts";
import { tracingEnabled } from "../observe/tracing_switch.ts";
import { createTransports, type Credentialed, upstreamSecrets } from "../providers/mod.ts";
import { opsRoutes } from "../observe/ops.ts";
import { createHealthBoard } from "../relay/health.ts";
import { createPinTable } from "../relay/pins.ts";
import { relayWatchdog, sleep } from "../relay/relay.ts";
import { createRetryBudget } from "../relay/retry_budget.ts";
import { buildRouteTable, deploymentsByUpstream } from "../relay/routing.ts";

/** How long a large body waits for room in the in-flight budget before its 503. */
const BODY_BUDGET_WAIT_MS = 2000;

/** Options for {@linkcode buildDeps}. */
export interface BuildDepsOptions {
  env(name: string): string | undefined;
  /** The log sink; access lines of every exchange go here too. */
  log(line: Record<string, unknown>): void;
  observers?: Observer[];
  closing?: AbortSignal;
  /** Aborted when the gateway starts to shut down; answers from then on close their connection. */
  stopping?: AbortSignal;
  fetch?: typeof fetch;
  /** The clock; tests freeze it so limit windows cannot roll over mid-test. */
  now?(): Date;
  /** Waits out an upstream's retry-after; tests observe the wait instead of spending it. */
  sleep?(ms: number, signal: AbortSignal): Promise<boolean>;
  /** A number in [0, 1) for the weighted choice; tests make it predictable. */
  random?(): number;
  /** Each upstream's transport (or why it has none), when already built; else built from `env`. */
  transports?: Map<string, Credentialed>;
  /** When each undated model was first served, as recorded in KV ({@linkcode recordFirstServed}). */
  firstServed?: ReadonlyMap<string, string>;
  /** Seals compaction items; else made from MODELGATE_COMPACTION_KEY in `env`. */
  sealer?: Sealer;
  /** The count of socket memory, shared by the workers of one process; else this gateway's own. */
  socketMemory?: SharedArrayBuffer;
}

/** Each upstream's transport, with the credentials its variables name (files are read once, now). */
export function upstreamTransports(
  config: Config,
  options: Pick<BuildDepsOptions, "env" | "fetch" | "now" | "log">,
): Map<string, Credentialed> {
  return createTransports(config.upstreams, {
    env: options.env,
    fetch: options.fetch ?? globalThis.fetch,
    now: options.now ?? (() => new Date()),
    log: options.log,
    readTextFile: (path) => Deno.readTextFileSync(path),
  });
}

/**
 * The app's dependencies for a loaded config and an open store (`deps.operator.close()` ends them). Observers run
 * in order: limits and usage, the given ones, then the metrics and the access log, which read what the others
 * left on the exchange.
 */
export function buildDeps(config: Config, store: Store, options: BuildDepsOptions): Deps {
  const now = options.now ?? (() => new Date());
  const transports = options.transports ?? upstreamTransports(config, options);
  // Every upstream credential, whatever its shape, is taken out of every line the gateway logs from here on.
  const mcpCredentials = mcpSecrets(config, options.env);
  const log = redactingLog(options.log, () => [...upstreamSecrets(transports), ...mcpCredentials]);
  const operator = createOperator(config, store, {
    env: options.env,
    log,
    now: () => now().getTime(),
    fetch: options.fetch,
  });
  const table = buildRouteTable(config, (upstream) => transports.get(upstream.name)?.transport, {
    firstServed: options.firstServed,
    now: now(),
  });
  const health = createHealthBoard(config.routing, () => now().getTime());
  const layout = deploymentsByUpstream(config);
  const sockets = createSocketBoard(memoryPool(config.responses_socket.total_memory_bytes, options.socketMemory));
  const mcp = createHub(config, {
    env: options.env,
    fetch: options.fetch ?? globalThis.fetch,
    log,
    now: () => now().getTime(),
    kv: store.kv,
    writes: store.writes,
    closing: options.closing,
  });
  const audit = auditTrail(store.kv, { days: config.audit.days, writes: store.writes });
  // The authorization server of /mcp writes to the admin audit trail, which sits above it: handed in here.
  const oauth = oauthServer(config, {
    fetch: options.fetch ?? globalThis.fetch,
    async audit({ who, action, target, before, after, ip, user_agent }) {
      const actor = { name: who, role: "member" as const, via: "oauth" as const, ip, user_agent };
      await audit.record(actor, { time: now(), action, target, before, after });
    },
  });
  const metrics = createMetrics({
    openSockets: () => sockets.count(),
    models: table.models.keys(),
    upstreams: layout.keys(),
    health: () => health.snapshot(layout),
    kvGiveUps: () => store.writes.giveUps(),
    usageWaiting: () => operator.usage.waiting(),
    limitShares: () => operator.limiter.stats(),
    kvCalls: store.kvCalls,
    authThrottled: () => operator.guard.refusals(),
    mcpServers: config.mcp_servers.map((server) => server.name),
    mcpHealth: () => mcpHealth(mcp),
    oauthEvents: () => oauth.counts(),
  });
  const sealer = options.sealer ?? sealerFromEnv(options.env).sealer;
  const deps: Deps = {
    config,
    table,
    store,
    now,
    log,
    health,
    retryBudget: createRetryBudget(config.routing.retry_budget, () => now().getTime()),
    pins: createPinTable(store.kv, {
      now: () => now().getTime(),
      syncMs: config.routing.affinity.sync_ms,
      log,
    }),
    sleep: options.sleep ?? sleep,
    random: options.random ?? Math.random,
    guards: operator.guards,
    observers: [
      ...operator.observers,
      ...options.observers ?? [],
      metrics.observer,
      accessLog(log, table.models.keys()),
    ],
    closing: options.closing,
    stopping: options.stopping,
    watchdog: relayWatchdog(config),
    notices: new Set(),
    operator,
    responses: config.responses_store.enabled
      ? responseStore(store.kv, {
        days: config.responses_store.days,
        now: () => now().getTime(),
        writes: store.writes,
      })
      : undefined,
    sealer,
    urlTraced: tracingEnabled(options.env),
    bodyBudget: createBodyBudget(config.max_inflight_body_bytes, {
      waitMs: BODY_BUDGET_WAIT_MS,
      sleep: options.sleep ?? sleep,
      now: () => now().getTime(),
    }),
    sockets,
    mcp,
    oauth,
    guardrails: {
      book: guardBook(config.guardrails, config.groups),
      tag: sealer.tag,
      fetch: options.fetch ?? globalThis.fetch,
      env: options.env,
    },
  };
  const oidc = config.auth.oidc;
  if (oidc && operator.oidc) {
    deps.device = deviceBroker({ config: oidc, client: operator.oidc, kv: store.kv, now });
  }
  const { adminKey } = operator;
  const required = config.metrics.require_admin_key;
  deps.ops = opsRoutes(deps, {
    metrics,
    metricsKey: required ? adminKey : undefined,
    guard: operator.guard,
    metricsKeyMissing: required && !adminKey,
  });
  return deps;
}
