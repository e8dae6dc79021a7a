/**
 * @module OpenAI's Batch API behind the gateway (OpenAI, Azure OpenAI's v1 API): create from the caller's own input
 * file (its lines checked, aliases mapped in a copy the deployment holding the file gets), list (the caller's own,
 * after/limit), retrieve and cancel; the batch's output and error files become the caller's, and its usage is
 * counted once it is done.
 */
import type { BatchEndpoint, IdRecord } from "../core/batch_contract.ts";
import { GatewayError } from "../core/errors.ts";
import { readJsonObject } from "../core/request_body.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import type { Endpoint, RequestContext } from "../handlers/context.ts";
import { checkBudget, priceFor } from "./budget.ts";
import { badField, checkCount, checkRequests, choosePath, type Place } from "./checks.ts";
import { ownedFile } from "./files.ts";
import { idStore } from "./ids.ts";
import { BATCH_ENDPOINTS, readInput, upstreamLines } from "./openai_input.ts";
import { openaiPage } from "./paging.ts";
import { nativeBodies } from "./native_requests.ts";
import { openaiState } from "./native_state.ts";
import { type Native, nativeFor, nativeNamed, passError, send } from "./upstreams.ts";

const errors = () => "openai-chat" as const;
const ROUTE = "/v1/batches";
const PLACE: Place = { at: (index) => `line ${index + 1}`, model: "body.model" };
function call(ctx: RequestContext, req: Request, path: string, method: "GET" | "POST" = "GET") {
  return { method, path, clientHeaders: req.headers, requestId: ctx.requestId, signal: req.signal };
}

/** The batch as the client sees it: the input file it named. */
function shown(batch: JsonObject, record: Pick<IdRecord, "input_file_id">): JsonObject {
  return record.input_file_id ? { ...batch, input_file_id: record.input_file_id } : batch;
}

function checkCreate(body: JsonObject): { input: string; endpoint: BatchEndpoint; window: string } {
  const input = body.input_file_id;
  if (typeof input !== "string" || input === "") throw badField("input_file_id", "must name an uploaded file");
  const endpoint = body.endpoint;
  if (typeof endpoint !== "string" || !(BATCH_ENDPOINTS as readonly string[]).includes(endpoint)) {
    throw badField("endpoint", `must be one of ${BATCH_ENDPOINTS.join(", ")}`);
  }
  if (body.completion_window !== "24h") throw badField("completion_window", 'must be "24h"');
  if (body.metadata !== undefined && body.metadata !== null && !isObject(body.metadata)) {
    throw badField("metadata", "must be an object of strings");
  }
  return { input, endpoint: endpoint as BatchEndpoint, window: "24h" };
}

/** Uploads the copy of the input file the deployment needs (its own model ids); answers the copy's id. */
async function uploadCopy(ctx: RequestContext, req: Request, native: Native, lines: string): Promise<string> {
  const form = new FormData();
  form.set("purpose", "batch");
  form.set("file", new File([lines], "batch_input.jsonl", { type: "application/jsonl" }));
  const made = new Response(form);
  const res = await send(native, {
    ...call(ctx, req, "/files", "POST"),
    body: made.body!,
    contentType: made.headers.get("content-type")!,
  });
  const file = res.ok ? await res.json() : undefined;
  if (!isObject(file) || typeof file.id !== "string") {
    await res.body?.cancel();
    throw new GatewayError("upstream", `Upstream "${native.upstream.name}" did not take the batch's input file`);
  }
  return file.id;
}

