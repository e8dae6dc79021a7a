/**
 * @module Anthropic's Message Batches behind the gateway: create (every request checked, aliases mapped to the
 * upstream's ids, file ids the caller's own on the same deployment), list (the caller's own, paged as Anthropic
 * pages), retrieve, cancel, results (streamed JSONL, no blank line) and delete. `results_url` points at the gateway,
 * since the SDK fetches it with the client's own headers.
 */
import type { CheckedRequest, IdRecord } from "../core/batch_contract.ts";
import { GatewayError } from "../core/errors.ts";
import { readJsonObject } from "../core/request_body.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import type { Endpoint, RequestContext } from "../handlers/context.ts";
import { checkBudget, priceFor } from "./budget.ts";
import { badField, checkCount, checkRequests, choosePath, type Place } from "./checks.ts";
import { idStore } from "./ids.ts";
import { cleanLines } from "./jsonl.ts";
import { anthropicPage } from "./paging.ts";
import { nativeBodies } from "./native_requests.ts";
import { anthropicState } from "./native_state.ts";
import { type Native, nativeNamed, passError, send } from "./upstreams.ts";

const errors = () => "anthropic" as const;
const ROUTE = "/v1/messages/batches";
const PLACE: Place = { at: (index) => `requests[${index}]`, model: "params.model" };

/** The gateway's own base URL, as the client addressed it. */
export function baseUrl(ctx: RequestContext): string {
  return `${ctx.peer.https ? "https" : "http"}://${ctx.peer.authority}`;
}

/** The batch as the client sees it: its results at the gateway. */
function shown(batch: JsonObject, ctx: RequestContext): JsonObject {
  const id = String(batch.id);
  return {
    ...batch,
    results_url: batch.results_url ? `${baseUrl(ctx)}${ROUTE}/${encodeURIComponent(id)}/results` : null,
  };
}

function notFound(id: string): GatewayError {
  return new GatewayError("not_found", `No message batch with id ${JSON.stringify(id)}`);
}

/** The caller's batch `ctx.params.id` and its deployment (undefined when the gateway runs it), or the 404. */
async function owned(ctx: RequestContext): Promise<{ record: IdRecord; native?: Native }> {
  const principal = await ctx.authenticate();
  const id = ctx.params.id;
  const record = await idStore(ctx.deps.store.kv).owned("batch", id, principal.token.id);
  if (!record || record.protocol !== "anthropic") throw notFound(id);
  if (record.upstream === null) return { record };
  const native = nativeNamed(ctx.deps.table, "anthropic", record.upstream);
  if (!native) throw notFound(id);
  return { record, native };
}

function runnerOf(ctx: RequestContext) {
  const runner = ctx.deps.batchRunner;
  if (!runner) throw new GatewayError("unavailable", "This batch is run by the gateway, which cannot serve it now");
  return runner;
}

function forward(ctx: RequestContext, req: Request, path: string, method: "GET" | "POST" | "DELETE" = "GET") {
  return { method, path, clientHeaders: req.headers, requestId: ctx.requestId, signal: req.signal };
}

/** The requests of a create body, in the shape every batch is checked in. */
function requestsOf(body: JsonObject): CheckedRequest[] {
  const requests = body.requests;
  if (!Array.isArray(requests)) throw badField("requests", "must be an array of {custom_id, params}");
  return requests.map((request, index) => {
    if (!isObject(request)) throw badField(`requests[${index}]`, "must be an object with custom_id and params");
    if (typeof request.custom_id !== "string") throw badField(`requests[${index}].custom_id`, "must be a string");
    if (!isObject(request.params)) throw badField(`requests[${index}].params`, "must be a Messages request body");
    if (request.params.stream === true) throw badField(`requests[${index}].params.stream`, "batches do not stream");
    return { custom_id: request.custom_id, endpoint: "/v1/messages", body: request.params };
  });
}

async function create(req: Request, ctx: RequestContext): Promise<Response> {
  const principal = await ctx.authenticate();
  const { config, table } = ctx.deps;
  const body = await readJsonObject(req, {
    maxBytes: config.batches.max_bytes,
    idleMs: config.body_idle_timeout_ms,
    hold: ctx.holdBody(),
    watchdog: ctx.deps.watchdog,
  });
  const requests = requestsOf(body);
  checkCount(requests.length, config.batches.max_requests, "requests");
  const models = checkRequests(requests, principal, PLACE);
  const path = choosePath(table, "anthropic", requests, models, ctx.deps.batchRunner, PLACE);
  await checkBudget(ctx, principal, requests, priceFor(ctx, path.native));
  if (path.runner) {
    return Response.json(
      await path.runner.create({ protocol: "anthropic", caller: principal, requestId: ctx.requestId, requests }),
    );
  }
  const { native } = path;
  const bodies = await nativeBodies(ctx, {
    principal,
    native,
    protocol: "anthropic",
    requests,
    at: (index) => `requests[${index}].params`,
  });
  const upstreamBody = {
    requests: requests.map((request, index) => ({
      custom_id: request.custom_id,
      params: { ...bodies[index], model: native.upstreamModels.get(request.body.model as string) },
    })),
  };
  const res = await send(native, { ...forward(ctx, req, "/messages/batches", "POST"), body: upstreamBody });
  if (!res.ok) return await passError(res, native);
  const batch = await res.json() as JsonObject;
  await idStore(ctx.deps.store.kv).putNative({
    kind: "batch",
    protocol: "anthropic",
    id: String(batch.id),
    owner: principal.token.id,
    upstream: native.upstream.name,
    upstream_id: String(batch.id),
    created_at: ctx.deps.now().getTime(),
    models,
    owner_email: principal.token.owner,
    group: principal.group.name,
    object: batch,
  });
  return Response.json(shown(batch, ctx));
}

