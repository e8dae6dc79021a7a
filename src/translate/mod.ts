/**
 * @module The registry of translators keyed by protocol pair ("client->upstream"), and its one composition rule: a
 * pair without a translator of its own goes through Anthropic Messages, the client's translation onto Messages in
 * front of Messages' translation onto the upstream. Same-protocol pairs pass through (identity.ts), chat-to-chat
 * asking streams for usage (chat_chat_passthrough.ts), Messages-to-Anthropic dropping thinking without a signature
 * (messages_messages_passthrough.ts), Responses-to-Responses trying once more without another account's reasoning
 * (responses_responses_passthrough.ts).
 */
import type { Protocol, UpstreamProtocol } from "../core/types.ts";
import { chatPassthrough } from "./chat_chat_passthrough.ts";
import { chatViaMessages } from "./chat_messages_response.ts";
import { geminiViaMessages } from "./gemini_messages_response.ts";
import { identity, type Translation, type Translator } from "./identity.ts";
import { messagesViaChat } from "./messages_chat_response.ts";
import { messagesViaGemini } from "./messages_gemini_response.ts";
import { anthropicPassthrough } from "./messages_messages_passthrough.ts";
import { messagesViaResponses } from "./messages_responses_response.ts";
import { responsesViaChat } from "./responses_chat_response.ts";
import { responsesViaMessages } from "./responses_messages_response.ts";
import { responsesPassthrough } from "./responses_responses_passthrough.ts";

/** A protocol pair as the registry keys it. */
export type Pair = `${Protocol}->${UpstreamProtocol}`;

/** The pairs with a translator of their own: every client onto Messages, Messages onto every upstream, and a few more. */
const OWN: Partial<Record<Pair, Translator>> = {
  "anthropic->anthropic": anthropicPassthrough,
  "openai-chat->openai-chat": chatPassthrough,
  "openai-responses->openai-responses": responsesPassthrough,
  // The transport takes the model and the streaming flag out of the body and into the path.
  "gemini->gemini": identity,
  "openai-chat->anthropic": chatViaMessages,
  "openai-responses->anthropic": responsesViaMessages,
  "gemini->anthropic": geminiViaMessages,
  "anthropic->openai-chat": messagesViaChat,
  "anthropic->gemini": messagesViaGemini,
  "anthropic->openai-responses": messagesViaResponses,
  "openai-responses->openai-chat": responsesViaChat,
};

/** The translator for a protocol pair: its own, else the two through Messages; undefined when neither half exists. */
export function pickTranslator(client: Protocol, upstream: UpstreamProtocol): Translator | undefined {
  const own = OWN[`${client}->${upstream}`];
  if (own) return own;
  const outer = OWN[`${client}->anthropic`];
  const inner = OWN[`anthropic->${upstream}`];
  if (!outer || !inner) return undefined;
  return (ctx) => throughMessages(outer({ ...ctx, towards: upstream }), inner(ctx));
}

/** Whether a pair has a translator of its own, rather than one the registry composes through Messages. */
export function hasOwnTranslator(pair: Pair): boolean {
  return OWN[pair] !== undefined;
}

/** `outer` (client <-> Messages) in front of `inner` (Messages <-> upstream): requests go in, answers come back out. */
function throughMessages(outer: Translation, inner: Translation): Translation {
  return {
    request: (body) => inner.request(outer.request(body)),
    response: (body) => outer.response(inner.response(body)),
    // Both halves cross between two protocols (a same-protocol pair has a translator of its own), so both have streams.
    stream() {
      const first = inner.stream!();
      const second = outer.stream!();
      return {
        next: (message) => first.next(message).flatMap((event) => second.next(event)),
        end: () => [...first.end().flatMap((event) => second.next(event)), ...second.end()],
        fail: second.fail,
      };
    },
    // A second try is the upstream's request without what it refused, so only the inner translation can make it.
    recover: inner.recover,
  };
}
export type { Refusal, TranslateContext, Translation, Translator } from "./identity.ts";
