/**
 * @module The metrics of calls through /mcp: counts by MCP server, method, tool or prompt and outcome, their
 * durations, and whether each server answers its listings. Every label comes from a bounded set: the configured
 * servers, fixed methods and outcomes, and tool and prompt names (which the servers' own listings supply) up to a cap.
 */
import type { Exchange } from "../core/exchange.ts";
import type { Registry } from "./prometheus.ts";

/** The calls through /mcp that reach a server, and how a call may end: fixed sets, so bounded labels. */
const MCP_METHODS = new Set(["tools/call", "prompts/get", "resources/read"]);
const MCP_OUTCOMES = new Set([
  "ok",
  "tool_error",
  "refused",
  "rate_limited",
  "invalid",
  "timeout",
  "unavailable",
  "too_large",
  "upstream_error",
  "client_closed",
]);

/** Tool and prompt names become label values only up to this many (they come from the servers' own listings). */
const MAX_MCP_NAMES = 500;

/** A label value outside its bounded set. */
const OTHER = "other";

/** What the MCP metrics need to know: the configured servers' names, and where their health is read. */
export interface McpMetricsScope {
  servers: Iterable<string>;
  /** Whether each MCP server answers its listings (true), does not (false), or was not asked yet (absent). */
  health?(): ReadonlyMap<string, boolean>;
}

/**
 * Registers the MCP metrics on `registry` (durations in `buckets`); the function returned counts a finished
 * exchange when it was a call through /mcp that reaches a server, and leaves any other alone.
 */
export function mcpMetrics(
  registry: Registry,
  scope: McpMetricsScope,
  buckets: readonly number[],
): (exchange: Exchange) => void {
  const servers = new Set(scope.servers);
  const names = new Set<string>();
  const calls = registry.counter(
    "modelgate_mcp_calls_total",
    "Calls through /mcp (tools/call, prompts/get, resources/read) by MCP server, method, tool or prompt and outcome",
  );
  const duration = registry.histogram(
    "modelgate_mcp_call_duration_seconds",
    "Time from a call's arrival at /mcp to the end of its answer, by MCP server and method",
    buckets,
  );
  const health = scope.health;
  if (health) {
    registry.gauge(
      "modelgate_mcp_server_up",
      "1 when an MCP server answers its listings, 0 when it does not (its tools are left out); absent until first asked",
      () => [...health()].map(([server, up]) => [{ server }, up ? 1 : 0]),
    );
  }

  /** A call's labels, each from a bounded set: configured servers, fixed methods and outcomes, names up to a cap. */
  function labels(exchange: Exchange) {
    const facts = exchange.mcp!;
    const server = facts.server === undefined ? "none" : servers.has(facts.server) ? facts.server : OTHER;
    const key = `${server}/${facts.name}`;
    if (facts.name !== undefined && !names.has(key) && names.size < MAX_MCP_NAMES) names.add(key);
    const name = facts.name === undefined ? "none" : names.has(key) ? facts.name : OTHER;
    const outcome = MCP_OUTCOMES.has(facts.outcome ?? "") ? facts.outcome! : OTHER;
    return { server, method: facts.method, name, outcome };
  }

  return (exchange) => {
    if (!exchange.mcp || !MCP_METHODS.has(exchange.mcp.method)) return;
    const { server, method, name, outcome } = labels(exchange);
    calls.inc({ server, method, name, outcome });
    if (exchange.duration_ms !== undefined) duration.observe({ server, method }, exchange.duration_ms / 1000);
  };
}
