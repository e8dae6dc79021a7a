/**
 * @module OpenAI's two APIs as keyed upstream APIs, under OpenAI's base URL or an Azure resource's `/openai/v1`: Chat
 * Completions (OpenAI and every compatible service) and Responses (create and compact). Their key goes as a bearer
 * token (Azure's as `api-key`, see mod.ts); no client header crosses.
 */
import type { KeyedApi } from "./keyed.ts";

/** Chat completions and embeddings: such upstreams have no token-counting endpoint. */
export const openaiChat: KeyedApi = {
  name: "openai-chat",
  paths: { generate: "/chat/completions", embed: "/embeddings" },
};

/** Creates, compactions and embeddings; the Responses API has no token-counting endpoint the gateway uses. */
export const openaiResponses: KeyedApi = {
  name: "openai-responses",
  paths: { generate: "/responses", compact: "/responses/compact", embed: "/embeddings" },
};
