/** @module Small HTTP helpers: a size-limited JSON body reader, JSON responses, request ids and client timeouts. */
import { clientClosed, GatewayError } from "./errors.ts";
import { isObject, type JsonObject } from "./types.ts";

function tooLarge(maxBytes: number): GatewayError {
  return new GatewayError("request_too_large", `Request body is larger than the limit of ${maxBytes} bytes`);
}

/** A request body as parsed JSON and as the bytes it came in. */
export interface JsonBody {
  value: JsonObject;
  bytes: Uint8Array<ArrayBuffer>;
}

/**
 * Reads a JSON object body, refusing it as soon as it passes `maxBytes` while streaming in, so an oversized
 * body is never buffered whole. The bytes are kept so a body that needs no change can be forwarded as is.
 */
export async function readJsonBody(req: Request, maxBytes: number): Promise<JsonBody> {
  const declared = Number(req.headers.get("content-length") ?? NaN);
  if (declared > maxBytes) {
    await req.body?.cancel();
    throw tooLarge(maxBytes);
  }
  if (declared >= 0 && req.body) {
    // A declared length within the limit bounds the body, so it can be read natively in one go.
    return parseJsonBody(await fromClient(req.bytes()));
  }
  const chunks: Uint8Array<ArrayBuffer>[] = [];
  let size = 0;
  if (req.body) {
    await fromClient((async () => {
      for await (const chunk of req.body!) {
        size += chunk.byteLength;
        if (size > maxBytes) throw tooLarge(maxBytes);
        chunks.push(chunk as Uint8Array<ArrayBuffer>);
      }
    })());
  }
  let bytes: Uint8Array<ArrayBuffer>;
  if (chunks.length === 1) bytes = chunks[0];
  else {
    bytes = new Uint8Array(size);
    let offset = 0;
    for (const chunk of chunks) {
      bytes.set(chunk, offset);
      offset += chunk.byteLength;
    }
  }
  return parseJsonBody(bytes);
}

/** A read of the request body; one that breaks off is the client leaving mid-upload, not the gateway failing. */
async function fromClient<T>(read: Promise<T>): Promise<T> {
  try {
    return await read;
  } catch (err) {
    throw err instanceof GatewayError ? err : clientClosed(err);
  }
}

const decoder = new TextDecoder();

function parseJsonBody(bytes: Uint8Array<ArrayBuffer>): JsonBody {
  let value: unknown;
  try {
    value = JSON.parse(decoder.decode(bytes));
  } catch (err) {
    throw new GatewayError("invalid_request", `Request body is not valid JSON: ${(err as Error).message}`);
  }
  if (!isObject(value)) throw new GatewayError("invalid_request", "Request body must be a JSON object");
  return { value, bytes };
}

/** Reads a JSON object body; see {@linkcode readJsonBody}. */
export async function readJsonObject(req: Request, maxBytes: number): Promise<JsonObject> {
  return (await readJsonBody(req, maxBytes)).value;
}

/** A JSON response with the right content type (without it the SDKs hand back a string). */
export function json(body: unknown, init: ResponseInit = {}): Response {
  const headers = new Headers(init.headers);
  headers.set("content-type", "application/json");
  return new Response(JSON.stringify(body), { ...init, headers });
}

/** Client-sent ids are kept only in this shape, so they are safe in headers, logs, records and upstream calls. */
const SANE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** A client-sent id when it is sane; one shaped like a token secret is refused too, since ids are logged. */
export function saneId(value: string | null): string | undefined {
  return value !== null && SANE_ID.test(value) && !value.startsWith("sk-") ? value : undefined;
}

/** The request's id: the client's `x-request-id` when it is sane, else a new one (it is logged and sent upstream). */
export function requestIdFrom(headers: Headers): string {
  return saneId(headers.get("x-request-id")) ?? newRequestId();
}

/** A new request id in the Anthropic style (`req_` + 24 hex characters). */
export function newRequestId(): string {
  // randomUUID is native and cheaper than formatting random bytes in JS on every request.
  return `req_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`;
}

/**
 * How long the client waits for an answer, when it says so: the official Anthropic and OpenAI SDKs send their timeout
 * in whole seconds as `x-stainless-timeout`. Under a second (sent as 0) or unreadable, nothing is known.
 */
export function clientTimeoutMs(headers: Headers): number | undefined {
  const seconds = Number(headers.get("x-stainless-timeout") ?? NaN);
  return Number.isInteger(seconds) && seconds >= 1 ? seconds * 1000 : undefined;
}
