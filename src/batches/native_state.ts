/**
 * @module A native batch's state read from its deployment and kept in its id record (an OpenAI batch's output and
 * error files made its owner's), its usage counted once it has ended: the same step whether a client reads the batch
 * or the background sweep does.
 */
import type { IdRecord } from "../core/batch_contract.ts";
import type { Principal } from "../core/principal.ts";
import { isObject, type JsonObject, type UpstreamProtocol } from "../core/types.ts";
import type { Deps } from "../handlers/context.ts";
import type { ForwardCall } from "../providers/transport.ts";
import { idStore } from "./ids.ts";
import { settle } from "./settle.ts";
import { type Native, passError, send } from "./upstreams.ts";

/** Who reads the batch: a client's request (its headers, id and abort), or the sweep with its own. */
export type Reader = Pick<ForwardCall, "clientHeaders" | "requestId" | "signal">;

/** What reading one batch needs; `principal` is the owner, whose limits its requests count against when known. */
export interface BatchRead {
  deps: Deps;
  reader: Reader;
  record: IdRecord;
  native: Native;
  principal?: Principal;
}

const ANTHROPIC_ROUTE = "/v1/messages/batches";
const OPENAI_ROUTE = "/v1/batches";
/** The protocol of each OpenAI batch endpoint's answers, whose usage the settlement reads. */
const ANSWERS: Record<string, UpstreamProtocol> = {
  "/v1/chat/completions": "openai-chat",
  "/v1/responses": "openai-responses",
  "/v1/embeddings": "openai-chat",
};
/** The states after which an OpenAI batch changes no more. */
const OPENAI_DONE = new Set(["completed", "cancelled", "expired", "failed"]);

/** Whether a batch object, as its provider answers it, has ended: nothing about it changes any more. */
export function hasEnded(record: Pick<IdRecord, "protocol">, batch: JsonObject): boolean {
  return record.protocol === "anthropic" ? batch.processing_status === "ended" : OPENAI_DONE.has(String(batch.status));
}

function get(read: BatchRead, path: string): Promise<Response> {
  return send(read.native, { ...read.reader, method: "GET", path });
}

/** The body of a results file, or undefined when the provider does not give it. */
async function bodyOf(res: Response): Promise<ReadableStream<Uint8Array> | undefined> {
  if (res.ok && res.body) return res.body;
  await res.body?.cancel();
  return undefined;
}

/** An Anthropic batch as its deployment has it now (or the provider's error, as the client gets it). */
export async function anthropicState(read: BatchRead): Promise<Response | JsonObject> {
  const { deps, record, native } = read;
  const at = `/messages/batches/${encodeURIComponent(record.upstream_id!)}`;
  const res = await get(read, at);
  if (!res.ok) return await passError(res, native);
  const batch = await res.json() as JsonObject;
  await idStore(deps.store.kv).put({ ...record, object: batch });
  if (!hasEnded(record, batch)) return batch;
  await settle({
    deps,
    principal: read.principal,
    record,
    native,
    upstreamProtocol: "anthropic",
    served: "anthropic",
    route: ANTHROPIC_ROUTE,
    open: async () => bodyOf(await get(read, `${at}/results`)),
    read(line) {
      const result = isObject(line.result) ? line.result : undefined;
      const message = result?.type === "succeeded" && isObject(result.message) ? result.message : undefined;
      return { custom_id: String(line.custom_id), answer: message };
    },
  });
  return batch;
}

/** An OpenAI batch as its deployment has it now: its output and error files made the owner's. */
export async function openaiState(read: BatchRead): Promise<Response | JsonObject> {
  const { deps, record, native } = read;
  const res = await get(read, `/batches/${encodeURIComponent(record.upstream_id!)}`);
  if (!res.ok) return await passError(res, native);
  const batch = await res.json() as JsonObject;
  const store = idStore(deps.store.kv);
  await store.put({ ...record, object: batch });
  for (const [field, purpose] of [["output_file_id", "batch_output"], ["error_file_id", "batch_error"]] as const) {
    const id = batch[field];
    if (typeof id !== "string" || await store.get("file", id)) continue;
    await store.put({
      kind: "file",
      protocol: "openai",
      id,
      owner: record.owner,
      upstream: native.upstream.name,
      upstream_id: id,
      created_at: deps.now().getTime(),
      owner_email: record.owner_email,
      group: record.group,
      purpose,
    });
  }
  const output = batch.output_file_id;
  if (!hasEnded(record, batch) || typeof output !== "string") return batch;
  await settle({
    deps,
    principal: read.principal,
    record,
    native,
    upstreamProtocol: ANSWERS[String(batch.endpoint)] ?? "openai-chat",
    served: "openai-chat",
    route: OPENAI_ROUTE,
    open: async () => bodyOf(await get(read, `/files/${encodeURIComponent(output)}/content`)),
    read(line) {
      const response = isObject(line.response) ? line.response : undefined;
      const answer = response?.status_code === 200 && isObject(response.body) ? response.body : undefined;
      return { custom_id: String(line.custom_id), answer };
    },
  });
  return batch;
}
