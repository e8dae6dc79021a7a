/**
 * @module The stored side of the Responses API for the token that made each response: GET and DELETE
 * /v1/responses/{id}, GET /v1/responses/{id}/input_items with its cursor pages, and for POST /v1/responses the
 * conversation resolved before translation and the answer kept once it is complete.
 */
import { itemsBefore } from "../conversations/chain.ts";
import type { Pending } from "../conversations/resolve.ts";
import { inputItems, resolveConversation, storedRecord } from "../conversations/resolve.ts";
import type { StoredResponse } from "../conversations/store.ts";
import { GatewayError } from "../core/errors.ts";
import { json } from "../core/http.ts";
import { isResponsesEnd } from "../protocols/responses.ts";
import type { Principal } from "../core/principal.ts";
import type { JsonObject } from "../core/types.ts";
import { invalidField, shownId } from "../core/validation.ts";
import type { AnswerWatch } from "../relay/request.ts";
import { type CompactionPlan, openCompaction } from "./compact.ts";
import type { RequestContext } from "./context.ts";
import { type AnswerGuard, guardStored } from "./guard.ts";

/** A Responses request ready for the relay: its whole conversation, about its size, what keeps its answer, and any
 * compaction it asks for. */
export interface PreparedResponses {
  body: JsonObject;
  size: number;
  watch?: AnswerWatch;
  plan?: CompactionPlan;
}

/**
 * Resolves `previous_response_id` and item references, and sets up keeping the answer when it is to be stored. What
 * is read from the store is held in the request's share of the body budget, as its own body is.
 */
export async function prepareResponses(
  ctx: RequestContext,
  { principal, body, size, native, guard }: {
    principal: Principal;
    body: JsonObject;
    size: number;
    native: boolean;
    guard?: AnswerGuard;
  },
): Promise<PreparedResponses> {
  const { deps } = ctx;
  const { config } = deps;
  const conversation = await resolveConversation(body, {
    token: principal.token.id,
    store: deps.responses,
    days: config.responses_store.days,
    size,
    maxBytes: config.max_body_bytes,
    maxTurns: config.responses_store.max_chain_turns,
    reserve: (bytes) => ctx.holdBody().grow(bytes),
  });
  const { pending } = conversation;
  // A trigger asks for this answer only; the conversation kept for later does not ask again.
  if (pending) pending.input = pending.input.filter((item) => item.type !== "compaction_trigger");
  const watch = pending && keeper(ctx, pending, guard);
  // The provider compacts on its own: its trigger, threshold and items go to it as they are.
  if (native) return { body: conversation.body, size: conversation.size, watch };
  const own = inputItems(body.input).length;
  const { body: opened, plan } = await openCompaction(deps, { principal, body: conversation.body, own });
  return { body: opened, size: conversation.size, watch, plan };
}

function keeper(ctx: RequestContext, pending: Pending, guard: AnswerGuard | undefined): AnswerWatch {
  const { deps } = ctx;
  async function keep(answer: JsonObject): Promise<void> {
    if (answer.status !== "completed" && answer.status !== "incomplete") return;
    // The store keeps what the client was sent, masked; an answer a guardrail refused is not kept.
    const response = guardStored(answer, guard);
    if (!response) return;
    try {
      await deps.responses!.save(pending.token, storedRecord(pending, response));
    } catch (err) {
      // The client still gets its answer; a later reference to it is then refused as not found.
      deps.log({ request_id: ctx.requestId, event: "response_store_failed", error: String((err as Error)?.message) });
    }
  }
  return {
    body: keep,
    events(messages) {
      for (const message of messages) {
        // The API keeps a finished answer, not a failed or a cut one.
        if (!isResponsesEnd(message)) continue;
        // The writer's terminal event carries its value: a large answer is not serialized and parsed again to keep.
        const payload = message.payload ?? JSON.parse(message.data);
        return keep(payload.response);
      }
      return undefined;
    },
  };
}

