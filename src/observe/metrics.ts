/**
 * @module The gateway's Prometheus metrics, fed by exchange observers and read from its parts at scrape time (those
 * of /mcp calls in mcp_metrics.ts). Every label value comes from a bounded set (configured model ids and upstream
 * names, endpoint patterns, status codes, error kinds), so client input can neither grow the page without bound nor
 * put a secret on it.
 */
import type { KvCalls } from "../access/kv_delay.ts";
import type { ShareStats } from "../access/shares.ts";
import type { Exchange, Observer } from "../core/exchange.ts";
import type { HealthState, UpstreamHealth } from "../relay/health.ts";
import { mcpMetrics } from "./mcp_metrics.ts";
import { createRegistry, type Labels, type Registry } from "./prometheus.ts";

/** What the metrics need to know of the config: the names label values may take, and where health is read. */
export interface MetricsScope {
  models: Iterable<string>;
  upstreams: Iterable<string>;
  /** Health per upstream and deployment (configured names only), read at scrape time. */
  health?(): Record<string, UpstreamHealth>;
  /** KV writes given up so far, by the gateway's own operation names, read at scrape time. */
  kvGiveUps?(): ReadonlyMap<string, number>;
  /** Request-log entries kept in memory until the store takes them, read at scrape time. */
  usageWaiting?(): number;
  /** What the limit shares asked of KV so far. */
  limitShares?(): ShareStats;
  /** KV calls by kind, only while the round-trip test seam is on. */
  kvCalls?(): KvCalls;
  /** Responses sockets open now, read at scrape time. */
  openSockets?(): number;
  /** Requests refused (429) for guessing credentials, by credential kind, read at scrape time. */
  authThrottled?(): ReadonlyMap<string, number>;
  /** The configured MCP servers' names. */
  mcpServers?: Iterable<string>;
  /** Whether each MCP server answers its listings (true), does not (false), or was not asked yet (absent). */
  mcpHealth?(): ReadonlyMap<string, boolean>;
  /** What the OAuth authorization server of /mcp did, keyed `event outcome` (both from fixed sets). */
  oauthEvents?(): ReadonlyMap<string, number>;
}

/** A per-app metrics set: an observer that feeds it and the page it renders. */
export interface GatewayMetrics {
  observer: Observer;
  render(): string;
}