/** The batch's current state from its deployment, kept for listings; its usage counted once it has ended. */
function current(req: Request, ctx: RequestContext, record: IdRecord, native: Native): Promise<Response | JsonObject> {
  const reader = { clientHeaders: req.headers, requestId: ctx.requestId, signal: req.signal };
  return anthropicState({ deps: ctx.deps, reader, record, native, principal: ctx.principal });
}

async function retrieve(req: Request, ctx: RequestContext): Promise<Response> {
  const { record, native } = await owned(ctx);
  if (!native) return Response.json(await runnerOf(ctx).retrieve(record, baseUrl(ctx)));
  const batch = await current(req, ctx, record, native);
  return batch instanceof Response ? batch : Response.json(shown(batch, ctx));
}

async function list(req: Request, ctx: RequestContext): Promise<Response> {
  const principal = await ctx.authenticate();
  const query = new URL(req.url).searchParams;
  const records = await idStore(ctx.deps.store.kv).listOwned("batch", "anthropic", principal.token.id);
  const page = anthropicPage(records, query);
  // Each listed batch as its deployment has it now; one gone from the config is listed as last seen.
  const data = await Promise.all(page.data.map(async (record) => {
    const native = record.upstream === null ? undefined : nativeNamed(ctx.deps.table, "anthropic", record.upstream);
    if (record.upstream === null && ctx.deps.batchRunner) {
      return await ctx.deps.batchRunner.retrieve(record, baseUrl(ctx));
    }
    const batch = native ? await current(req, ctx, record, native) : record.object ?? { id: record.id };
    return shown(batch instanceof Response ? record.object ?? { id: record.id } : batch, ctx);
  }));
  return Response.json({ ...page, data });
}

async function cancel(req: Request, ctx: RequestContext): Promise<Response> {
  const { record, native } = await owned(ctx);
  if (!native) return Response.json(await runnerOf(ctx).cancel(record, baseUrl(ctx)));
  const path = `/messages/batches/${encodeURIComponent(record.upstream_id!)}/cancel`;
  const res = await send(native, forward(ctx, req, path, "POST"));
  if (!res.ok) return await passError(res, native);
  return Response.json(shown(await res.json(), ctx));
}

async function results(req: Request, ctx: RequestContext): Promise<Response> {
  const { record, native } = await owned(ctx);
  const headers = { "content-type": "application/binary" };
  if (!native) return new Response(await runnerOf(ctx).results(record), { headers });
  const batch = await current(req, ctx, record, native);
  if (batch instanceof Response) return batch;
  if (batch.processing_status !== "ended") {
    throw new GatewayError(
      "invalid_request",
      `Message batch ${record.id} has not ended yet: its results come once it has`,
      {
        status: 409,
      },
    );
  }
  const path = `/messages/batches/${encodeURIComponent(record.upstream_id!)}/results`;
  const res = await send(native, forward(ctx, req, path));
  if (!res.ok || !res.body) return await passError(res, native);
  return new Response(cleanLines(res.body), { headers });
}

async function remove(req: Request, ctx: RequestContext): Promise<Response> {
  const { record, native } = await owned(ctx);
  if (!native) {
    const deleted = await runnerOf(ctx).delete(record);
    await idStore(ctx.deps.store.kv).remove(record);
    return Response.json(deleted);
  }
  // Read once more first: a batch deleted without being read since it ended is counted in usage before it goes.
  const batch = await current(req, ctx, record, native);
  if (batch instanceof Response) return batch;
  const res = await send(
    native,
    forward(ctx, req, `/messages/batches/${encodeURIComponent(record.upstream_id!)}`, "DELETE"),
  );
  if (!res.ok) return await passError(res, native);
  await idStore(ctx.deps.store.kv).remove(record);
  return Response.json(await res.json());
}

/** The Message Batches endpoints. */
export const ANTHROPIC_BATCH_ENDPOINTS: readonly Endpoint[] = [
  { method: "POST", path: ROUTE, errors, handle: create },
  { method: "GET", path: ROUTE, errors, handle: list },
  { method: "GET", path: `${ROUTE}/:id`, errors, handle: retrieve },
  { method: "POST", path: `${ROUTE}/:id/cancel`, errors, handle: cancel },
  { method: "GET", path: `${ROUTE}/:id/results`, errors, handle: results },
  { method: "DELETE", path: `${ROUTE}/:id`, errors, handle: remove },
];
