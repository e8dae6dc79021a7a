/**
 * @module The upstream exchange: send the (translated) request with the upstream's key, bound it by the
 * upstream's timeout and the client's connection, and turn the answer into the client's protocol.
 */
import { GatewayError, kindForStatus, toGatewayError } from "./errors.ts";
import { json } from "./http.ts";
import type { Operation } from "./protocols.ts";
import { buildUpstreamRequest } from "./providers.ts";
import type { Route } from "./routing.ts";
import { errorEvents, translateSse } from "./sse.ts";
import { identity, pickTranslator, type Translation } from "./translate/mod.ts";
import { isObject, type JsonObject, type Protocol } from "./types.ts";

/** What the relay needs from the app. */
export interface RelayDeps {
  fetch: typeof fetch;
  now(): Date;
  log(line: Record<string, unknown>): void;
}

/** One client request to relay. */
export interface RelayRequest {
  routes: readonly Route[];
  client: Protocol;
  operation: Operation;
  body: JsonObject;
  req: Request;
  requestId: string;
}

/** Response headers an upstream sets that clients act on (retry timing). */
const RELAYED_HEADERS = ["retry-after", "retry-after-ms", "x-should-retry"];

const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  "x-accel-buffering": "no",
};

/** Relays to the first route whose key is configured. */
export async function relay(deps: RelayDeps, call: RelayRequest): Promise<Response> {
  const route = call.routes.find((r) => r.apiKey !== undefined);
  if (!route) {
    throw new GatewayError(
      "unavailable",
      `No upstream is available for model "${call.body.model}": its API key is not configured`,
    );
  }
  const translator = pickTranslator(call.client, route.protocol);
  if (!translator) {
    throw new GatewayError("unavailable", `Model "${call.body.model}" cannot be reached in this protocol`);
  }
  const translation = translator({
    model: String(call.body.model),
    upstreamModel: route.upstreamModel,
    requestId: call.requestId,
    now: () => deps.now().getTime(),
    log: (line) => deps.log({ request_id: call.requestId, ...line }),
    defaultMaxTokens: route.upstream.default_max_tokens,
    maxOutputTokens: route.upstream.max_output_tokens,
  });
  const passthrough = translator === identity;
  const { url, init } = buildUpstreamRequest({
    route,
    operation: call.operation,
    body: translation.request(call.body),
    clientHeaders: call.req.headers,
    search: passthrough ? new URL(call.req.url).search : "",
    requestId: call.requestId,
  });

  const controller = new AbortController();
  const abortOnClientGone = () => controller.abort(call.req.signal.reason);
  call.req.signal.addEventListener("abort", abortOnClientGone, { once: true });
  const timer = setTimeout(
    () => controller.abort(new DOMException("Upstream timed out", "TimeoutError")),
    route.upstream.timeout_ms,
  );
  const upstreamFailed = (err: unknown): GatewayError => {
    if (controller.signal.aborted && controller.signal.reason instanceof DOMException) {
      if (controller.signal.reason.name === "TimeoutError") {
        return new GatewayError("timeout", `Upstream "${route.upstream.name}" did not answer in time`);
      }
    }
    // The fetch error text names the upstream URL, so only its class reaches the log.
    deps.log({
      request_id: call.requestId,
      event: "upstream_error",
      upstream: route.upstream.name,
      error: String((err as Error)?.name),
    });
    return new GatewayError("upstream", `Cannot reach upstream "${route.upstream.name}"`);
  };
  try {
    let res: Response;
    try {
      res = await deps.fetch(url, { ...init, signal: controller.signal });
    } catch (err) {
      throw upstreamFailed(err);
    }
    const isStream = (res.headers.get("content-type") ?? "").includes("text/event-stream");
    if (res.ok && isStream && res.body) {
      clearTimeout(timer);
      const onError = (err: GatewayError) =>
        deps.log({
          request_id: call.requestId,
          event: "stream_error",
          upstream: route.upstream.name,
          error: err.message,
        });
      const body = translation.stream
        ? translateSse(res.body, translation.stream(), call.client, onError)
        : relayBytes(res.body, call.client, onError);
      return new Response(body, { status: 200, headers: SSE_HEADERS });
    }
    let text: string;
    try {
      text = await res.text();
    } catch (err) {
      throw upstreamFailed(err);
    }
    return finish(res, text, translation, passthrough, route);
  } finally {
    clearTimeout(timer);
  }
}

function finish(res: Response, text: string, translation: Translation, passthrough: boolean, route: Route): Response {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const headers = new Headers();
  for (const name of RELAYED_HEADERS) {
    const value = res.headers.get(name);
    if (value !== null) headers.set(name, value);
  }
  if (res.status === 401 || res.status === 403) {
    throw new GatewayError("upstream", `Upstream "${route.upstream.name}" rejected the gateway's credentials`);
  }
  if (!isObject(body)) {
    throw new GatewayError(
      "upstream",
      `Upstream "${route.upstream.name}" answered ${res.status} with a body that is not JSON`,
      {
        status: res.status >= 500 ? res.status : 502,
        headers,
      },
    );
  }
  if (!res.ok) {
    // The upstream's own error body is exactly what a client of its protocol expects.
    if (passthrough) return json(body, { status: res.status, headers });
    throw new GatewayError(kindForStatus(res.status), upstreamMessage(body) ?? `Upstream answered ${res.status}`, {
      status: res.status,
      headers,
    });
  }
  if (passthrough) return new Response(text, { status: res.status, headers: { "content-type": "application/json" } });
  return json(translation.response(body));
}

/** The message of an upstream error body in either protocol's envelope. */
function upstreamMessage(body: JsonObject): string | undefined {
  const error = body.error;
  if (isObject(error) && typeof error.message === "string") return error.message;
  return undefined;
}

const BOUNDARIES = ["\n\n", "\r\r", "\r\n\r\n"].map((s) => new TextEncoder().encode(s));

function endsWith(tail: Uint8Array, suffix: Uint8Array): boolean {
  if (tail.length < suffix.length) return false;
  return suffix.every((byte, i) => tail[tail.length - suffix.length + i] === byte);
}

/**
 * Passthrough: the upstream's bytes reach the client unchanged, chunk by chunk. If the upstream fails after
 * the first byte, the client gets its protocol's error event (after closing any half-written event) and
 * no normal ending.
 */
export function relayBytes(
  body: ReadableStream<Uint8Array>,
  protocol: Protocol,
  onError: (err: GatewayError) => void,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  const encoder = new TextEncoder();
  let tail: Uint8Array = new Uint8Array([10, 10]);
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) return controller.close();
        if (value.byteLength >= 4) tail = value.subarray(value.byteLength - 4);
        else tail = Uint8Array.from([...tail, ...value].slice(-4));
        controller.enqueue(value);
      } catch (err) {
        const error = toGatewayError(err).kind === "internal"
          ? new GatewayError("upstream", "Upstream connection failed during the stream")
          : toGatewayError(err);
        onError(error);
        const separator = BOUNDARIES.some((b) => endsWith(tail, b)) ? "" : "\n\n";
        const events = errorEvents(error, protocol).map((e) =>
          `${e.event ? `event: ${e.event}\n` : ""}data: ${e.data}\n\n`
        );
        controller.enqueue(encoder.encode(separator + events.join("")));
        controller.close();
      }
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}
