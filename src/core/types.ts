/** @module Vocabulary shared by three or more modules: protocols, operations and JSON values. */

/** A wire protocol a client or an upstream speaks. */
export type Protocol = "anthropic" | "openai-chat" | "openai-responses" | "gemini";

/** What the gateway's endpoints speak to their clients: the model protocols, and MCP on /mcp. */
export type ServedProtocol = Protocol | "mcp";

/** What an upstream can speak: every client protocol (OpenAI's Responses API and Azure's speak Responses). */
export type UpstreamProtocol = Protocol;

/**
 * The operation a client asked for. `compact` is POST /v1/responses/compact when the model's upstreams compact on
 * their own (OpenAI's Responses API); its body is checked as a Responses create. `embed` is a call of an upstream's
 * embeddings API, with the body that API takes (see src/protocols/embeddings.ts).
 */
export type Operation = "generate" | "count_tokens" | "compact" | "embed";

/** A JSON object as read off the wire; fields the gateway does not read stay untouched. */
export type JsonObject = { [key: string]: unknown };

/** True when `value` is a plain JSON object (not null, not an array). */
export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
