/**
 * @module The Files APIs behind the gateway: OpenAI's and Anthropic's, on the same /v1/files paths and told apart by
 * Anthropic's headers. An upload streams through to the deployment chosen, never held whole; every file id is the
 * uploading token's, so another token's is unknown to it and listings hold only the caller's own.
 */
import type { BatchProtocol, IdRecord } from "../core/batch_contract.ts";
import { GatewayError } from "../core/errors.ts";
import { isObject } from "../core/types.ts";
import type { Endpoint, RequestContext } from "../handlers/context.ts";
import { idStore } from "./ids.ts";
import { anthropicPage, openaiPage } from "./paging.ts";
import { type Native, nativeForGroup, nativeNamed, passError, send } from "./upstreams.ts";

/**
 * Anthropic's Files API when the client says so: its beta (`files-api-...`) or the `anthropic-version` header every
 * Anthropic SDK sends; OpenAI's otherwise.
 */
export function filesProtocol(req: Request): BatchProtocol {
  const beta = req.headers.get("anthropic-beta") ?? "";
  return /(^|,)\s*files-api-/.test(beta) || req.headers.has("anthropic-version") ? "anthropic" : "openai";
}

const errors = (req: Request) => filesProtocol(req) === "anthropic" ? "anthropic" as const : "openai-chat" as const;

/** The 404 a provider gives for a file id it does not know: another token's file gets the same. */
export function noSuchFile(id: string): GatewayError {
  return new GatewayError("not_found", `No such File object: ${id}`, { param: "file_id", code: "not_found" });
}

/** The caller's file `id` and the upstream holding it, or the provider's 404. */
export async function ownedFile(
  ctx: RequestContext,
  protocol: BatchProtocol,
  id: string,
): Promise<{ record: IdRecord; native: Native }> {
  const principal = ctx.principal ?? await ctx.authenticate();
  const record = await idStore(ctx.deps.store.kv).owned("file", id, principal.token.id);
  const native = record?.upstream && record.protocol === protocol
    ? nativeNamed(ctx.deps.table, protocol, record.upstream)
    : undefined;
  if (!record || !native) throw noSuchFile(id);
  return { record, native };
}

/** The caller's file the gateway holds itself (a gateway-run batch's output or error file), when `id` is one. */
async function heldFile(ctx: RequestContext, protocol: BatchProtocol, id: string): Promise<IdRecord | undefined> {
  const principal = await ctx.authenticate();
  const record = await idStore(ctx.deps.store.kv).owned("file", id, principal.token.id);
  if (!record || record.upstream !== null || record.protocol !== protocol) return undefined;
  if (!ctx.deps.batchRunner?.file) throw noSuchFile(id);
  return record;
}

function call(ctx: RequestContext, req: Request, path: string, method: "GET" | "POST" | "DELETE" = "GET") {
  return { method, path, clientHeaders: req.headers, requestId: ctx.requestId, signal: req.signal };
}

/** The query string forwarded to Anthropic's Files API (its SDK's `beta=true`); OpenAI's gets none. */
function betaQuery(req: Request, protocol: BatchProtocol): string {
  return protocol === "anthropic" && new URL(req.url).searchParams.get("beta") === "true" ? "?beta=true" : "";
}

async function upload(req: Request, ctx: RequestContext): Promise<Response> {
  const principal = await ctx.authenticate();
  const protocol = filesProtocol(req);
  const type = req.headers.get("content-type") ?? "";
  if (!/^multipart\/form-data\s*;/i.test(type) || !req.body) {
    throw new GatewayError("invalid_request", "The upload must be multipart/form-data with a file field", {
      param: "file",
    });
  }
  const native = nativeForGroup(ctx.deps.table, protocol, principal.group);
  const res = await send(native, {
    ...call(ctx, req, `/files${betaQuery(req, protocol)}`, "POST"),
    body: req.body,
    contentType: type,
  });
  if (!res.ok) return await passError(res, native);
  const file = await res.json();
  if (!isObject(file) || typeof file.id !== "string") {
    throw new GatewayError("upstream", `Upstream "${native.upstream.name}" answered an upload without a file id`);
  }
  await idStore(ctx.deps.store.kv).put({
    kind: "file",
    protocol,
    id: file.id,
    owner: principal.token.id,
    upstream: native.upstream.name,
    upstream_id: file.id,
    created_at: ctx.deps.now().getTime(),
    owner_email: principal.token.owner,
    group: principal.group.name,
    purpose: typeof file.purpose === "string" ? file.purpose : undefined,
    object: file,
  });
  return Response.json(file);
}

