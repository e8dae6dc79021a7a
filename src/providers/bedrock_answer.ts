/**
 * @module Bedrock's answers as the Anthropic API gives them: its binary event stream becomes Anthropic SSE (one
 * event per frame, an exception frame as an `error` event), and its errors, named in `x-amzn-ErrorType`, become
 * Anthropic error bodies whose status says whose fault they are.
 */
import { encodeSse } from "../core/sse.ts";
import { isObject } from "../core/types.ts";
import { eventStreamDecoder, type EventStreamMessage } from "./aws_eventstream.ts";
import { anthropicErrorAnswer, cloudErrorByStatus, jsonOf } from "./transport.ts";

/**
 * Bedrock error names (lower-cased; streams spell them in lowerCamel) to the status and Anthropic error type the
 * client gets; names it does not hold are read by their status (see cloudErrorByStatus).
 */
const ERRORS: Record<string, readonly [number, string]> = {
  throttlingexception: [429, "rate_limit_error"],
  servicequotaexceededexception: [429, "rate_limit_error"],
  serviceunavailableexception: [529, "overloaded_error"],
  modelnotreadyexception: [529, "overloaded_error"],
  validationexception: [400, "invalid_request_error"],
  accessdeniedexception: [403, "permission_error"],
  unrecognizedclientexception: [403, "permission_error"],
  invalidsignatureexception: [403, "permission_error"],
  incompletesignatureexception: [403, "permission_error"],
  missingauthenticationtokenexception: [403, "permission_error"],
  expiredtokenexception: [403, "permission_error"],
  resourcenotfoundexception: [502, "api_error"],
  modeltimeoutexception: [504, "timeout_error"],
  modelerrorexception: [502, "api_error"],
  modelstreamerrorexception: [502, "api_error"],
  internalserverexception: [500, "api_error"],
};

/** The status and Anthropic type for a Bedrock error name ("ThrottlingException:http://..." is accepted). */
function classify(name: string | undefined, status: number): readonly [number, string] {
  const key = (name ?? "").split(":")[0].split("#").at(-1)!.toLowerCase();
  return ERRORS[key] ?? cloudErrorByStatus(status);
}

const text = new TextDecoder();
const bytes = new TextEncoder();

/** One frame as SSE: a `chunk` event carries an Anthropic event, base64 in `bytes`; exceptions become `error`. */
function frameToSse(message: EventStreamMessage): string {
  const kind = message.headers[":message-type"];
  if (kind === "exception" || kind === "error") {
    const name = String(message.headers[":exception-type"] ?? message.headers[":error-code"] ?? "");
    let detail: unknown;
    try {
      detail = JSON.parse(text.decode(message.payload));
    } catch {
      detail = undefined;
    }
    const said = isObject(detail) && typeof detail.message === "string" ? detail.message : undefined;
    const errorMessage = said ?? String(message.headers[":error-message"] ?? "Upstream failed during the stream");
    const [, type] = classify(name, 500);
    return encodeSse({
      event: "error",
      data: JSON.stringify({ type: "error", error: { type, message: errorMessage } }),
    });
  }
  if (kind !== "event" || message.headers[":event-type"] !== "chunk") return "";
  const payload = JSON.parse(text.decode(message.payload));
  if (!isObject(payload) || typeof payload.bytes !== "string") return "";
  let data = text.decode(Uint8Array.fromBase64(payload.bytes));
  const event = JSON.parse(data);
  if (!isObject(event) || typeof event.type !== "string") return "";
  // Bedrock adds its own metrics to the last event; an Anthropic client expects the event as the API sends it.
  if ("amazon-bedrock-invocationMetrics" in event || data.includes("\n")) {
    delete event["amazon-bedrock-invocationMetrics"];
    data = JSON.stringify(event);
  }
  return encodeSse({ event: event.type, data });
}

/** Bedrock's event stream in, Anthropic SSE bytes out; a corrupt or cut frame errors the stream. */
function eventStreamToSse(): TransformStream<Uint8Array, Uint8Array> {
  const decoder = eventStreamDecoder();
  return new TransformStream({
    transform(chunk, controller) {
      let sse = "";
      for (const message of decoder.push(chunk)) sse += frameToSse(message);
      if (sse !== "") controller.enqueue(bytes.encode(sse));
    },
    flush() {
      decoder.end();
    },
  });
}

/** A Bedrock answer as the Anthropic API would give it. */
export async function bedrockAnswer(res: Response, stream: boolean): Promise<Response> {
  const type = res.headers.get("content-type") ?? "";
  if (res.ok && stream && res.body && type.includes("application/vnd.amazon.eventstream")) {
    return new Response(res.body.pipeThrough(eventStreamToSse()), {
      status: 200,
      headers: { "content-type": "text/event-stream; charset=utf-8" },
    });
  }
  if (res.ok) return res;
  const body = await jsonOf(res);
  const fields = isObject(body) ? body : {};
  const name = res.headers.get("x-amzn-errortype") ?? (typeof fields.__type === "string" ? fields.__type : undefined);
  const [status, errorType] = classify(name, res.status);
  const said = typeof fields.message === "string" ? fields.message : fields.Message;
  const message = typeof said === "string" && said !== "" ? said : `Upstream answered ${res.status}`;
  const retryAfter = res.headers.get("retry-after");
  return anthropicErrorAnswer(
    status,
    errorType,
    message,
    retryAfter === null ? undefined : { "retry-after": retryAfter },
  );
}
