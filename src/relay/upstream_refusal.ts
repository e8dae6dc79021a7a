/**
 * @module Reading an upstream's error body: its message and code in any protocol's envelope, and the one refusal
 * that is the config's mistake rather than the request's or the deployment's (a Responses-only model on a chat
 * upstream).
 */
import { isObject, type JsonObject } from "../core/types.ts";
import type { ModelRoute } from "./routing.ts";

/**
 * The message of an upstream error body: an `{"error": {"message": ...}}` envelope (every protocol's),
 * `{"error": "..."}` or `{"message": "..."}`.
 */
export function upstreamMessage(body: JsonObject): string | undefined {
  const error = body.error;
  if (isObject(error) && typeof error.message === "string") return error.message;
  if (typeof error === "string") return error;
  return typeof body.message === "string" ? body.message : undefined;
}

/** An OpenAI-style error code (such as `context_length_exceeded`), which clients act on. */
export function upstreamCode(body: JsonObject): string | undefined {
  const error = body.error;
  return isObject(error) && typeof error.code === "string" ? error.code : undefined;
}

/**
 * A chat upstream's refusal of a model that its provider serves only through the Responses API (OpenAI's 404, Azure's
 * 400 OperationNotSupported; see docs/protocols.md, "Responses-only models"): the advice that names the fix, or
 * undefined for any other answer.
 */
export function responsesOnlyAdvice(route: ModelRoute, status: number, body: JsonObject): string | undefined {
  if (route.protocol !== "openai-chat") return undefined;
  const message = upstreamMessage(body) ?? "";
  const refused = (status === 404 && /only supported in v1\/responses|not a chat model/i.test(message)) ||
    (status === 400 && upstreamCode(body) === "OperationNotSupported");
  if (!refused) return undefined;
  const fix = route.upstream.protocol === "openai" ? "openai-responses" : "azure-openai with api: responses";
  return `upstream "${route.upstream.name}" reaches it through Chat Completions; give that upstream protocol: ${fix}`;
}
