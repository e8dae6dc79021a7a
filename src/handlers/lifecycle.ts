/**
 * @module One exchange's lifecycle, from the request's arrival to its end: the observers told it started, the body held
 * against the in-flight budget while it is needed, and the end, once the handler has answered and, for a stream, the
 * stream has ended too (a short stream can end before the handler has returned, its body pulled as soon as it is
 * made): the body let go, the durations set and the observers told, once.
 */
import type { BodyHold } from "../core/body_budget.ts";
import type { Exchange } from "../core/exchange.ts";
import type { Deps } from "./context.ts";

/** What the app and the handler tell of an exchange as it goes. */
export interface ExchangeLifecycle {
  /** The request body's hold on the in-flight budget, taken on first use. */
  holdBody(): BodyHold;
  /** A handler whose answer is a stream: the exchange ends when the function returned is called, not before. */
  deferFinish(): () => void;
  /** The handler failed: its answer is an error response, and no stream it began ends the exchange. */
  failed(): void;
  /** The answer is on its way: the exchange ends now, or once its stream has. */
  answered(): void;
}

/** Starts `exchange`'s lifecycle: its observers are told at once. */
export function exchangeLifecycle(
  exchange: Exchange,
  deps: Pick<Deps, "observers" | "bodyBudget" | "now">,
): ExchangeLifecycle {
  let deferred = false;
  let streamEnded = false;
  let answered = false;
  let finished = false;
  let body: BodyHold | undefined;
  function finish(): void {
    if (finished || !answered || (deferred && !streamEnded)) return;
    finished = true;
    // The body (its bytes and its parsed tree) is no longer needed once the answer has been sent.
    body?.release();
    exchange.duration_ms = deps.now().getTime() - exchange.started_at;
    exchange.ttfb_ms ??= exchange.duration_ms;
    for (const observer of deps.observers) observer.finish?.(exchange);
  }
  for (const observer of deps.observers) observer.start?.(exchange);
  return {
    holdBody: () => body ??= deps.bodyBudget.hold(),
    deferFinish() {
      deferred = true;
      return () => {
        streamEnded = true;
        finish();
      };
    },
    failed() {
      deferred = false;
    },
    answered() {
      answered = true;
      finish();
    },
  };
}