function notFound(id: string, why?: string): GatewayError {
  return new GatewayError("not_found", `Response with id '${shownId(id)}' not found${why ? `: ${why}` : ""}`, {
    code: "not_found",
  });
}

/** The caller's stored response named in the path, or a 404. */
async function ownResponse(ctx: RequestContext): Promise<{ record: StoredResponse; token: string }> {
  const principal = await ctx.authenticate();
  const id = ctx.params.id;
  const store = ctx.deps.responses;
  if (!store) throw notFound(id, "this gateway does not keep responses (responses_store.enabled is false)");
  const token = principal.token.id;
  const [head] = await store.heads(token, [id], { chains: true });
  if (!head) throw notFound(id);
  // A stored response can be as large as a request: reading it holds the body budget as a request body does.
  await ctx.holdBody().grow(head.bytes);
  const [record] = await store.records(token, [head]);
  if (!record) throw notFound(id);
  return { record: { ...record, chain: record.chain ?? [] }, token };
}

/** GET /v1/responses/{id}: the response as its client received it. */
export async function getResponse(req: Request, ctx: RequestContext): Promise<Response> {
  const { record } = await ownResponse(ctx);
  if (new URL(req.url).searchParams.get("stream") === "true") {
    throw new GatewayError("invalid_request", "stream: a stored response cannot be replayed as a stream", {
      param: "stream",
    });
  }
  return json(record.response);
}

/** DELETE /v1/responses/{id}. */
export async function deleteResponse(_req: Request, ctx: RequestContext): Promise<Response> {
  const principal = await ctx.authenticate();
  const id = ctx.params.id;
  const store = ctx.deps.responses;
  if (!store || !await store.delete(principal.token.id, id)) {
    throw notFound(id, store ? undefined : "this gateway does not keep responses");
  }
  return json({ id, object: "response", deleted: true });
}

/**
 * GET /v1/responses/{id}/input_items: the items the response was made from, a page at a time. An earlier response of
 * its chain that was deleted (or has expired) took its items with it: the response itself still answers, so its list
 * does too, with what is still kept (see docs/protocols.md, "Stored responses").
 */
export async function listInputItems(req: Request, ctx: RequestContext): Promise<Response> {
  const { record, token } = await ownResponse(ctx);
  const items = await itemsBefore(ctx.deps.responses!, token, record, (b) => ctx.holdBody().grow(b));
  return json(pageItems(items, new URL(req.url).searchParams));
}

/**
 * One page of `items` (oldest first) as the API lists them: `order` desc by default, `limit` 1 to 100 (20), and
 * `after` / `before` as item ids that the page starts after or ends before.
 */
export function pageItems(items: readonly JsonObject[], query: URLSearchParams): JsonObject {
  const limitText = query.get("limit") ?? "20";
  const limit = /^\d{1,3}$/.test(limitText) ? Number(limitText) : NaN;
  if (!(limit >= 1 && limit <= 100)) throw invalidField("limit", "must be an integer from 1 to 100");
  const order = query.get("order") ?? "desc";
  if (order !== "asc" && order !== "desc") throw invalidField("order", 'must be "asc" or "desc"');
  const ordered = order === "asc" ? items : [...items].reverse();
  const at = (param: "after" | "before") => {
    const id = query.get(param);
    if (id === null) return undefined;
    const index = ordered.findIndex((item) => item.id === id);
    if (index === -1) throw invalidField(param, `no input item of this response has the id '${shownId(id)}'`);
    return index;
  };
  const after = at("after");
  const before = at("before");
  const window = ordered.slice(after === undefined ? 0 : after + 1, before);
  // Paging back from `before` alone gives the items nearest to it.
  const data = before !== undefined && after === undefined ? window.slice(-limit) : window.slice(0, limit);
  return {
    object: "list",
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: window.length > data.length,
  };
}
