/**
 * @module The registry of translators keyed by protocol pair ("client->upstream"). Same-protocol pairs pass
 * through (identity.ts); chat-to-chat also asks streams for usage so tokens are counted (chat_chat_passthrough.ts), and
 * Messages-to-Anthropic drops thinking without a signature (messages_messages_passthrough.ts). Pairs without a translator of
 * their own go through Messages (compose.ts).
 */
import type { Protocol, UpstreamProtocol } from "../core/types.ts";
import { anthropicPassthrough } from "./messages_messages_passthrough.ts";
import { chatViaMessages } from "./chat_messages_response.ts";
import { chatPassthrough } from "./chat_chat_passthrough.ts";
import { geminiViaChat, geminiViaMessages } from "./gemini_messages_response.ts";
import { identity, type Translator } from "./identity.ts";
import { chatViaGemini, messagesViaGemini, responsesViaGemini } from "./messages_gemini_response.ts";
import { messagesViaChat } from "./messages_chat_response.ts";
import { chatViaResponses, geminiViaResponses, messagesViaResponses } from "./messages_responses_response.ts";
import { responsesPassthrough } from "./responses_responses_passthrough.ts";
import { responsesViaChat } from "./responses_chat_response.ts";
import { responsesViaMessages } from "./responses_messages_response.ts";

/** Registered translators by "client->upstream" pair; upstreams speak Messages, chat completions, Gemini or Responses. */
export const TRANSLATORS: Partial<Record<`${Protocol}->${Protocol}`, Translator>> = {
  "anthropic->openai-chat": messagesViaChat,
  "openai-chat->anthropic": chatViaMessages,
  "openai-responses->openai-chat": responsesViaChat,
  "openai-responses->anthropic": responsesViaMessages,
  "gemini->anthropic": geminiViaMessages,
  "gemini->openai-chat": geminiViaChat,
  "anthropic->gemini": messagesViaGemini,
  "openai-chat->gemini": chatViaGemini,
  "openai-responses->gemini": responsesViaGemini,
  "anthropic->openai-responses": messagesViaResponses,
  "openai-chat->openai-responses": chatViaResponses,
  "gemini->openai-responses": geminiViaResponses,
};

/** The translator for a protocol pair, or undefined when the pair is not supported. */
export function pickTranslator(client: Protocol, upstream: UpstreamProtocol): Translator | undefined {
  if (client === "openai-chat" && upstream === "openai-chat") return chatPassthrough;
  if (client === "anthropic" && upstream === "anthropic") return anthropicPassthrough;
  // The transport takes the model and the streaming flag out of the body and into the path.
  if (client === "gemini" && upstream === "gemini") return identity;
  if (client === "openai-responses" && upstream === "openai-responses") return responsesPassthrough;
  return TRANSLATORS[`${client}->${upstream}`];
}
export type { Refusal, TranslateContext, Translation, Translator } from "./identity.ts";
