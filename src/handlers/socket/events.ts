/**
 * @module What a Responses socket sends: each event of a response's SSE stream as one JSON message (with the
 * client's `stream_id` when it gave one), and a request the gateway refused as the socket's `error` event, with the
 * status and the headers (such as `retry-after`) the HTTP route would have answered with.
 */
import type { GatewayError } from "../../core/errors.ts";
import { SseParser } from "../../core/sse.ts";
import { errorBody } from "../../protocols/client_errors.ts";
import { isResponsesEnd } from "../../protocols/responses.ts";
import { isObject, type JsonObject } from "../../core/types.ts";

/** Headers a client acts on that a socket's error event carries along (see docs/protocols.md, "WebSocket mode"). */
const KEPT_HEADERS = ["retry-after", "retry-after-ms", "x-should-retry"];

/** The socket's `error` event for a request refused with `status` and an OpenAI error body. */
export function refusalMessage(status: number, body: unknown, headers: Headers, streamId?: string): string {
  const error: JsonObject = isObject(body) && isObject(body.error)
    ? { ...body.error }
    : { type: "server_error", code: null, message: "The gateway could not serve the response", param: null };
  const kept: Record<string, string> = {};
  for (const name of KEPT_HEADERS) {
    const value = headers.get(name);
    if (value !== null) kept[name] = value;
  }
  if (Object.keys(kept).length > 0) error.headers = kept;
  return JSON.stringify(withStream({ type: "error", status, error }, streamId));
}

/** The socket's `error` event for an error the socket itself found (a malformed message, a limit). */
export function errorMessage(err: GatewayError, streamId?: string): string {
  return refusalMessage(err.status, errorBody(err, "openai-responses"), err.headers, streamId);
}

function withStream(event: JsonObject, streamId: string | undefined): JsonObject {
  return streamId === undefined ? event : { ...event, stream_id: streamId };
}

/**
 * Sends the app's answer to one `response.create` over the socket and resolves with the response it completed
 * (from `response.completed` or `response.incomplete`), if any. Stops reading when `signal` aborts.
 */
export async function forwardAnswer(
  res: Response,
  send: (text: string) => Promise<void> | undefined,
  options: { streamId?: string; signal: AbortSignal },
): Promise<JsonObject | undefined> {
  const { streamId, signal } = options;
  if (!res.body || !(res.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    const text = await res.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    send(refusalMessage(res.status, body, res.headers, streamId));
    return undefined;
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  const stop = () => void reader.cancel().catch(() => {});
  signal.addEventListener("abort", stop, { once: true });
  const parser = new SseParser();
  let completed: JsonObject | undefined;
  try {
    while (!signal.aborted) {
      const { value, done } = await reader.read();
      if (done) break;
      for (const message of parser.push(value)) {
        // A later turn can continue the response of a stream's end.
        const continuable = isResponsesEnd(message);
        // Only a message that must change, or whose response is kept, is parsed; the rest go out as they came.
        let behind: Promise<void> | undefined;
        if (streamId === undefined && !continuable) {
          behind = send(message.data);
        } else {
          const event = JSON.parse(message.data);
          if (continuable && isObject(event.response)) completed = event.response;
          behind = send(streamId === undefined ? message.data : JSON.stringify(withStream(event, streamId)));
        }
        // A client that is behind holds the upstream stream back, as one that stops reading an HTTP stream does.
        if (behind) await behind;
      }
    }
  } catch (err) {
    // A socket that is gone ends the read: the app's exchange records the client's cancellation.
    if (!signal.aborted) throw err;
  } finally {
    signal.removeEventListener("abort", stop);
    reader.releaseLock();
  }
  return signal.aborted ? undefined : completed;
}