async function list(req: Request, ctx: RequestContext): Promise<Response> {
  const principal = await ctx.authenticate();
  const protocol = filesProtocol(req);
  const query = new URL(req.url).searchParams;
  const records = await idStore(ctx.deps.store.kv).listOwned("file", protocol, principal.token.id);
  const purpose = query.get("purpose");
  const objects = records
    .filter((record) => purpose === null || record.purpose === purpose)
    .map((record) => record.object ?? { id: record.id, object: "file", purpose: record.purpose });
  const files = objects as { id: string }[];
  return Response.json(
    protocol === "anthropic" ? anthropicPage(files, query) : openaiPage(files, query, 10_000, 10_000),
  );
}

async function retrieve(req: Request, ctx: RequestContext): Promise<Response> {
  const protocol = filesProtocol(req);
  const held = await heldFile(ctx, protocol, ctx.params.id);
  if (held) return Response.json(await ctx.deps.batchRunner!.file!(held));
  const { record, native } = await ownedFile(ctx, protocol, ctx.params.id);
  const res = await send(
    native,
    call(ctx, req, `/files/${encodeURIComponent(record.upstream_id!)}${betaQuery(req, protocol)}`),
  );
  if (!res.ok) return await passError(res, native);
  const file = await res.json();
  if (isObject(file)) await idStore(ctx.deps.store.kv).put({ ...record, object: file });
  return Response.json(file);
}

async function content(req: Request, ctx: RequestContext): Promise<Response> {
  const protocol = filesProtocol(req);
  const held = await heldFile(ctx, protocol, ctx.params.id);
  if (held) {
    const lines = await ctx.deps.batchRunner!.results(held);
    return new Response(lines, { headers: { "content-type": "application/octet-stream" } });
  }
  const { record, native } = await ownedFile(ctx, protocol, ctx.params.id);
  const path = `/files/${encodeURIComponent(record.upstream_id!)}/content${betaQuery(req, protocol)}`;
  const res = await send(native, call(ctx, req, path));
  if (!res.ok) return await passError(res, native);
  const headers = new Headers({ "content-type": res.headers.get("content-type") ?? "application/octet-stream" });
  const disposition = res.headers.get("content-disposition");
  if (disposition) headers.set("content-disposition", disposition);
  return new Response(res.body, { headers });
}

async function remove(req: Request, ctx: RequestContext): Promise<Response> {
  const protocol = filesProtocol(req);
  const { record, native } = await ownedFile(ctx, protocol, ctx.params.id);
  const path = `/files/${encodeURIComponent(record.upstream_id!)}${betaQuery(req, protocol)}`;
  const res = await send(native, call(ctx, req, path, "DELETE"));
  if (!res.ok) return await passError(res, native);
  await idStore(ctx.deps.store.kv).remove(record);
  return Response.json(await res.json());
}

/** The Files endpoints of both APIs. */
export const FILE_ENDPOINTS: readonly Endpoint[] = [
  { method: "POST", path: "/v1/files", errors, handle: upload },
  { method: "GET", path: "/v1/files", errors, handle: list },
  { method: "GET", path: "/v1/files/:id", errors, handle: retrieve },
  { method: "GET", path: "/v1/files/:id/content", errors, handle: content },
  { method: "DELETE", path: "/v1/files/:id", errors, handle: remove },
];
