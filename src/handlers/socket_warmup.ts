/**
 * @module A `response.create` with `generate: false` on a Responses socket: a warm-up that makes no model call and
 * gives back a response id whose conversation (the turn's input, nothing generated) later turns can continue.
 */
import { authenticateFrom, noCredential, readCredential } from "../access/auth.ts";
import { inputItems, resolveConversation } from "../conversations/resolve.ts";
import { rememberedAfter, type SocketMemory } from "../conversations/socket_memory.ts";
import type { JsonObject } from "../core/types.ts";
import { invalidField } from "../core/validation.ts";
import { resolveRoutes } from "../relay/routing.ts";
import type { RequestContext } from "./context.ts";

/** The events of a warm-up: `response.created`, then `response.completed` with no output and no usage. */
export async function warmUp(
  ctx: RequestContext,
  body: JsonObject,
  options: { headers: Headers; memory: SocketMemory; stream: string },
): Promise<string[]> {
  const { memory, stream } = options;
  const { deps } = ctx;
  // The caller may have been revoked since the handshake (whose request is gone by now: its headers were copied),
  // and may only warm up a model its group enables. It is checked from the socket's address, as the turn's own request
  // would be.
  const credential = readCredential(options.headers);
  if (!credential) throw noCredential(options.headers, "API key");
  const principal = await authenticateFrom(deps.operator.guard, deps.operator.credentials, {
    credential,
    address: ctx.peer.address,
    now: deps.now(),
  });
  if (typeof body.model !== "string" || !body.model) throw invalidField("model", "is required");
  resolveRoutes(deps.table, principal.group, body.model);
  // A stored response it continues is read now, so the warm-up fails as the turn itself would, within the same bounds;
  // what it reads is held in the body budget until the warm-up is over (the handshake's exchange is long over).
  const hold = deps.bodyBudget.hold();
  let whole: JsonObject;
  try {
    ({ body: whole } = await resolveConversation({ ...body, store: false }, {
      token: principal.token.id,
      store: deps.responses,
      days: deps.config.responses_store.days,
      size: new TextEncoder().encode(JSON.stringify(body)).byteLength,
      maxBytes: deps.config.max_body_bytes,
      maxTurns: deps.config.responses_store.max_chain_turns,
      reserve: (bytes) => hold.grow(bytes),
    }));
  } finally {
    hold.release();
  }
  const id = `resp_${crypto.randomUUID().replaceAll("-", "")}`;
  memory.remember(rememberedAfter({ id, stream }, { own: inputItems(whole.input), output: [] }));
  const response = {
    id,
    object: "response",
    created_at: Math.floor(deps.now().getTime() / 1000),
    status: "completed",
    error: null,
    incomplete_details: null,
    model: body.model,
    output: [],
    previous_response_id: body.previous_response_id ?? null,
    store: body.store ?? true,
    usage: {
      input_tokens: 0,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 0,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 0,
    },
  };
  return [
    JSON.stringify({ type: "response.created", sequence_number: 0, response: { ...response, status: "in_progress" } }),
    JSON.stringify({ type: "response.completed", sequence_number: 1, response }),
  ];
}
