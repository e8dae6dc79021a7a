/**
 * @module A `response.create` with `generate: false` on a Responses socket: a warm-up that makes no model call and
 * gives back a response id whose conversation (the turn's input, nothing generated) later turns can continue. It is
 * served through the app as a `POST /v1/responses` of its own, so it is authenticated from the socket's address, takes
 * the token's limits as a request (with no tokens used) and is logged and recorded like any other.
 */
import { inputItems, resolveConversation } from "../../conversations/resolve.ts";
import { rememberedAfter, type SocketMemory } from "../../conversations/socket_memory.ts";
import { GatewayError } from "../../core/errors.ts";
import { checkBody } from "../../protocols/checks.ts";
import { readJsonBody } from "../../core/request_body.ts";
import { encodeSse } from "../../core/sse.ts";
import { requireKind, resolveRoutes } from "../../relay/routing.ts";
import type { Endpoint } from "../context.ts";

/** What a warm-up keeps its conversation in: the socket's memory, under the stream it was asked on. */
export interface WarmUpTarget {
  memory: SocketMemory;
  stream: string;
}

/** The handler of one warm-up: `response.created`, then `response.completed` with no output and no usage, as SSE. */
export function warmUp(target: WarmUpTarget): Endpoint["handle"] {
  return async function handle(req, ctx) {
    const principal = await ctx.authenticate();
    const { deps, exchange } = ctx;
    const { config } = deps;
    const { value, bytes } = await readJsonBody(req, {
      maxBytes: config.max_body_bytes,
      idleMs: config.body_idle_timeout_ms,
      hold: ctx.holdBody(),
      watchdog: deps.watchdog,
    });
    if (typeof value.model === "string" && principal.group.models.includes(value.model)) exchange.model = value.model;
    const body = checkBody("openai-responses", "generate", value);
    exchange.stream = true;
    // A warm-up is refused as the turn itself would be, an embedding model's included.
    requireKind(resolveRoutes(deps.table, principal.group, body.model as string), "chat", body.model as string);
    // A stored response it continues is read now, so the warm-up fails as the turn itself would, within the same
    // bounds, and all of it is remembered (the later turn goes back to nothing further).
    const { body: whole } = await resolveConversation({ ...body, store: false }, {
      token: principal.token.id,
      store: deps.responses,
      days: config.responses_store.days,
      size: bytes.byteLength,
      maxBytes: config.max_body_bytes,
      maxTurns: config.responses_store.max_chain_turns,
      reserve: (bytes) => ctx.holdBody().grow(bytes),
    });
    for (const guard of deps.guards) await guard.check(exchange, whole, principal);
    // No model was asked: the request is complete, and used nothing.
    exchange.usage = { input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 };
    exchange.usage_complete = true;
    const id = `resp_${crypto.randomUUID().replaceAll("-", "")}`;
    const { memory, stream } = target;
    if (!memory.remember(rememberedAfter({ id, stream }, { own: inputItems(whole.input), output: [] }))) {
      throw new GatewayError(
        "unavailable",
        `The warm-up's conversation cannot be kept: ${memory.forgotten(id) ?? "no room"}; send the turn itself instead`,
        { code: "websocket_memory_full", headers: { "retry-after": "1" } },
      );
    }
    const response = {
      id,
      object: "response",
      created_at: Math.floor(deps.now().getTime() / 1000),
      status: "completed",
      error: null,
      incomplete_details: null,
      model: body.model,
      output: [],
      previous_response_id: value.previous_response_id ?? null,
      store: body.store ?? true,
      usage: {
        input_tokens: 0,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: 0,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: 0,
      },
    };
    const events = [
      { type: "response.created", sequence_number: 0, response: { ...response, status: "in_progress" } },
      { type: "response.completed", sequence_number: 1, response },
    ];
    const text = events.map((event) => encodeSse({ event: event.type, data: JSON.stringify(event) })).join("");
    return new Response(text, { headers: { "content-type": "text/event-stream" } });
  };
}
