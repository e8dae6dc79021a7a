/**
 * @module One Responses socket after its handshake: each message taken in (intake.ts) and, as a
 * `response.create`, served as a turn (turn.ts); streams (`stream_id`) run side by side, each one response at
 * a time in the order sent; and the socket's life: pending responses, idle time, age, a client that stops reading, a
 * token refused mid-socket, the gateway stopping, and everything let go once the socket is closed.
 */
import { socketMemory } from "../../conversations/socket_memory.ts";
import type { Config } from "../../core/config.ts";
import { GatewayError } from "../../core/errors.ts";
import type { RequestContext } from "../context.ts";
import { errorMessage } from "./events.ts";
import { POLICY_VIOLATION, socketIntake } from "./intake.ts";
import { SEND_WATER, socketSender } from "./send.ts";
import { serveTurn, type TurnEnv } from "./turn.ts";

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

const shuttingDown = (message: string) => new GatewayError("unavailable", message, { code: "server_shutting_down" });

/** Serves the socket until it closes. */
export function runSession(socket: WebSocket, options: SessionOptions): void {
  const { ctx, settings } = options;
  const { deps } = ctx;
  socket.binaryType = "arraybuffer";
  const memory = socketMemory(settings.memory_bytes, deps.sockets.memory);
  const intake = socketIntake({
    maxBytes: deps.config.max_body_bytes,
    budget: deps.bodyBudget,
    now: () => deps.now().getTime(),
  });
  const lanes = new Map<string, Promise<void>>();
  // How to cut each running response short, with its stream.
  const running = new Map<() => void, string | undefined>();
  let pending = 0;
  // Why the socket takes no more responses: it is past its age, or the gateway is stopping.
  let ending: { code: number; reason: string; error: GatewayError } | undefined;
  let idleTimer: ReturnType<typeof setTimeout> | undefined;
  let over = false;

  // A client too far behind on the socket's own events is not going to read them: the socket is closed.
  const sender = socketSender(socket, {
    ...SEND_WATER,
    pause: () => new Promise((resolve) => setTimeout(resolve, 10)),
    overflow: () => close(POLICY_VIOLATION, "client not reading"),
  });
  const event = (error: GatewayError, streamId?: string) => sender.event(errorMessage(error, streamId));
  /** Lets go of everything the socket holds; once, when it closes or is closed. */
  const letGo = () => {
    if (over) return;
    over = true;
    clearTimeout(idleTimer);
    clearTimeout(ageTimer);
    deps.stopping?.removeEventListener("abort", stop);
    deps.closing?.removeEventListener("abort", cut);
    // A client that leaves mid-response cancels it, as one that leaves an HTTP stream does.
    for (const leave of [...running.keys()]) leave();
    memory.clear();
  };
  // A client that stops reading may never take the close frame, so nothing waits for it before letting go.
  const close = (code: number, reason: string) => {
    if (socket.readyState === WebSocket.OPEN || socket.readyState === WebSocket.CONNECTING) socket.close(code, reason);
    letGo();
  };
  const idle = () => {
    clearTimeout(idleTimer);
    if (pending > 0 || over) return;
    idleTimer = setTimeout(() => {
      const message = `The socket was idle for ${settings.idle_timeout_ms} ms`;
      event(new GatewayError("request_timeout", message, { code: "websocket_idle_timeout" }));
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
    if (pending === 0) event(ending.error);
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
    endWith(GOING_AWAY, "gateway stopping", shuttingDown("The gateway is stopping; open a new socket"));
  deps.stopping?.addEventListener("abort", stop, { once: true });
  // At the end of the grace period whatever still runs is cut, each with an event that ends it, and the socket goes.
  const cut = () => {
    for (const streamId of running.values()) {
      event(shuttingDown("The gateway stopped before this response finished; send it again"), streamId);
    }
    close(GOING_AWAY, "gateway stopping");
  };
  deps.closing?.addEventListener("abort", cut, { once: true });

  const opened = deps.now().getTime();
  let served = 0;
  let logged = false;
  socket.onopen = () => idle();
  socket.onclose = (closed) => {
    // The runtime may tell of one end twice (its ping's timeout, then the read that fails): one line per socket.
    if (logged) return;
    logged = true;
    // One line per socket, with the handshake's request id: how long it lived, what it served, how it ended.
    deps.log({
      event: "socket_closed",
      request_id: ctx.requestId,
      token_id: ctx.principal?.token.id,
      duration_ms: deps.now().getTime() - opened,
      responses: served,
      code: closed.code,
      reason: closed.reason || undefined,
    });
    letGo();
    options.end();
  };
  const { url, headers } = options.handshake;
  const env: TurnEnv = {
    ctx,
    url,
    headers,
    memory,
    sender,
    open: () => !over && socket.readyState === WebSocket.OPEN,
    running(leave, streamId) {
      running.set(leave, streamId);
      return () => void running.delete(leave);
    },
  };
  socket.onerror = () => {};
  socket.onmessage = (received) => {
    if (over) return;
    clearTimeout(idleTimer);
    const taken = intake.take(received.data);
    if ("error" in taken) {
      event(taken.error);
      if (taken.close) close(taken.close.code, taken.close.reason);
      else settle();
      return;
    }
    const { message, hold } = taken;
    const streamId = message.stream_id as string | undefined;
    const refusal = ending?.error ??
      (pending >= settings.max_pending ? tooManyPending(settings.max_pending) : undefined);
    if (refusal) {
      hold.release();
      event(refusal, streamId);
      settle();
      return;
    }
    pending++;
    served++;
    const lane = streamId ?? "";
    const turn = (lanes.get(lane) ?? Promise.resolve()).then(() => serveTurn(message, hold, env)).then((status) => {
      // A token refused mid-socket (revoked, expired) is refused for every later turn too: the socket ends with it.
      if (status === 401) close(POLICY_VIOLATION, "API key refused");
    }, (err) => {
      const error = err instanceof GatewayError ? err : new GatewayError("internal", "Internal error", { cause: err });
      // A refusal is the client's answer; only a fault of the gateway is logged.
      if (error.kind === "internal") {
        deps.log({ request_id: ctx.requestId, event: "internal_error", error: String((err as Error)?.stack ?? err) });
      }
      event(error, streamId);
    }).finally(() => {
      hold.release();
      pending--;
      if (lanes.get(lane) === turn) lanes.delete(lane);
      settle();
    });
    lanes.set(lane, turn);
  };
}

function tooManyPending(max: number): GatewayError {
  return new GatewayError(
    "rate_limit",
    `This socket already has ${max} responses running or waiting (responses_socket.max_pending); wait for one to finish`,
    { code: "too_many_pending_responses" },
  );
}
