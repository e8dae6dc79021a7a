/**
 * @module Transport to an upstream that speaks OpenAI Chat Completions (OpenAI and every compatible service): its
 * path and its key as a bearer token. No client header crosses.
 */

/** Chat completions and embeddings: such upstreams have no token-counting endpoint. */
export const openai = {
  paths: { generate: "/chat/completions", embed: "/embeddings" },
  headers(headers: [string, string][], apiKey: string): void {
    headers.push(["authorization", `Bearer ${apiKey}`]);
  },
};