async function create(req: Request, ctx: RequestContext): Promise<Response> {
  const principal = await ctx.authenticate();
  const { config, table } = ctx.deps;
  const body = await readJsonObject(req, {
    maxBytes: config.max_body_bytes,
    idleMs: config.body_idle_timeout_ms,
    watchdog: ctx.deps.watchdog,
  });
  const { input, endpoint, window } = checkCreate(body);
  const { record: file, native: holder } = await ownedFile(ctx, "openai", input);
  const content = await send(holder, call(ctx, req, `/files/${encodeURIComponent(file.upstream_id!)}/content`));
  if (!content.ok || !content.body) return await passError(content, holder);
  const requests = await readInput(content.body, endpoint, config.batches.max_bytes);
  checkCount(requests.length, config.batches.max_requests, "input_file_id");
  const models = checkRequests(requests, principal, PLACE);
  // The batch goes where its input file is; a batch whose models that deployment does not all serve is the runner's.
  const beside = nativeFor(table, "openai", models, holder.upstream);
  const path = beside ? { native: beside } : choosePath(table, "openai", requests, models, ctx.deps.batchRunner, PLACE);
  await checkBudget(ctx, principal, requests, priceFor(ctx, path.native));
  if (path.runner) {
    const metadata = (body.metadata ?? null) as Record<string, string> | null;
    const openai = { input_file_id: input, endpoint, completion_window: window, metadata };
    return Response.json(
      await path.runner.create({ protocol: "openai", caller: principal, requestId: ctx.requestId, requests, openai }),
    );
  }
  const { native } = path;
  if (!beside) throw badField("input_file_id", "the file is held by another account than the one serving its models");
  // A masked line goes in the copy the deployment gets.
  const bodies = await nativeBodies(ctx, {
    principal,
    native,
    protocol: "openai-chat",
    requests,
    at: (index) => `${PLACE.at(index)}.body`,
  });
  const guarded = requests.map((request, index) => ({ ...request, body: bodies[index] }));
  const copy = upstreamLines(guarded, native, bodies.some((body, index) => body !== requests[index].body));
  const upstreamInput = copy === undefined ? file.upstream_id! : await uploadCopy(ctx, req, native, copy);
  const res = await send(native, {
    ...call(ctx, req, "/batches", "POST"),
    body: { ...body, input_file_id: upstreamInput },
  });
  if (!res.ok) return await passError(res, native);
  const batch = await res.json() as JsonObject;
  const record: IdRecord = {
    kind: "batch",
    protocol: "openai",
    id: String(batch.id),
    owner: principal.token.id,
    upstream: native.upstream.name,
    upstream_id: String(batch.id),
    created_at: ctx.deps.now().getTime(),
    models,
    owner_email: principal.token.owner,
    group: principal.group.name,
    input_file_id: input,
    object: batch,
  };
  await idStore(ctx.deps.store.kv).putNative(record);
  return Response.json(shown(batch, record));
}

/** The caller's batch `ctx.params.id` and its deployment (undefined when the gateway runs it), or OpenAI's 404. */
async function owned(ctx: RequestContext): Promise<{ record: IdRecord; native?: Native }> {
  const principal = await ctx.authenticate();
  const id = ctx.params.id;
  const record = await idStore(ctx.deps.store.kv).owned("batch", id, principal.token.id);
  const missing = () => new GatewayError("not_found", `No batch found with id '${id}'.`, { param: "batch_id" });
  if (!record || record.protocol !== "openai") throw missing();
  if (record.upstream === null) return { record };
  const native = nativeNamed(ctx.deps.table, "openai", record.upstream);
  if (!native) throw missing();
  return { record, native };
}

/** The batch as its deployment has it now: its output and error files made the owner's, its usage counted once done. */
function current(req: Request, ctx: RequestContext, record: IdRecord, native: Native): Promise<Response | JsonObject> {
  const reader = { clientHeaders: req.headers, requestId: ctx.requestId, signal: req.signal };
  return openaiState({ deps: ctx.deps, reader, record, native, principal: ctx.principal });
}

async function retrieve(req: Request, ctx: RequestContext): Promise<Response> {
  const { record, native } = await owned(ctx);
  if (!native) return Response.json(await runner(ctx).retrieve(record, ""));
  const batch = await current(req, ctx, record, native);
  return batch instanceof Response ? batch : Response.json(shown(batch, record));
}

function runner(ctx: RequestContext) {
  const found = ctx.deps.batchRunner;
  if (!found) throw new GatewayError("unavailable", "This batch is run by the gateway, which cannot serve it now");
  return found;
}

async function list(req: Request, ctx: RequestContext): Promise<Response> {
  const principal = await ctx.authenticate();
  const records = await idStore(ctx.deps.store.kv).listOwned("batch", "openai", principal.token.id);
  const page = openaiPage(records, new URL(req.url).searchParams, 100, 20);
  const data = await Promise.all(page.data.map(async (record) => {
    if (record.upstream === null) {
      return ctx.deps.batchRunner ? await ctx.deps.batchRunner.retrieve(record, "") : record.object;
    }
    const native = nativeNamed(ctx.deps.table, "openai", record.upstream);
    const batch = native ? await current(req, ctx, record, native) : undefined;
    return shown(batch && !(batch instanceof Response) ? batch : record.object ?? { id: record.id }, record);
  }));
  return Response.json({ ...page, data });
}

async function cancel(req: Request, ctx: RequestContext): Promise<Response> {
  const { record, native } = await owned(ctx);
  if (!native) return Response.json(await runner(ctx).cancel(record, ""));
  const res = await send(native, call(ctx, req, `/batches/${encodeURIComponent(record.upstream_id!)}/cancel`, "POST"));
  if (!res.ok) return await passError(res, native);
  return Response.json(shown(await res.json(), record));
}

/** The Batch API's endpoints. */
export const OPENAI_BATCH_ENDPOINTS: readonly Endpoint[] = [
  { method: "POST", path: ROUTE, errors, handle: create },
  { method: "GET", path: ROUTE, errors, handle: list },
  { method: "GET", path: `${ROUTE}/:id`, errors, handle: retrieve },
  { method: "POST", path: `${ROUTE}/:id/cancel`, errors, handle: cancel },
];
