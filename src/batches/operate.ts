/**
 * @module The operator's view of every batch, whoever made it: its state, request counts, owner, models and age, read
 * from the id store (native batches still running refreshed from their deployment), and a cancel of any of them.
 */
import type { GatewayBatchRunner, IdRecord } from "../core/batch_contract.ts";
import { GatewayError } from "../core/errors.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import type { RouteTable } from "../relay/routing.ts";
import { idStore } from "./ids.ts";
import { nativeNamed, send } from "./upstreams.ts";

/** One batch as operators see it. */
export interface BatchSummary {
  id: string;
  protocol: "anthropic" | "openai";
  /** The protocol's own state: `in_progress`, `canceling`, `ended`; or `validating` ... `completed`. */
  state: string;
  /** The protocol's own request counts. */
  counts: Record<string, number>;
  /** The owning token's id, and the person it belongs to. */
  token: string;
  owner: string | null;
  group: string | null;
  models: string[];
  /** The deployment that runs it, or "gateway" for one the gateway runs itself. */
  runs_on: string;
  created_at: string;
  age_seconds: number;
}

/** What the operator's side needs: the store, the routes, the clock and the runner of gateway-run batches. */
export interface BatchDesk {
  kv: Deno.Kv;
  table: RouteTable;
  now(): Date;
  runner?: GatewayBatchRunner;
}

const ENDED = new Set(["ended", "completed", "cancelled", "expired", "failed"]);

function stateOf(batch: JsonObject | undefined): string {
  const state = batch?.processing_status ?? batch?.status;
  return typeof state === "string" ? state : "unknown";
}

function countsOf(batch: JsonObject | undefined): Record<string, number> {
  const counts = isObject(batch?.request_counts) ? batch.request_counts : {};
  return Object.fromEntries(Object.entries(counts).filter(([, value]) => typeof value === "number")) as Record<
    string,
    number
  >;
}

/** The summary of one record, from the batch object given (else the last one seen). */
export function summaryOf(record: IdRecord, now: Date, batch: JsonObject | undefined = record.object): BatchSummary {
  return {
    id: record.id,
    protocol: record.protocol,
    state: stateOf(batch),
    counts: countsOf(batch),
    token: record.owner,
    owner: record.owner_email ?? null,
    group: record.group ?? null,
    models: record.models ?? [],
    runs_on: record.upstream ?? "gateway",
    created_at: new Date(record.created_at).toISOString(),
    age_seconds: Math.max(0, Math.floor((now.getTime() - record.created_at) / 1000)),
  };
}

/** The path of a native batch at its provider. */
function batchPath(record: IdRecord, action = ""): string {
  const base = record.protocol === "anthropic" ? "/messages/batches" : "/batches";
  return `${base}/${encodeURIComponent(record.upstream_id!)}${action}`;
}

/** A batch as it is now: asked of its deployment or the runner while it runs; as last seen once it has ended. */
async function now(desk: BatchDesk, record: IdRecord): Promise<JsonObject | undefined> {
  if (ENDED.has(stateOf(record.object))) return record.object;
  if (record.upstream === null) return desk.runner ? await desk.runner.retrieve(record, "") : record.object;
  const native = nativeNamed(desk.table, record.protocol, record.upstream);
  if (!native) return record.object;
  const signal = AbortSignal.timeout(10_000);
  const res = await send(native, {
    method: "GET",
    path: batchPath(record),
    clientHeaders: new Headers(),
    requestId: "admin",
    signal,
  })
    .catch(() => undefined);
  if (!res?.ok) {
    await res?.body?.cancel();
    return record.object;
  }
  const batch = await res.json();
  return isObject(batch) ? batch : record.object;
}

/** Every batch, newest first, at most `limit`. */
export async function listBatches(desk: BatchDesk, limit = 100): Promise<BatchSummary[]> {
  const records = await idStore(desk.kv).listAll("batch", limit);
  return await Promise.all(records.map(async (record) => summaryOf(record, desk.now(), await now(desk, record))));
}

/** Cancels any batch; a 404 for an id the gateway never handed out. */
export async function cancelBatch(desk: BatchDesk, id: string): Promise<BatchSummary> {
  const store = idStore(desk.kv);
  const record = await store.get("batch", id);
  if (!record) throw new GatewayError("not_found", `No batch with id ${JSON.stringify(id)}`, { param: "id" });
  if (record.upstream === null) {
    if (!desk.runner) {
      throw new GatewayError("unavailable", "Batches the gateway runs are cancelled by a running gateway");
    }
    return summaryOf(record, desk.now(), await desk.runner.cancel(record, ""));
  }
  const native = nativeNamed(desk.table, record.protocol, record.upstream);
  if (!native) {
    throw new GatewayError("unavailable", `Upstream "${record.upstream}" of batch ${id} is no longer in the config`);
  }
  const signal = AbortSignal.timeout(30_000);
  const res = await send(native, {
    method: "POST",
    path: batchPath(record, "/cancel"),
    clientHeaders: new Headers(),
    requestId: "admin",
    signal,
  });
  const batch = res.ok ? await res.json() : undefined;
  if (!isObject(batch)) {
    await res.body?.cancel().catch(() => {});
    throw new GatewayError("upstream", `Upstream "${record.upstream}" answered ${res.status} to the cancel`);
  }
  await store.put({ ...record, object: batch });
  return summaryOf(record, desk.now(), batch);
}
