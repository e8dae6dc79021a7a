/**
 * @module One Responses socket after its handshake: each `response.create` message is served by the app as a
 * `POST /v1/responses` with `stream: true` (one exchange each), its events sent back as messages; streams
 * (`stream_id`) run side by side, each one response at a time in the order sent; `store: false` turns continue from
 * the socket's memory; and the socket's limits (message size, pending responses, idle time, age, stopping).
 */
import { inputItems } from "../conversations/resolve.ts";
import { continueFrom, rememberedAfter, type SocketMemory, socketMemory } from "../conversations/socket_memory.ts";
import type { Config } from "../core/config.ts";
import { GatewayError } from "../core/errors.ts";
import { checkJsonDepth } from "../core/json_depth.ts";
import { isObject, type JsonObject } from "../core/types.ts";
import { invalidField } from "../core/validation.ts";
import type { RequestContext } from "./context.ts";
import { errorMessage, forwardAnswer } from "./socket_events.ts";
import { pacedSend, SEND_WATER } from "./socket_send.ts";
import { warmUp } from "./socket_warmup.ts";

/** What a session needs: the handshake's context and what it asked, the socket limits, and what to do at the end. */
export interface SessionOptions {
  ctx: RequestContext;
  /** The handshake's URL and headers, taken before the upgrade (after it, its request can no longer be read). */
  handshake: { url: string; headers: Headers };
  settings: Config["responses_socket"];
  end(): void;
}

/** Close codes (RFC 6455): a normal end, and the server going away. */
const NORMAL = 1000;
const GOING_AWAY = 1001;

/** Handshake headers that describe the socket, not a request made from one of its messages. */
const SOCKET_HEADERS = /^(upgrade|connection|content-length|content-type|x-request-id|sec-websocket-.*)$/;

/** The handshake's URL and headers, as each message's request will carry them. */
export function handshakeOf(req: Request): SessionOptions["handshake"] {
  const headers = new Headers();
  for (const [name, value] of req.headers) if (!SOCKET_HEADERS.test(name)) headers.set(name, value);
  headers.set("content-type", "application/json");
  return { url: new URL("/v1/responses", req.url).href, headers };
}

/** Serves the socket until it closes. */
export function runSession(socket: WebSocket, options: SessionOptions): void {
  const { ctx, settings } = options;
  const { deps } = ctx;
  const memory = socketMemory(settings.memory_bytes);
  const { url, headers } = options.handshake;
  const lanes = new Map<string, Promise<void>>();
  const running = new Set<() => void>();
  let pending = 0;
  // Why the socket takes no more responses: it is past its age, or the gateway is stopping.
  let ending: { code: number; reason: string; error: GatewayError } | undefined;
  let idleTimer: ReturnType<typeof setTimeout> | undefined;

  const send = pacedSend(socket, { ...SEND_WATER, pause: () => new Promise((resolve) => setTimeout(resolve, 10)) });
  const close = (code: number, reason: string) => {
    if (socket.readyState === WebSocket.OPEN || socket.readyState === WebSocket.CONNECTING) socket.close(code, reason);
  };
  const idle = () => {
    clearTimeout(idleTimer);
    if (pending > 0) return;
    idleTimer = setTimeout(() => {
      send(errorMessage(
        new GatewayError("request_timeout", `The socket was idle for ${settings.idle_timeout_ms} ms`, {
          code: "websocket_idle_timeout",
        }),
      ));
      close(NORMAL, "idle timeout");
    }, settings.idle_timeout_ms);
  };
  // Past its end, a socket closes once its last response is over.
  const settle = () => {
    if (ending && pending === 0) close(ending.code, ending.reason);
    else idle();
  };
  const endWith = (code: number, reason: string, error: GatewayError) => {
    ending ??= { code, reason, error };
    if (pending === 0) send(errorMessage(ending.error));
    settle();
  };
  const ageTimer = setTimeout(() =>
    endWith(
      NORMAL,
      "age limit",
      new GatewayError(
        "invalid_request",
        `The socket reached its age limit of ${settings.max_age_ms} ms (responses_socket.max_age_ms); open a new one`,
        { code: "websocket_connection_limit_reached" },
      ),
    ), settings.max_age_ms);
  const stop = () =>
    endWith(
      GOING_AWAY,
      "gateway stopping",
      new GatewayError("unavailable", "The gateway is stopping; open a new socket", { code: "server_shutting_down" }),
    );
  deps.stopping?.addEventListener("abort", stop, { once: true });
  // At the end of the grace period whatever still runs is cut, and the socket goes with it.
  const cut = () => {
    for (const leave of running) leave();
    close(GOING_AWAY, "gateway stopping");
  };
  deps.closing?.addEventListener("abort", cut, { once: true });

  const opened = deps.now().getTime();
  let served = 0;
  socket.onopen = () => idle();
  socket.onclose = (event) => {
    // One line per socket, with the handshake's request id: how long it lived, what it served, how it ended.
    deps.log({
      event: "socket_closed",
      request_id: ctx.requestId,
      token_id: ctx.principal?.token.id,
      duration_ms: deps.now().getTime() - opened,
      responses: served,
      code: event.code,
      reason: event.reason || undefined,
    });
    clearTimeout(idleTimer);
    clearTimeout(ageTimer);
    deps.stopping?.removeEventListener("abort", stop);
    deps.closing?.removeEventListener("abort", cut);
    // A client that leaves mid-response cancels it, as one that leaves an HTTP stream does.
    for (const leave of running) leave();
    options.end();
  };
  socket.onerror = () => {};
  socket.onmessage = (event) => {
    clearTimeout(idleTimer);
    let streamId: string | undefined;
    try {
      const message = parseMessage(event.data, deps.config.max_body_bytes);
      streamId = message.stream_id as string | undefined;
      if (ending) throw ending.error;
      if (pending >= settings.max_pending) {
        throw new GatewayError(
          "rate_limit",
          `This socket already has ${settings.max_pending} responses running or waiting ` +
            "(responses_socket.max_pending); wait for one to finish",
          { code: "too_many_pending_responses" },
        );
      }
      enqueue(streamId ?? "", message);
    } catch (err) {
      send(errorMessage(asGatewayError(err), streamId));
      settle();
    }
  };

  /** Runs `message` after the responses already waiting on its stream. */
  function enqueue(lane: string, message: JsonObject): void {
    pending++;
    served++;
    const after = lanes.get(lane) ?? Promise.resolve();
    const turn = after.then(() => serve(message, memory)).catch((err) => {
      const error = asGatewayError(err);
      // A refusal (a warm-up for a revoked token, say) is the client's answer; only a fault of the gateway is logged.
      if (error.kind === "internal") {
        deps.log({ request_id: ctx.requestId, event: "internal_error", error: String((err as Error)?.stack ?? err) });
      }
      send(errorMessage(error, message.stream_id as string | undefined));
    }).finally(() => {
      pending--;
      if (lanes.get(lane) === turn) lanes.delete(lane);
      settle();
    });
    lanes.set(lane, turn);
  }

  /** One response: from memory or the app, its events sent as they come. */
  async function serve(message: JsonObject, memory: SocketMemory): Promise<void> {
    const streamId = message.stream_id as string | undefined;
    if (socket.readyState !== WebSocket.OPEN) return;
    let body = createBody(message);
    const previous = body.previous_response_id;
    const remembered = typeof previous === "string" ? memory.recall(previous) : undefined;
    if (remembered) body = continueFrom(body, remembered);
    if (message.generate === false) {
      for (const text of await warmUp(ctx, body, { headers, memory, stream: streamId ?? "" })) {
        send(withStreamId(text, streamId));
      }
      return;
    }
    // A client that leaves before the answer starts aborts the request; one that leaves during the stream cancels
    // the stream's body, as an HTTP client that leaves does, so the exchange ends the same way.
    const request = new AbortController();
    const reading = new AbortController();
    let answered = false;
    const leave = () => answered ? reading.abort() : request.abort();
    running.add(leave);
    try {
      const res = await ctx.dispatch(
        new Request(url, { method: "POST", headers, body: JSON.stringify(body), signal: request.signal }),
      );
      answered = true;
      if (socket.readyState !== WebSocket.OPEN) reading.abort();
      const done = await forwardAnswer(res, send, { streamId, signal: reading.signal });
      // A stored answer is continued from KV as over HTTP; memory keeps what nothing else does.
      const stored = deps.responses !== undefined && body.store !== false;
      if (done && !stored && typeof done.id === "string") {
        const previous = typeof body.previous_response_id === "string" ? body.previous_response_id : undefined;
        memory.remember(rememberedAfter({ id: done.id, stream: streamId ?? "", previous }, {
          from: remembered,
          own: inputItems(message.input),
          output: inputItems(done.output),
        }));
      }
    } finally {
      running.delete(leave);
    }
  }
}

