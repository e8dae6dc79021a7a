/**
 * @module One `response.create` of a Responses socket: its body made whole from the socket's memory when it continues
 * a remembered response (as text, the conversation is not parsed again), served by the app as a `POST /v1/responses`
 * with `stream: true` (a warm-up by its own handler), its events sent back as they come, and the completed response
 * remembered when nothing else keeps it.
 */
import { previousNotFound } from "../../conversations/chain.ts";
import { inputItems } from "../../conversations/resolve.ts";
import { continuedBody, rememberedAfter, type SocketMemory } from "../../conversations/socket_memory.ts";
import type { BodyHold } from "../../core/body_budget.ts";
import type { JsonObject } from "../../core/types.ts";
import type { RequestContext } from "../context.ts";
import { forwardAnswer } from "./events.ts";
import type { SocketSender } from "./send.ts";
import { warmUp } from "./warmup.ts";

/** What a turn runs with: the socket's request, memory and sender, and where it says how to cut it short. */
export interface TurnEnv {
  ctx: RequestContext;
  /** The handshake's URL and headers, which every turn's request carries. */
  url: string;
  headers: Headers;
  memory: SocketMemory;
  sender: SocketSender;
  /** Whether the socket is still open (a turn waiting its turn does not start on a closed one). */
  open(): boolean;
  /** Registers how to cut the turn of `streamId` short (the client left, the gateway stops); the result unregisters it. */
  running(leave: () => void, streamId: string | undefined): () => void;
}

/**
 * Serves `message` and resolves with the status its answer had (a refusal's, or 200 for a stream). The message's
 * share of the body budget is handed over to its request's, which holds the same bytes from then on.
 */
export async function serveTurn(message: JsonObject, hold: BodyHold, env: TurnEnv): Promise<number> {
  const { ctx, memory } = env;
  const streamId = message.stream_id as string | undefined;
  if (!env.open()) return 0;
  const body = createBody(message);
  const previous = typeof body.previous_response_id === "string" ? body.previous_response_id : undefined;
  const remembered = previous === undefined ? undefined : memory.recall(previous);
  // A response the socket made but could not keep is named with the reason, not as one it never made.
  const why = previous !== undefined && !remembered ? memory.forgotten(previous) : undefined;
  if (why) throw previousNotFound(previous!, why);
  const text = remembered ? continuedBody(body, remembered) : JSON.stringify(body);
  const warm = message.generate === false;
  // A client that leaves before the answer starts aborts the request; one that leaves during the stream cancels
  // the stream's body, as an HTTP client that leaves does, so the exchange ends the same way.
  const request = new AbortController();
  const reading = new AbortController();
  let answered = false;
  const done = env.running(() => answered ? reading.abort() : request.abort(), streamId);
  try {
    hold.release();
    const res = await ctx.dispatch(
      new Request(env.url, { method: "POST", headers: env.headers, body: text, signal: request.signal }),
      warm ? warmUp({ memory, stream: streamId ?? "" }) : undefined,
    );
    answered = true;
    if (!env.open()) reading.abort();
    const completed = await forwardAnswer(res, env.sender.stream, { streamId, signal: reading.signal });
    // A stored answer is continued from KV as over HTTP; memory keeps what nothing else does (a warm-up kept itself).
    const stored = ctx.deps.responses !== undefined && body.store !== false;
    if (completed && !warm && !stored && typeof completed.id === "string") {
      const further = remembered ? remembered.previous : previous;
      memory.remember(rememberedAfter({ id: completed.id, stream: streamId ?? "", previous: further }, {
        from: remembered,
        own: inputItems(message.input),
        output: inputItems(completed.output),
      }));
    }
    return res.status;
  } finally {
    done();
  }
}

/** The Responses create body a `response.create` event stands for: a stream, without the socket's own fields. */
function createBody(message: JsonObject): JsonObject {
  const { type: _type, stream_id: _lane, generate: _generate, background: _background, ...body } = message;
  return { ...body, stream: true };
}
