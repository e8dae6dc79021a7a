/**
 * @module What every endpoint handler works with: the app's dependencies, the per-request context that handlers
 * share with the app's error path, and the shape of one endpoint in the app's table.
 */
import type { DeviceBroker } from "../access/device_grant.ts";
import type { OAuthServer } from "../access/oauth_server.ts";
import type { Operator } from "../access/operator.ts";
import type { Store } from "../access/store.ts";
import type { Sealer } from "../conversations/seal.ts";
import type { ResponseStore } from "../conversations/store.ts";
import type { GatewayBatchRunner } from "../core/batch_contract.ts";
import type { BodyBudget, BodyHold } from "../core/body_budget.ts";
import type { Config } from "../core/config.ts";
import type { Exchange, Guard, Observer } from "../core/exchange.ts";
import type { Guardrails } from "../core/guard_book.ts";
import type { Peer } from "../core/peer.ts";
import type { Principal } from "../core/principal.ts";
import type { ServedProtocol } from "../core/types.ts";
import type { McpHub } from "../mcp/hub.ts";
import type { HealthBoard } from "../relay/health.ts";
import type { PinTable } from "../relay/pins.ts";
import type { RetryBudget } from "../relay/retry_budget.ts";
import type { RouteTable } from "../relay/routing.ts";
import type { Watchdog } from "../core/watchdog.ts";
import type { SocketBoard } from "./socket/board.ts";

/** Everything the app depends on, passed in. */
export interface Deps {
  config: Config;
  table: RouteTable;
  store: Store;
  now(): Date;
  log(line: Record<string, unknown>): void;
  /** Health per deployment and per upstream in this process. */
  health: HealthBoard;
  /** Limits the gateway's own retries to one deployment. */
  retryBudget: RetryBudget;
  /** Which deployment served each session last (prompt-cache affinity), shared through KV. */
  pins: PinTable;
  /** Waits out an upstream's retry-after; tests pass one that only notes the wait. */
  sleep(ms: number, signal: AbortSignal): Promise<boolean>;
  /** A number in [0, 1) for weighted upstream choice. */
  random(): number;
  /** What may refuse a request once its caller and body are known, before any upstream call: the limits. */
  guards: readonly Guard[];
  /** Watchers of every exchange: logs, metrics, usage, limits. */
  observers: readonly Observer[];
  /** Aborted when the grace period after SIGTERM ends; in-flight upstream calls stop with it. */
  closing?: AbortSignal;
  /** Aborted when the gateway starts to shut down: every answer from then on carries `connection: close`. */
  stopping?: AbortSignal;
  /** Checks every upstream call's time limits (answer, silence, total, keep-alives) on one shared timer. */
  watchdog: Watchdog;
  /** Advice already logged to the operator, by what it is about: each is logged once per process. */
  notices: Set<string>;
  /** The operator's endpoints outside /v1 (metrics, health); answers undefined for other requests. */
  ops?(req: Request, path: string, address: string): Promise<Response | undefined>;
  /** Cached token lookups, limits, usage accounting and the admin key. */
  operator: Operator;
  /** Stored Responses answers; undefined when `responses_store.enabled` is false. */
  responses?: ResponseStore;
  /** Request-body bytes in flight in this process (max_inflight_body_bytes). */
  bodyBudget: BodyBudget;
  /** The Responses sockets open in this process, per token. */
  sockets: SocketBoard;
  /** Seals the compaction items the gateway makes, under MODELGATE_COMPACTION_KEY. */
  sealer: Sealer;
  /** The CLI's sign-in through the identity provider (device authorization grant); undefined without auth.oidc. */
  device?: DeviceBroker;
  /** The team's MCP servers behind /mcp: their links, what they offer, and clients' sessions. */
  mcp: McpHub;
  /** The OAuth authorization server of /mcp: its settings, its fetch, its audit sink and counts. */
  oauth: OAuthServer;
  /** Runs the batches no single provider batch API serves; undefined until that part is built in. */
  batchRunner?: GatewayBatchRunner;
  /** The groups' guardrails, and what their webhooks are called with; absent, no request is checked. */
  guardrails?: Guardrails;
  /** True when the runtime records each request's URL in a trace (OTEL_DENO on): no credential may ride in it. */
  urlTraced?: boolean;
}

/** Per-request state handlers share with the error path. */
export interface RequestContext {
  deps: Deps;
  requestId: string;
  /** Path parameters from the endpoint pattern. */
  params: Record<string, string>;
  /** The client's address and the host it addressed, forwarded headers believed only from trusted proxies. */
  peer: Peer;
  /** Set once the caller is known; decides the error shape on the models routes. */
  principal?: Principal;
  /** Authenticates the caller and remembers who it is. */
  authenticate(): Promise<Principal>;
  /** This request's record, handed to the observers when it is over. */
  exchange: Exchange;
  /** Defers the end of the exchange until the returned function is called (for streams). */
  deferFinish(): () => void;
  /** This request's share of the body budget, given back when the exchange is over. */
  holdBody(): BodyHold;
  /**
   * Serves a request made from a socket's message through the app, as an exchange of its own; `serve` serves it
   * instead of the endpoint its path names (a warm-up, answered without an upstream).
   */
  dispatch(req: Request, serve?: Endpoint["handle"]): Promise<Response>;
}

/** One HTTP endpoint. */
export interface Endpoint {
  /** "*" for an endpoint that answers every method itself (a section with its own routes, such as the console). */
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "*";
  /**
   * Exact path, a path with one ":id" segment, such as "/v1/responses/:id/input_items", or a prefix ending in "/*"
   * for the prefix and everything under it (the part after the prefix is `params.rest`).
   */
  path: string;
  /** An operator's route (admin API, console): answered only for the host names in `public_hosts`. */
  operator?: boolean;
  /** The protocol it speaks to its client, given what is known of the caller: its errors' shape and the logged one. */
  errors(req: Request, principal?: Principal): ServedProtocol;
  handle(req: Request, ctx: RequestContext): Promise<Response>;
}
