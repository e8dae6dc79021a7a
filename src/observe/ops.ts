/**
 * @module The operator's endpoints outside /v1 auth: `GET /metrics` (Prometheus text, optionally behind the
 * admin key), `GET /healthz` (liveness, and health per upstream and per deployment) and `GET /readyz` (KV, config,
 * upstreams).
 */
import { readCredential, sameSecret } from "../access/auth.ts";
import type { AuthGuard } from "../access/guard.ts";
import type { Store } from "../access/store.ts";
import type { Config } from "../core/config.ts";
import { GatewayError } from "../core/errors.ts";
import { json } from "../core/http.ts";
import { deploymentsByUpstream } from "../relay/routing.ts";
import type { HealthBoard, UpstreamHealth } from "../relay/health.ts";
import type { RouteTable } from "../relay/routing.ts";
import type { GatewayMetrics } from "./metrics.ts";

/** What the operator's endpoints read of the app's dependencies. */
export interface OpsDeps {
  config: Config;
  table: RouteTable;
  store: Store;
  health: HealthBoard;
}

/** Options for {@linkcode opsRoutes}. */
export interface OpsOptions {
  metrics: GatewayMetrics;
  /** Required as a bearer token on /metrics when set. */
  metricsKey?: string;
  /** Slows wrong keys on /metrics as on the admin API: it is the same key. */
  guard?: AuthGuard;
  /** Set when the config asks for a key that the environment lacks: /metrics then refuses everyone. */
  metricsKeyMissing?: boolean;
  /** Longest wait for KV before /readyz calls it unreachable. */
  kvTimeoutMs?: number;
}

const NO_STORE = { "cache-control": "no-store" };

/**
 * An upstream as `GET /healthz` shows it: its own state, whether its key is set and what the upstream made of it
 * (`not_set` without one), and its deployments' states.
 */
export type UpstreamReport = Omit<UpstreamHealth, "models" | "credential"> & {
  has_key: boolean;
  credential: UpstreamHealth["credential"] | "not_set";
  models: UpstreamHealth["models"];
};

/** The body of `GET /healthz`. */
export interface HealthReport {
  status: "ok";
  upstreams: Record<string, UpstreamReport>;
}

/** The names of the upstreams whose key variable is set. */
function keyedUpstreams(table: RouteTable): Set<string> {
  const keyed = new Set<string>();
  for (const routes of table.routes.values()) {
    for (const route of routes) if (route.transport !== undefined) keyed.add(route.upstream.name);
  }
  return keyed;
}

/** Reads health per upstream and per deployment as `GET /healthz` shows it (the console shows the same). */
export function healthReport(deps: Pick<OpsDeps, "config" | "table" | "health">): () => HealthReport {
  const layout = deploymentsByUpstream(deps.config);
  const keyed = keyedUpstreams(deps.table);
  return () => {
    const upstreams: Record<string, UpstreamReport> = {};
    for (const [name, { models, credential, ...own }] of Object.entries(deps.health.snapshot(layout))) {
      const has_key = keyed.has(name);
      upstreams[name] = { ...own, has_key, credential: has_key ? credential : "not_set", models };
    }
    return { status: "ok", upstreams };
  };
}

/** The handler of the operator's endpoints; answers undefined for any other request. */
export function opsRoutes(
  deps: OpsDeps,
  options: OpsOptions,
): (req: Request, path: string, address: string) => Promise<Response | undefined> {
  const health = healthReport(deps);

  async function ready(): Promise<Response> {
    // A model that fails does not make the instance unready (every instance sees the same provider); an upstream this
    // instance cannot reach at all does.
    const usable = Object.entries(health().upstreams)
      .filter(([, upstream]) => upstream.has_key && upstream.state !== "cooling_down")
      .map(([name]) => name);
    const kv = await kvReachable(deps.store.kv, options.kvTimeoutMs ?? 2000);
    const checks = {
      config: deps.table.routes.size > 0 ? "ok" : "no models",
      kv: kv ? "ok" : "unreachable",
      upstreams: usable.length > 0 ? "ok" : "none usable (no key, or unreachable and cooling down)",
    };
    const isReady = Object.values(checks).every((check) => check === "ok");
    return json(
      { status: isReady ? "ready" : "not_ready", checks, usable_upstreams: usable },
      { status: isReady ? 200 : 503, headers: NO_STORE },
    );
  }

  async function metrics(req: Request, address: string): Promise<Response> {
    if (options.metricsKeyMissing) {
      return json({ error: "Metrics need the admin key, but MODELGATE_ADMIN_KEY is not set" }, { status: 503 });
    }
    if (options.metricsKey !== undefined) {
      const given = readCredential(req.headers);
      let attempt;
      try {
        attempt = given === undefined ? undefined : options.guard?.attempt("admin_key", address);
      } catch (err) {
        if (!(err instanceof GatewayError)) throw err;
        return json({ error: err.message }, { status: err.status, headers: err.headers });
      }
      if (!await sameSecret(given ?? "", options.metricsKey)) {
        attempt?.failed();
        return json({ error: "Metrics need the admin key as a bearer token" }, {
          status: 401,
          headers: { "www-authenticate": 'Bearer realm="modelgate metrics"' },
        });
      }
    }
    return new Response(options.metrics.render(), {
      headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8", ...NO_STORE },
    });
  }

  return async function ops(req, path, address) {
    if (req.method !== "GET") return undefined;
    if (path === "/metrics") return await metrics(req, address);
    if (path === "/healthz") return json(health(), { headers: NO_STORE });
    if (path === "/readyz") return await ready();
    return undefined;
  };
}

async function kvReachable(kv: Deno.Kv, timeoutMs: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<false>((resolve) => timer = setTimeout(() => resolve(false), timeoutMs));
  try {
    return await Promise.race([kv.get(["modelgate", "readiness"]).then(() => true, () => false), timedOut]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}
