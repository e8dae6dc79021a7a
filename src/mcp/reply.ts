/**
 * @module The gateway's reply to one client request: plain JSON when the response is all there is, or an SSE stream
 * when the server sent notifications about the request first (progress, log messages), those followed by the response.
 * Streamable HTTP lets a server choose per request; the client accepts both.
 */
import type { RpcNotification, RpcResponse } from "./jsonrpc.ts";

/** Takes the gateway's secrets out of a serialized message (what a server sent may quote them); none by default. */
export type Redact = (text: string) => string;

const asIs: Redact = (text) => text;

const encoder = new TextEncoder();

/** A JSON-RPC message as an HTTP response, its `content-length` set. */
export function rpcReply(
  status: number,
  message: RpcResponse,
  headers: HeadersInit = {},
  redact: Redact = asIs,
): Response {
  const body = encoder.encode(redact(JSON.stringify(message)));
  const out = new Headers(headers);
  out.set("content-type", "application/json");
  out.set("content-length", String(body.byteLength));
  return new Response(body, { status, headers: out });
}

/** How a reply ended: the response sent and the bytes of the body. */
export interface ReplyEnd {
  response: RpcResponse;
  bytes: number;
  streamed: boolean;
}

/** One SSE event carrying a message. */
function event(message: RpcNotification | RpcResponse, redact: Redact): Uint8Array {
  return encoder.encode(`event: message\ndata: ${redact(JSON.stringify(message))}\n\n`);
}

/**
 * Runs `call` (which settles with the response, never throws) and replies; `stop` aborts the call when the client
 * leaves a stream, and `ended` is told once the reply is whole.
 */
export async function reply(
  call: (onNotice: (notice: RpcNotification) => void) => Promise<RpcResponse>,
  options: { headers: Headers; stop(): void; onStream?(): void; ended(end: ReplyEnd): void; redact?: Redact },
): Promise<Response> {
  const redact = options.redact ?? asIs;
  const early: RpcNotification[] = [];
  const noticed = Promise.withResolvers<"notice">();
  let write: ((notice: RpcNotification) => void) | undefined;
  const done = call((notice) => {
    if (write) return write(notice);
    early.push(notice);
    noticed.resolve("notice");
  });
  const first = await Promise.race([done, noticed.promise]);
  if (first !== "notice") {
    const body = encoder.encode(redact(JSON.stringify(first)));
    options.headers.set("content-type", "application/json");
    options.ended({ response: first, bytes: body.byteLength, streamed: false });
    return new Response(body, { headers: options.headers });
  }
  options.onStream?.();
  let bytes = 0;
  let open = true;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (message: RpcNotification | RpcResponse) => {
        if (!open) return;
        const chunk = event(message, redact);
        bytes += chunk.byteLength;
        controller.enqueue(chunk);
      };
      write = send;
      early.forEach(send);
      void done.then((response) => {
        send(response);
        if (open) controller.close();
        open = false;
        options.ended({ response, bytes, streamed: true });
      });
    },
    cancel() {
      open = false;
      options.stop();
    },
  });
  options.headers.set("content-type", "text/event-stream");
  options.headers.set("cache-control", "no-cache");
  return new Response(body, { headers: options.headers });
}
