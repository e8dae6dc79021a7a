/**
 * @module Reading a client's JSON body: refused as soon as it passes the size limit, read into one buffer of its
 * declared size (never chunks plus a copy), its share of the in-flight budget taken before the bytes arrive, a
 * leading byte-order mark dropped, a 400 for JSON nested past the depth limit, and a 408 (with the connection closed)
 * when the client stops sending.
 */
import type { BodyHold } from "./body_budget.ts";
import { joined } from "./bytes.ts";
import { clientClosed, GatewayError } from "./errors.ts";
import { checkJsonDepth } from "./json_depth.ts";
import { isObject, type JsonObject } from "./types.ts";
import type { Watchdog, Watched } from "./watchdog.ts";

/** How a body may be read. */
export interface BodyReadOptions {
  /** The largest body accepted (max_body_bytes). */
  maxBytes: number;
  /** The longest wait for the next bytes of the body (body_idle_timeout_ms). */
  idleMs: number;
  /** The request's share of the in-flight budget; operator bodies, which are small, take none. */
  hold?: BodyHold;
  /** Checks the idle limit on the gateway's shared timer; without it each read arms a timer of its own. */
  watchdog?: Watchdog;
}

/** A request body as parsed JSON and as the bytes it came in. */
export interface JsonBody {
  value: JsonObject;
  /** The body as sent, without a byte-order mark, so a body that needs no change can be forwarded as is. */
  bytes: Uint8Array<ArrayBuffer>;
}

function tooLarge(maxBytes: number): GatewayError {
  return new GatewayError("request_too_large", `Request body is larger than the limit of ${maxBytes} bytes`);
}

/** The declared `content-length`, undefined when there is none. */
function declaredLength(headers: Headers): number | undefined {
  const text = headers.get("content-length");
  if (text === null) return undefined;
  if (!/^\d+$/.test(text)) {
    throw new GatewayError("invalid_request", "content-length must be a whole number of bytes", {
      param: "content-length",
    });
  }
  return Number(text);
}

/** `read` settled, or a 408 when it has not within `idleMs` (checked by `watchdog` when there is one). */
function within<T>(read: Promise<T>, idleMs: number, watchdog?: Watchdog): Promise<T> {
  const { promise: stalled, reject } = Promise.withResolvers<never>();
  const stall = () =>
    reject(
      new GatewayError("request_timeout", `The request body stopped arriving: nothing came for ${idleMs} ms`, {
        // The rest of the body may still come; the connection cannot carry another request after it.
        headers: { connection: "close" },
      }),
    );
  if (watchdog) {
    const until = watchdog.now() + idleMs;
    const limit: Watched = { check: (now) => void (now >= until && stall()) };
    watchdog.watch(limit);
    return Promise.race([read, stalled]).finally(() => watchdog.unwatch(limit));
  }
  const timer = setTimeout(stall, idleMs);
  return Promise.race([read, stalled]).finally(() => clearTimeout(timer));
}

/** Bodies with a declared length up to this are read in one native call, the common and cheapest case. */
const READ_WHOLE_BYTES = 64 * 1024;

/** A read of the request body; one that breaks off is the client leaving mid-upload, not the gateway failing. */
async function fromClient<T>(read: Promise<T>): Promise<T> {
  try {
    return await read;
  } catch (err) {
    throw err instanceof GatewayError ? err : clientClosed(err);
  }
}

/** Reads a body's bytes under `options`; a read that breaks off is the client's cancellation (499). */
export function readBodyBytes(req: Request, options: BodyReadOptions): Promise<Uint8Array<ArrayBuffer>> {
  return fromClient(readBody(req, options));
}

async function readBody(req: Request, options: BodyReadOptions): Promise<Uint8Array<ArrayBuffer>> {
  const declared = declaredLength(req.headers);
  if (declared !== undefined && declared > options.maxBytes) throw tooLarge(options.maxBytes);
  if (declared !== undefined) await options.hold?.grow(declared);
  // `req.body` is not touched on this path: asking for it makes the request build a stream, and `bytes()` on a
  // request whose stream was never made takes the whole body in one native call.
  if (declared !== undefined && declared <= READ_WHOLE_BYTES) {
    const whole = req.bytes();
    // After a 408 the read is left to end with the connection; its outcome no longer matters.
    whole.catch(() => {});
    return await within(whole, options.idleMs, options.watchdog);
  }
  if (!req.body) return new Uint8Array(0);
  const reader = req.body.getReader();
  // With a declared length the body lands in one buffer of that size, read chunk by chunk as it arrives.
  const buffer = declared !== undefined ? new Uint8Array(declared) : undefined;
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await within(reader.read(), options.idleMs, options.watchdog);
      if (done) break;
      if (size + value.byteLength > (declared ?? options.maxBytes)) {
        throw declared === undefined ? tooLarge(options.maxBytes) : new GatewayError(
          "invalid_request",
          "Request body is longer than its content-length",
          { param: "content-length" },
        );
      }
      if (buffer) buffer.set(value, size);
      else {
        await options.hold?.grow(value.byteLength);
        chunks.push(value);
      }
      size += value.byteLength;
    }
  } catch (err) {
    reader.cancel().catch(() => {});
    throw err;
  }
  if (buffer) return size === buffer.byteLength ? buffer : buffer.subarray(0, size);
  return joined(chunks, size);
}

const decoder = new TextDecoder();

/** Reads a JSON object body; see {@linkcode readBodyBytes}. */
export async function readJsonBody(req: Request, options: BodyReadOptions): Promise<JsonBody> {
  let bytes = await readBodyBytes(req, options);
  // A UTF-8 byte-order mark is not JSON: upstreams refuse a body that starts with one, so it goes no further.
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3);
  const text = decoder.decode(bytes);
  // Before the parse: a body nested past the limit is refused before anything walks it or goes upstream.
  checkJsonDepth(text, "Request body");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new GatewayError("invalid_request", `Request body is not valid JSON: ${(err as Error).message}`);
  }
  if (!isObject(value)) throw new GatewayError("invalid_request", "Request body must be a JSON object");
  return { value, bytes };
}

/** Reads a JSON object body; see {@linkcode readBodyBytes}. */
export async function readJsonObject(req: Request, options: BodyReadOptions): Promise<JsonObject> {
  return (await readJsonBody(req, options)).value;
}
