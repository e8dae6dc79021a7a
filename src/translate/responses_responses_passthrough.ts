/**
 * @module Responses passthrough (a Responses client, OpenAI's Responses API upstream): the body as the client sent it
 * with only the model mapped, and the provider's answers unchanged. Reasoning items carry a model's reasoning from
 * one turn to the next, but only the account that made one can read it: a turn that lands on another deployment
 * after a failover is refused over them, and is sent once more without them (see docs/protocols.md, "Reasoning
 * across deployments").
 */
import { isObject, type JsonObject } from "../core/types.ts";
import { identity, logDrop, type Refusal, type TranslateContext, type Translation } from "./identity.ts";

/** The id of the item a refusal names: "The encrypted content for item rs_1 ..." or "Item with id 'rs_1' not found". */
const NAMED_ITEM = /(?:for item |Item with id ')([A-Za-z0-9_-]{1,200})/;

/**
 * The request without its reasoning items, when `refusal` is the provider saying it cannot read one of them (its
 * `encrypted_content` is another account's, or it names an item stored elsewhere); else undefined.
 */
export function withoutForeignReasoning(body: JsonObject, refusal: Refusal): JsonObject | undefined {
  if (refusal.status !== 400 && refusal.status !== 404) return undefined;
  if (!Array.isArray(body.input)) return undefined;
  const reasoning = body.input.filter((item) => isObject(item) && item.type === "reasoning");
  if (reasoning.length === 0) return undefined;
  const named = NAMED_ITEM.exec(refusal.message)?.[1];
  const about = named !== undefined
    ? reasoning.some((item) => (item as JsonObject).id === named)
    : refusal.code === "invalid_encrypted_content";
  if (!about) return undefined;
  return { ...body, input: body.input.filter((item) => !reasoning.includes(item)) };
}

/** The last request a translation sent, and its one second try without reasoning the deployment cannot read. */
export interface ReasoningRecovery {
  /** Notes `body` as the request sent, and returns it. */
  sent(body: JsonObject): JsonObject;
  /** The request once more without its reasoning items, when `refusal` is about them; only once per request. */
  recover(refusal: Refusal): JsonObject | undefined;
}

/** A recovery for one request's translation. */
export function reasoningRecovery(ctx: TranslateContext): ReasoningRecovery {
  let last: JsonObject | undefined;
  return {
    sent(body) {
      last = body;
      return body;
    },
    recover(refusal) {
      const again = last && withoutForeignReasoning(last, refusal);
      if (again) logDrop(ctx, { field: "input[]", type: "reasoning", reason: "the deployment cannot read it" });
      last = undefined;
      return again;
    },
  };
}

/** The Responses-to-Responses translation: identity, and a second try without reasoning the deployment cannot read. */
export function responsesPassthrough(ctx: TranslateContext): Translation {
  const base = identity(ctx);
  const recovery = reasoningRecovery(ctx);
  return {
    request: (body) => recovery.sent(base.request(body)),
    response: base.response,
    recover: recovery.recover,
  };
}
