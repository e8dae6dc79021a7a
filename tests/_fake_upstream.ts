/** @module A fake upstream on 127.0.0.1 port 0 that records requests and answers with whatever a test sets. */

/** A request as the fake upstream saw it. */
export interface SeenRequest {
  method: string;
  path: string;
  search: string;
  headers: Headers;
  body: Record<string, unknown> | undefined;
  /** The body exactly as it arrived. */
  raw: string;
  /** Resolves when the response has been sent in full, or the client (the gateway) went away. */
  closed: Promise<void>;
}

/** Produces the upstream's answer; `seen.closed` tells when the gateway went away. */
export type Responder = (seen: SeenRequest, req: Request) => Response | Promise<Response>;

/** A running fake upstream. */
export interface FakeUpstream extends AsyncDisposable {
  url: string;
  requests: SeenRequest[];
  /** Answers for "METHOD /path" (path without query); falls back to `fallback`. */
  routes: Map<string, Responder>;
  /** Number of requests whose response is not yet complete and whose client is still there. */
  open(): number;
}

/** Starts a fake upstream; its default answer is a 500 naming the unexpected route. */
export function fakeUpstream(): FakeUpstream {
  const requests: SeenRequest[] = [];
  const routes = new Map<string, Responder>();
  let openCount = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req, info) => {
    const url = new URL(req.url);
    // A byte-order mark stays in the text, so a body that starts with one fails to parse, as at the real services.
    const text = new TextDecoder("utf-8", { ignoreBOM: true }).decode(await req.bytes());
    let body: Record<string, unknown> | undefined;
    // A form (an OAuth token request) is read by its route from `raw`.
    const form = req.headers.get("content-type")?.startsWith("application/x-www-form-urlencoded");
    try {
      body = text && !form ? JSON.parse(text) : undefined;
    } catch {
      return Response.json({ type: "error", error: { type: "invalid_request_error", message: "not JSON" } }, {
        status: 400,
      });
    }
    openCount++;
    const { promise: closed, resolve } = Promise.withResolvers<void>();
    let open = true;
    // An exchange is over when its response is fully sent or the gateway goes away, whichever comes first.
    const close = () => {
      if (!open) return;
      open = false;
      openCount--;
      resolve();
    };
    req.signal.addEventListener("abort", close, { once: true });
    info.completed.then(close, close);
    const seen: SeenRequest = {
      method: req.method,
      path: url.pathname,
      search: url.search,
      headers: req.headers,
      body,
      raw: text,
      closed,
    };
    requests.push(seen);
    const responder = routes.get(`${req.method} ${url.pathname}`);
    if (!responder) return Response.json({ error: `no fake route ${req.method} ${url.pathname}` }, { status: 500 });
    return await responder(seen, req);
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    requests,
    routes,
    open: () => openCount,
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  };
}

/** A JSON answer. */
export function jsonReply(body: unknown, status = 200, headers: HeadersInit = {}): Response {
  return Response.json(body, { status, headers });
}

/**
 * An SSE answer whose chunks are written as the test feeds them; `end()` finishes it, `cut()` breaks it. `end()` may be
 * called again, or after the gateway has gone away, so a test can end a held stream on its way out whatever happened.
 */
export function controlledStream(): {
  response: Response;
  send(text: string): void;
  end(): void;
  cut(): void;
} {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) });
  const encoder = new TextEncoder();
  return {
    response: new Response(body, { headers: { "content-type": "text/event-stream" } }),
    send: (text) => controller.enqueue(encoder.encode(text)),
    end: () => {
      try {
        controller.close();
      } catch {
        // It had ended, was cut, or its reader went away.
      }
    },
    cut: () => controller.error(deliberateCut()),
  };
}

/**
 * The reason a fake upstream's stream is cut with. The runtime prints the reason a response body errored with, stack
 * and all; a reason of one line that says what it is keeps a cut a test asked for from reading like a failure.
 */
export function deliberateCut(): Error {
  const err = new Error("connection reset");
  err.stack = "fake upstream: a stream cut on purpose by the test";
  return err;
}

/** An SSE answer with a fixed body. */
export function sseReply(text: string): Response {
  return new Response(text, { headers: { "content-type": "text/event-stream" } });
}

/** Answers the first request with `first` and every later one with `then`. */
export function firstThen(first: Responder, then: Responder): Responder {
  let calls = 0;
  return (seen, req) => ++calls === 1 ? first(seen, req) : then(seen, req);
}

/** Never answers until the gateway gives up on the request. */
export function hang(seen: SeenRequest): Promise<Response> {
  return seen.closed.then(() => new Response(null, { status: 499 }));
}

/** A server that accepts connections and closes them without answering: a reset before any header. */
export function resetServer(): { url: string; accepted(): number } & AsyncDisposable {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let accepted = 0;
  const loop = (async () => {
    for await (const conn of listener) {
      accepted++;
      await conn.read(new Uint8Array(65536)).catch(() => null);
      conn.close();
    }
  })();
  return {
    url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    accepted: () => accepted,
    async [Symbol.asyncDispose]() {
      listener.close();
      await loop.catch(() => {});
    },
  };
}

/** An OpenAI chat completion body. */
export function chatCompletion(text = "Hello"): Record<string, unknown> {
  return {
    id: "chatcmpl-up",
    object: "chat.completion",
    created: 1767225600,
    model: "gpt-test",
    choices: [{ index: 0, finish_reason: "stop", logprobs: null, message: { role: "assistant", content: text } }],
    usage: { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9, prompt_tokens_details: { cached_tokens: 3 } },
  };
}
