/**
 * @module Transport to an upstream that speaks OpenAI's Responses API (OpenAI itself): its paths, create and compact,
 * and its key as a bearer token. No client header crosses.
 */

/** Creates, compactions and embeddings; the Responses API has no token-counting endpoint the gateway uses. */
export const openaiResponses = {
  paths: { generate: "/responses", compact: "/responses/compact", embed: "/embeddings" },
  headers(headers: [string, string][], apiKey: string): void {
    headers.push(["authorization", `Bearer ${apiKey}`]);
  },
};
