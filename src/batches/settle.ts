/**
 * @module A native batch's usage and spend, counted once when its results are in: each request that succeeded is
 * recorded as a request of its own (token, group, person, model, deployment), at the batch price, through the same
 * observers as any request (request log, usage, spend, limits).
 */
import type { IdRecord } from "../core/batch_contract.ts";
import type { Exchange } from "../core/exchange.ts";
import type { Price } from "../core/money.ts";
import type { Principal } from "../core/principal.ts";
import type { ServedProtocol, UpstreamProtocol } from "../core/types.ts";
import type { Deps } from "../handlers/context.ts";
import { usageMeter } from "../usage/meter.ts";
import { idStore } from "./ids.ts";
import { lines, parseLine } from "./jsonl.ts";
import type { Native } from "./upstreams.ts";

/**
 * The price of a request in a provider's batch: the deployment's `batch_input` / `batch_output` where the config
 * names them, else half its price, as Anthropic and OpenAI bill batches.
 */
export function batchPrice(price: Price | undefined): Price | undefined {
  if (!price) return undefined;
  const half = (rate: number | undefined) => rate === undefined ? undefined : Math.round(rate * 500_000) / 1e6;
  return {
    input: price.batch_input ?? half(price.input),
    output: price.batch_output ?? half(price.output),
    cache_read: half(price.cache_read),
    cache_write: half(price.cache_write),
  };
}

/** One result line as the settlement reads it: its id, the upstream's model and its answer, if it succeeded. */
export interface ResultAnswer {
  custom_id: string;
  /** The answer body in the upstream protocol, when the request succeeded. */
  answer?: Record<string, unknown>;
}

/** What settling a batch needs to know of it. */
export interface Settlement {
  deps: Deps;
  /**
   * The owner, who alone may read the batch: its requests count against its token's and group's limits. Undefined
   * when its token is gone: its usage and spend are still recorded.
   */
  principal?: Principal;
  record: IdRecord;
  native: Native;
  /** The protocol of the answers in the results (the meter reads their usage). */
  upstreamProtocol: UpstreamProtocol;
  /** The protocol the batch was made through, as the request log records it. */
  served: ServedProtocol;
  route: string;
  /** The results, opened only once this caller has claimed the settlement. */
  open(): Promise<ReadableStream<Uint8Array> | undefined>;
  /** Reads one results line. */
  read(line: Record<string, unknown>): ResultAnswer | undefined;
}

/** Counts the batch's results once, whichever caller first sees it ended; later calls do nothing. */
export async function settle(settlement: Settlement): Promise<void> {
  const { deps, record, native } = settlement;
  if (record.settled || !await idStore(deps.store.kv).claimSettle("batch", record.id)) return;
  const body = await settlement.open();
  if (!body) return;
  const publicOf = (upstreamModel: unknown) =>
    record.models?.find((model) => native.upstreamModels.get(model) === upstreamModel) ?? record.models?.[0];
  const startedAt = deps.now().getTime();
  for await (const text of lines(body)) {
    const parsed = parseLine(text);
    const result = parsed && settlement.read(parsed);
    if (!result?.answer) continue;
    const meter = usageMeter(settlement.upstreamProtocol);
    meter.body(result.answer);
    const model = publicOf(result.answer.model);
    const exchange: Exchange = {
      request_id: `${record.id}/${result.custom_id}`,
      started_at: startedAt,
      method: "POST",
      route: settlement.route,
      protocol: settlement.served,
      token_id: record.owner,
      owner: record.owner_email,
      group: record.group,
      model,
      stream: false,
      upstream: native.upstream.name,
      price: batchPrice(model ? native.prices.get(model) : undefined),
      attempts: [{ upstream: native.upstream.name, outcome: "ok", status: 200 }],
      status: 200,
      duration_ms: 0,
      usage: meter.usage(),
    };
    if (settlement.principal) deps.operator.limiter.charge(exchange, settlement.principal);
    for (const observer of deps.observers) observer.finish?.(exchange);
  }
}
