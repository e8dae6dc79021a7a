/**
 * @module Reading what a server sends back for one request, within a byte bound: a JSON body, or an SSE stream whose
 * events carry the response among notifications and requests of the server's own. Notifications go to the caller;
 * the server's requests are answered as the gateway's capabilities say (see docs/mcp.md, "What is passed on").
 */
import { SseParser } from "../core/sse.ts";
import { isObject } from "../core/types.ts";
import {
  CODES,
  errorOf,
  isNotification,
  isRequest,
  resultOf,
  RpcError,
  type RpcId,
  type RpcMessage,
  type RpcNotification,
  type RpcRequest,
  type RpcResponse,
  toMessage,
} from "./jsonrpc.ts";

/** What the reader does with the messages that are not the awaited response. */
export interface AnswerHandlers {
  /** A notification the server sent while answering (progress, a log message, a list change). */
  onNotice?(notice: RpcNotification): void;
  /** Sends the gateway's answer to a request the server made while answering. */
  reply(response: RpcResponse): void;
}

/** The error for an answer past `maxBytes`. */
export function tooLarge(server: string, maxBytes: number): RpcError {
  return new RpcError(
    CODES.server,
    `The answer of MCP server "${server}" is larger than its limit of ${maxBytes} bytes`,
    { outcome: "too_large" },
  );
}

/**
 * The gateway's answer to a request a server makes of its client. It declares no client capability to its servers
 * (sampling, elicitation and roots cannot reach the person, whose client may be on another instance), so only `ping`
 * is answered; anything else gets Method not found, as for any method a client does not offer.
 */
export function answerServerRequest(request: RpcRequest): RpcResponse {
  if (request.method === "ping") return resultOf(request.id, {});
  return errorOf(
    request.id,
    new RpcError(
      CODES.methodNotFound,
      `Method not found: ${request.method} is not passed on to clients through the gateway`,
    ),
  );
}

/** Hands one message of an answer on; true when it is the response to `id`. */
export function dispatch(message: RpcMessage, id: RpcId, handlers: AnswerHandlers): message is RpcResponse {
  if (isRequest(message)) {
    handlers.reply(answerServerRequest(message));
    return false;
  }
  if (isNotification(message)) {
    handlers.onNotice?.(message);
    return false;
  }
  return message.id === id;
}

/** The JSON-RPC message in `text`, or undefined when it is not one. */
export function parseMessage(text: string): RpcMessage | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const message = isObject(value) ? toMessage(value) : undefined;
  return message instanceof RpcError ? undefined : message;
}

/**
 * Reads the answer to request `id` from `body` (JSON, or SSE when `sse`), at most `maxBytes` of it; the stream is
 * cancelled once the response is in. Throws an {@linkcode RpcError} when the body is too large, ends without the
 * response, or is not JSON-RPC.
 */
export async function readAnswer(
  body: ReadableStream<Uint8Array>,
  options: { id: RpcId; sse: boolean; server: string; maxBytes: number; handlers: AnswerHandlers },
): Promise<RpcResponse> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const parser = new SseParser();
  let text = "";
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > options.maxBytes) throw tooLarge(options.server, options.maxBytes);
      const chunk = decoder.decode(value, { stream: true });
      if (!options.sse) {
        text += chunk;
        continue;
      }
      for (const event of parser.push(chunk)) {
        const message = parseMessage(event.data);
        if (message && dispatch(message, options.id, options.handlers)) return message;
      }
    }
    if (options.sse) throw unanswered(options.server);
    const message = parseMessage(text + decoder.decode());
    if (message && !isRequest(message) && !isNotification(message) && message.id === options.id) return message;
    throw new RpcError(CODES.server, `MCP server "${options.server}" answered with something other than JSON-RPC`, {
      outcome: "upstream_error",
    });
  } finally {
    reader.cancel().catch(() => {});
  }
}

/** The error for a stream that ended before its response. */
export function unanswered(server: string): RpcError {
  return new RpcError(CODES.server, `MCP server "${server}" ended its answer without a response`, {
    outcome: "upstream_error",
  });
}