const DURATION_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
const TTFB_BUCKETS = [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** Outcomes an attempt or a request may report; anything else is counted as "other". */
const KINDS = new Set([
  "ok",
  "invalid_request",
  "authentication",
  "permission",
  "not_found",
  "request_too_large",
  "request_timeout",
  "rate_limit",
  "overloaded",
  "timeout",
  "upstream",
  "unavailable",
  "internal",
  "client_closed",
]);

/** A client's own cancellation is neither a failed request nor a failed attempt; its 499 is counted with the rest. */
const CANCELLED = "client_closed";

const OTHER = "other";

/** Creates the metrics for one app. */
export function createMetrics(scope: MetricsScope): GatewayMetrics {
  const models = new Set(scope.models);
  const upstreams = new Set(scope.upstreams);
  const model = (id: string | undefined) => id === undefined ? "none" : models.has(id) ? id : OTHER;
  const upstream = (name: string | undefined) => name === undefined ? "none" : upstreams.has(name) ? name : OTHER;
  const kind = (value: string) => KINDS.has(value) ? value : OTHER;
  const status = (code: number) => Number.isInteger(code) && code >= 100 && code <= 599 ? String(code) : OTHER;

  const registry = createRegistry();
  const requests = registry.counter(
    "modelgate_requests_total",
    "Requests by endpoint pattern, status, public model and the upstream that answered last",
  );
  const errors = registry.counter(
    "modelgate_request_errors_total",
    "Failed requests by endpoint pattern and error kind, including failures reported in-band in a stream",
  );
  const duration = registry.histogram(
    "modelgate_request_duration_seconds",
    "Time from a request's arrival to the end of its response, stream included",
    DURATION_BUCKETS,
  );
  const ttfb = registry.histogram(
    "modelgate_time_to_first_byte_seconds",
    "Time from a request's arrival to the first byte of its response",
    TTFB_BUCKETS,
  );
  const attempts = registry.counter(
    "modelgate_upstream_attempts_total",
    "Upstream attempts by upstream, public model and outcome",
  );
  const failures = registry.counter(
    "modelgate_upstream_failures_total",
    "Failed upstream attempts by upstream, public model and error kind",
  );
  const failovers = registry.counter(
    "modelgate_upstream_failovers_total",
    "Requests moved on to another deployment, by the upstream and public model that failed and was left",
  );
  const tokens = registry.counter(
    "modelgate_tokens_total",
    "Tokens reported by upstreams, by public model and type (input, output, cache_read, cache_creation)",
  );
  const compactions = registry.counter(
    "modelgate_compactions_total",
    "Conversations the gateway compacted (a summary call sealed into a compaction item), by public model",
  );
  const pins = registry.counter(
    "modelgate_affinity_total",
    "Requests with a session pin, by public model and how the pin turned out (kept, made, moved)",
  );
  const responses = registry.counter(
    "modelgate_responses_total",
    "Responses API responses by transport: http (POST /v1/responses) or websocket (response.create on a socket)",
  );
  const guardrailHits = registry.counter(
    "modelgate_guardrail_hits_total",
    "Matches the guardrails acted on, by rule, kind, action (mask, block, log; allow for a webhook) and scope",
  );
  const openSockets = scope.openSockets;
  if (openSockets) {
    registry.gauge("modelgate_responses_sockets_open", "Responses WebSockets open now", () => [[{}, openSockets()]]);
  }

  // Live exchanges are read at scrape time: an exchange is a stream once its handler says so.
  const live = new Set<Exchange>();
  registry.gauge("modelgate_requests_in_flight", "Requests whose response has not ended yet", () => [[{}, live.size]]);
  registry.gauge("modelgate_streams_open", "Streamed responses currently being sent", () => {
    let open = 0;
    for (const exchange of live) if (exchange.stream && exchange.status > 0) open++;
    return [[{}, open]];
  });

  if (scope.health) healthGauges(registry, scope.health);
  const kvGiveUps = scope.kvGiveUps;
  if (kvGiveUps) {
    registry.collect(
      "modelgate_kv_write_give_ups_total",
      "KV writes given up after their bounded retries, by operation (limit_claim, usage_flush, token_update, ...)",
      "counter",
      () => [...kvGiveUps()].map(([operation, count]) => [{ operation }, count]),
    );
  }

  const usageWaiting = scope.usageWaiting;
  if (usageWaiting) {
    registry.gauge(
      "modelgate_usage_entries_waiting",
      "Request-log entries kept in memory because the store did not take them yet (busy, disk full, failing)",
      () => [[{}, usageWaiting()]],
    );
  }

  const shares = scope.limitShares;
  if (shares) {
    registry.collect(
      "modelgate_limit_share_kv_writes_total",
      "KV commits of the limit shares: claim (take a share), return (give back the unused part), flush (usage past it)",
      "counter",
      () => {
        const { claims, returns, flushes } = shares();
        return [[{ kind: "claim" }, claims], [{ kind: "return" }, returns], [{ kind: "flush" }, flushes]];
      },
    );
    registry.collect(
      "modelgate_limit_share_conflicts_total",
      "Checked commits of the limit shares that lost to another writer and were read again",
      "counter",
      () => [[{}, shares().conflicts]],
    );
  }
  const kvCalls = scope.kvCalls;
  if (kvCalls) {
    registry.collect(
      "modelgate_kv_calls_total",
      "KV calls by kind (only while the round-trip test seam MODELGATE_KV_RTT_MS is on)",
      "counter",
      () => [...kvCalls()].map(([call, count]) => [{ call }, count]),
    );
  }
  const authThrottled = scope.authThrottled;
  if (authThrottled) {
    registry.collect(
      "modelgate_auth_throttled_total",
      "Requests refused with 429 because their address sent too many wrong credentials or sign-ins, by credential " +
        "(admin_key, token, sign_in, device, oauth_client)",
      "counter",
      () => [...authThrottled()].map(([credential, count]) => [{ credential }, count]),
    );
  }

  const oauthEvents = scope.oauthEvents;
  if (oauthEvents) {
    registry.collect(
      "modelgate_oauth_events_total",
      "What the OAuth authorization server of /mcp did, by event (register, authorize, consent, token, refresh, " +
        "revoke, access) and outcome (ok, refused, denied, reused, revoked)",
      "counter",
      () =>
        [...oauthEvents()].map(([key, count]) => {
          const [event, outcome] = key.split(" ");
          return [{ event, outcome }, count];
        }),
    );
  }

  const mcpCall = mcpMetrics(registry, { servers: scope.mcpServers ?? [], health: scope.mcpHealth }, DURATION_BUCKETS);

  function finish(exchange: Exchange): void {
    live.delete(exchange);
    mcpCall(exchange);
    const route = exchange.route;
    const modelLabel = model(exchange.model);
    requests.inc({ route, status: status(exchange.status), model: modelLabel, upstream: upstream(exchange.upstream) });
    if (exchange.error !== undefined && exchange.error !== CANCELLED) errors.inc({ route, kind: kind(exchange.error) });
    if (exchange.duration_ms !== undefined) duration.observe({ route, model: modelLabel }, exchange.duration_ms / 1000);
    if (exchange.ttfb_ms !== undefined) ttfb.observe({ route, model: modelLabel }, exchange.ttfb_ms / 1000);
    exchange.attempts.forEach((attempt, i) => {
      const name = upstream(attempt.upstream);
      attempts.inc({ upstream: name, model: modelLabel, outcome: kind(attempt.outcome) });
      if (attempt.outcome !== "ok" && attempt.outcome !== CANCELLED) {
        failures.inc({ upstream: name, model: modelLabel, kind: kind(attempt.outcome) });
      }
      // A failover leaves the deployment: a retry on the same one (after its retry-after, say) is only an attempt.
      const next = exchange.attempts[i + 1];
      if (next && next.upstream !== attempt.upstream) failovers.inc({ upstream: name, model: modelLabel });
    });
    if (exchange.compaction && exchange.status === 200) compactions.inc({ model: modelLabel });
    if (exchange.affinity) pins.inc({ model: modelLabel, outcome: exchange.affinity });
    for (const { rule, kind, action, scope, count } of exchange.guardrails ?? []) {
      guardrailHits.inc({ rule, kind, action, scope }, count);
    }
    if (route === "/v1/responses" && exchange.method === "POST") {
      responses.inc({ transport: exchange.transport ?? "http" });
    }
    const usage = exchange.usage;
    if (usage) {
      const counts = {
        input: usage.input_tokens,
        output: usage.output_tokens,
        cache_read: usage.cache_read_input_tokens,
        cache_creation: usage.cache_creation_input_tokens,
      };
      for (const [type, count] of Object.entries(counts)) {
        if (count > 0) tokens.inc({ model: modelLabel, type }, count);
      }
    }
  }

  return {
    observer: { start: (exchange) => void live.add(exchange), finish },
    render: () => registry.render(),
  };
}

/** Gauges of health per upstream and per deployment; their labels are the configured names the snapshot holds. */
function healthGauges(registry: Registry, read: () => Record<string, UpstreamHealth>): void {
  type Row = [Labels, number];
  const upstreamRows = (value: (state: HealthState) => number) => () =>
    Object.entries(read()).map(([upstream, state]): Row => [{ upstream }, value(state)]);
  const deploymentRows = (value: (state: HealthState) => number) => () =>
    Object.entries(read()).flatMap(([upstream, { models }]) =>
      Object.entries(models).map(([model, state]): Row => [{ upstream, model }, value(state)])
    );
  const available = (state: HealthState) => state.state === "ok" ? 1 : 0;
  const failing = (state: HealthState) => state.recent_failures;
  const skipped = "0 while it is cooling down, probing or paused";
  registry.gauge(
    "modelgate_upstream_available",
    `1 when an upstream as a whole takes requests in its normal order; ${skipped}`,
    upstreamRows(available),
  );
  registry.gauge(
    "modelgate_upstream_recent_failures",
    "Failing requests in a row of an upstream as a whole (connection failures, its key refused)",
    upstreamRows(failing),
  );
  registry.gauge(
    "modelgate_deployment_available",
    `1 when a deployment (a public model on an upstream) takes requests in its normal order; ${skipped}`,
    deploymentRows(available),
  );
  registry.gauge(
    "modelgate_deployment_recent_failures",
    "Failing requests in a row of a deployment (a public model on an upstream)",
    deploymentRows(failing),
  );
}
