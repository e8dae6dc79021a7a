/**
 * @module Responses passthrough (a Responses client, OpenAI's Responses API upstream): the body as the client sent it
 * with only the model mapped, and the provider's answers unchanged. Reasoning items carry a model's reasoning from
 * one turn to the next, but only the account that made one can read it: a turn that lands on another deployment
 * after a failover is refused over them, and is sent once more without them (responses_reasoning.ts).
 */
import { identity, type TranslateContext, type Translation } from "./identity.ts";
import { reasoningRecovery } from "./responses_reasoning.ts";

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