/** A client message as a `response.create` event, or the error naming what is wrong with it. */
function parseMessage(data: unknown, maxBytes: number): JsonObject {
  if (typeof data !== "string") {
    throw new GatewayError("invalid_request", "Messages must be JSON text; binary messages are not accepted", {
      code: "invalid_message",
    });
  }
  // A character is at most three bytes of UTF-8: only a message near the limit needs counting.
  if (data.length > maxBytes || (data.length * 3 > maxBytes && new TextEncoder().encode(data).length > maxBytes)) {
    throw new GatewayError("request_too_large", `Message is larger than the limit of ${maxBytes} bytes`);
  }
  checkJsonDepth(data, "Message");
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch (err) {
    throw new GatewayError("invalid_request", `Message is not valid JSON: ${(err as Error).message}`, {
      code: "invalid_json",
    });
  }
  if (!isObject(value)) throw invalidField("(message)", "must be a JSON object with a type");
  if (value.type !== "response.create") {
    const type = typeof value.type === "string" ? `'${value.type.slice(0, 64)}'` : "missing";
    throw invalidField("type", `is ${type}; this gateway accepts response.create events`);
  }
  if (value.stream_id !== undefined && (typeof value.stream_id !== "string" || value.stream_id.length > 256)) {
    throw invalidField("stream_id", "must be a string of at most 256 characters");
  }
  if (value.generate !== undefined && typeof value.generate !== "boolean") {
    throw invalidField("generate", "must be a boolean");
  }
  if (value.background === true) throw invalidField("background", "is not supported on a WebSocket");
  return value;
}

/** The Responses create body a `response.create` event stands for: a stream, without the socket's own fields. */
function createBody(message: JsonObject): JsonObject {
  const { type: _type, stream_id: _lane, generate: _generate, background: _background, ...body } = message;
  return { ...body, stream: true };
}

function withStreamId(text: string, streamId: string | undefined): string {
  return streamId === undefined ? text : JSON.stringify({ ...JSON.parse(text), stream_id: streamId });
}

function asGatewayError(err: unknown): GatewayError {
  return err instanceof GatewayError ? err : new GatewayError("internal", "Internal error", { cause: err });
}
