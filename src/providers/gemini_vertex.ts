/**
 * @module Gemini on Google Vertex AI: the Gemini request at the project's and region's publisher path
 * (`.../publishers/google/models/{model}:generateContent` and the rest; `:predict` for an embedding model), with the
 * Vertex service account's token.
 */
import { geminiRequest } from "./gemini.ts";
import type { Transport } from "./transport.ts";
import { type VertexDeps, vertexPost, type VertexSettings } from "./vertex.ts";

/** A Vertex transport for Google's own models. */
export function geminiVertexTransport(settings: Omit<VertexSettings, "betas">, deps: VertexDeps): Transport {
  const publisher = `${settings.baseUrl}/v1/projects/${encodeURIComponent(settings.project)}/locations/` +
    `${encodeURIComponent(settings.region)}/publishers/google`;
  return {
    async send(call) {
      // An embedding model is asked through its predict method, the body already its own (translate/embeddings_request.ts).
      const { url, body } = call.operation === "embed"
        ? { url: `${publisher}/models/${encodeURIComponent(call.upstreamModel)}:predict`, body: call.body }
        : geminiRequest(publisher, call, false);
      return await vertexPost(settings, deps, { call, url, body, headers: { "content-type": "application/json" } });
    },
    secrets: () => [settings.privateKey, ...settings.tokens.current()],
  };
}
