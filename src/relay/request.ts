/**
 * @module What the relay works with: the dependencies it needs from the app and the client request it relays.
 * The relay, each attempt and each answer share them, so they live apart from all three.
 */
import type { Config } from "../core/config.ts";
import type { Exchange, Usage } from "../core/exchange.ts";
import type { SseMessage } from "../core/sse.ts";
import type { JsonObject, Operation, Protocol } from "../core/types.ts";
import type { HealthBoard } from "./health.ts";
import type { PinTable } from "./pins.ts";
import type { RetryBudget } from "./retry_budget.ts";
import type { ModelRoute } from "./routing.ts";
import type { SessionAffinity } from "./session.ts";
import type { Watchdog } from "../core/watchdog.ts";

/** What the relay needs from the app. */
export interface RelayDeps {
  now(): Date;
  log(line: Record<string, unknown>): void;
  health: HealthBoard;
  /** Limits the gateway's own retries to one deployment. */
  retryBudget: RetryBudget;
  /** Which deployment each session was served by, shared by the instances on one KV. */
  pins: PinTable;
  config: Config;
  /** Returns a number in [0, 1) for the weighted choice. */
  random(): number;
  /** Waits `ms` (an upstream's retry-after) unless `signal` aborts first; resolves false when it did. */
  sleep(ms: number, signal: AbortSignal): Promise<boolean>;
  /** Aborted when the process must stop serving; in-flight upstream calls end with it. */
  closing?: AbortSignal;
  /** Checks every upstream call's time limits on one shared timer. */
  watchdog: Watchdog;
  /** Advice already logged to the operator, by what it is about: each is logged once per process. */
  notices: Set<string>;
}

/** One client request to relay. */
export interface RelayRequest {
  routes: readonly ModelRoute[];
  client: Protocol;
  operation: Operation;
  body: JsonObject;
  /** The body as the client sent it, forwarded unchanged when the upstream request needs no change. */
  bytes?: Uint8Array<ArrayBuffer>;
  /** The size of the client's body in bytes, which tells a transport that a body is large before it serializes it. */
  size: number;
  req: Request;
  requestId: string;
  exchange: Exchange;
  /** Called when the response is a stream: the exchange then ends when the stream does, by the returned call. */
  deferFinish(): () => void;
  /** The id a Responses answer takes: a fresh one, since the request id may be the client's and repeat. */
  responseId?: string;
  /** Sees the translated answer before the client does (to keep it); absent for most requests. */
  watch?: AnswerWatch;
  /** The request's session, when the deployment that served it before should serve it again. */
  affinity?: SessionAffinity;
  /** Output items a Responses answer starts with, before the model's own (a compaction made for it). */
  leading?: JsonObject[];
  /** What making the leading items used; the answer's usage includes it, as the request's does. */
  leadingUsage?: Usage;
}

/**
 * Sees a translated answer on its way to the client: a whole body, or each batch of stream events. The answer waits
 * for the promise either returns, so what is kept of it is in place before the client can refer to it.
 */
export interface AnswerWatch {
  body(body: JsonObject): Promise<void>;
  events(messages: readonly SseMessage[]): Promise<void> | undefined;
}
